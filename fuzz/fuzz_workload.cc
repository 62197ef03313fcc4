// Fuzz target: the workload reader (envs/workload_io.h ParseWorkload, which
// ReadWorkloadFile and the protocol's Task use) and what `tensortier
// inspect` does with what it accepts. Bad bytes must be refused with
// std::runtime_error; an accepted workload must be usable.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "envs/describe.h"
#include "envs/workload_io.h"
#include "fuzz/parsed_or_refused.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensortier;
  const std::optional<Workload> w = ParsedOrRefused(data, size, ParseWorkload);
  if (!w) return 0;
  (void)DescribeWorkload(*w);
  (void)w->peak_live_bytes();
  (void)w->Signature();
  const std::string again = SerializeWorkload(*w);
  (void)ParseWorkload(again);  // what we accepted must round-trip (throws = a finding)
  return 0;
}
