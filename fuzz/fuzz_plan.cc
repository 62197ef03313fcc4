// Fuzz target: the plan reader (envs/workload_io.h ParsePlan, which
// ReadPlanFile and episode reports use) and `tensortier inspect` on a plan.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "envs/describe.h"
#include "envs/workload_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensortier;
  PlacementPlan plan;
  try {
    plan = ParsePlan(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::runtime_error&) {
    return 0;
  }
  (void)DescribePlan(plan);
  (void)ParsePlan(SerializePlan(plan));  // what we accepted must round-trip (throws = a finding)
  return 0;
}
