// Tests that run a model's real iterations need its profiled graph first;
// the runner must be gone before the next one (or an agent's tensors) is
// made, so the profile is taken in a scope of its own.
#pragma once

#include <string>

#include "executor/executor.h"
#include "tests/common/derived_times.h"

namespace tensortier::testing {

// `model` profiled once, single-threaded, on the emulated slow tier, with
// its times derived from sizes: measured ones would give the ILP another
// plan under every load.
inline Workload ProfiledWithTimesFromSizes(RunnerOptions r) {
  r.profile_timing_iterations = 1;
  r.threads = 1;
  RealWorkloadRunner runner(r);
  return WithTimesFromSizes(runner.Profile().workload);
}

inline Workload ProfiledWithTimesFromSizes(const std::string& model, int64_t batch_size, int64_t image_size) {
  return ProfiledWithTimesFromSizes(ZooRunnerOptions(model, batch_size, image_size, "emulated:optane-dcpmm"));
}

}  // namespace tensortier::testing
