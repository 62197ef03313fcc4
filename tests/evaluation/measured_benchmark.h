// The bench options of the tests that run plans on real iterations: the
// emulated slow tier, one iteration per plan and round, a short ILP.
#pragma once

#include <string>
#include <vector>

#include "evaluation/benchmark.h"

namespace tensortier::testing {

inline BenchmarkOptions MeasuredBenchmark(std::vector<std::string> policies, double dram_fraction, int rounds) {
  BenchmarkOptions o;
  o.policies = std::move(policies);
  o.dram_fractions = {dram_fraction};
  o.slow_tier = "emulated:optane-dcpmm";
  o.rounds = rounds;
  o.repeats = 1;
  o.solver_time_limit_seconds = 10;
  return o;
}

}  // namespace tensortier::testing
