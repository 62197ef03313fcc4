// Graphs and brute-force optima shared by the policy tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "envs/cost_model.h"
#include "envs/synthetic.h"
#include "envs/workload.h"
#include "policies/policy.h"

namespace tensortier::testing {

inline Workload Synthetic(SyntheticShape shape, int layers, uint64_t seed, uint64_t base_bytes = 1 << 20) {
  SyntheticOptions o;
  o.shape = shape;
  o.layers = layers;
  o.seed = seed;
  o.base_bytes = base_bytes;
  return GenerateSynthetic(o);
}

inline uint64_t Fraction(const Workload& w, double f) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(w.peak_live_bytes()) * f));
}

// A context whose DRAM limit is fraction `f` of the workload's peak.
inline PolicyContext LimitAt(const Workload& w, double f) {
  PolicyContext ctx;
  ctx.dram_limit_bytes = Fraction(w, f);
  return ctx;
}

// The device of hand-made graphs: copies at 10 GB/s both ways. Finalised.
inline Workload WithTenGbCopies(Workload w) {
  w.device.slow_to_dram_bytes_per_second = 1e10;
  w.device.dram_to_slow_bytes_per_second = 1e10;
  w.Finalize();
  return w;
}

// Every valid migration boundary of tensor t: after kernel k for k in
// [alloc, free - 1].
inline int Boundaries(const Workload& w, uint32_t t) {
  return static_cast<int>(w.tensors[t].free_kernel - w.tensors[t].alloc_kernel);
}

// The best cost-model time over every static placement (no migrations)
// that fits `limit`; infinity if none does.
inline double BestStaticNs(const Workload& w, uint64_t limit) {
  const size_t T = w.num_tensors();
  double best = std::numeric_limits<double>::infinity();
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, limit);
  for (uint64_t bits = 0; bits < (uint64_t{1} << T); ++bits) {
    for (size_t t = 0; t < T; ++t) plan.initial_tiers[t] = (bits >> t) & 1 ? Tier::kDram : Tier::kSlow;
    CostReport r = EvaluatePlan(w, plan);
    if (!r.oom) best = std::min(best, r.total_ns);
  }
  return best;
}

// The best cost-model time over every plan at all: each tensor's initial
// tier and, at every boundary of its lifetime, whether it switches tier.
inline double BestPlanNs(const Workload& w, uint64_t limit, MigrationMode mode) {
  const size_t T = w.num_tensors();
  std::vector<int> offset(T + 1, 0);
  for (uint32_t t = 0; t < T; ++t) offset[t + 1] = offset[t] + 1 + Boundaries(w, t);
  const int bits_total = offset[T];
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t bits = 0; bits < (uint64_t{1} << bits_total); ++bits) {
    PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, limit);
    plan.mode = mode;
    for (uint32_t t = 0; t < T; ++t) {
      Tier tier = (bits >> offset[t]) & 1 ? Tier::kDram : Tier::kSlow;
      plan.initial_tiers[t] = tier;
      for (int b = 0; b < Boundaries(w, t); ++b)
        if ((bits >> (offset[t] + 1 + b)) & 1) {
          tier = tier == Tier::kDram ? Tier::kSlow : Tier::kDram;
          plan.migrations.push_back({static_cast<int32_t>(w.tensors[t].alloc_kernel) + b, t, tier});
        }
    }
    plan.Normalize();
    CostReport r = EvaluatePlan(w, plan);
    if (!r.oom) best = std::min(best, r.total_ns);
  }
  return best;
}

inline ::testing::AssertionResult NearlyEqual(double a, double b, double rel = 1e-7) {
  if (std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)})) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b;
}

}  // namespace tensortier::testing
