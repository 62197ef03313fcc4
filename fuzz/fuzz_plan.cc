// Fuzz target: the plan reader (envs/workload_io.h ParsePlan, which
// ReadPlanFile and episode reports use) and `tensortier inspect` on a plan.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "envs/describe.h"
#include "envs/workload_io.h"
#include "fuzz/parsed_or_refused.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensortier;
  const std::optional<PlacementPlan> plan = ParsedOrRefused(data, size, ParsePlan);
  if (!plan) return 0;
  (void)DescribePlan(*plan);
  (void)ParsePlan(SerializePlan(*plan));  // what we accepted must round-trip (throws = a finding)
  return 0;
}
