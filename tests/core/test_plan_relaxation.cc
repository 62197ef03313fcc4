// The DRAM limit priced per kernel (envs/plan_relaxation.h): its bound
// against every sync plan of small workloads, enumerated; a trade no single
// tensor's move reaches; and the best responses the polish starts with.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/async_bound.h"
#include "envs/cost_model.h"
#include "envs/plan_polish.h"
#include "envs/plan_relaxation.h"

namespace tensortier {
namespace {

// The cheapest plan of `w` under `limit` in `mode`, over every tier of every
// tensor at every kernel of its life (2^(sum of lifetimes) plans; in async
// mode the tier a copy issued before the kernel lands in after it).
double BruteForceOptimumNs(const Workload& w, uint64_t limit, MigrationMode mode = MigrationMode::kSync) {
  std::vector<std::pair<uint32_t, uint32_t>> slots;  // (tensor, kernel)
  for (uint32_t t = 0; t < w.num_tensors(); ++t)
    for (uint32_t k = w.tensors[t].alloc_kernel; k <= w.tensors[t].free_kernel; ++k) slots.push_back({t, k});
  EXPECT_LE(slots.size(), 20u);
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t bits = 0; bits < (uint64_t{1} << slots.size()); ++bits) {
    PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, limit);
    plan.mode = mode;
    std::vector<Tier> before(w.num_tensors(), Tier::kSlow);
    for (size_t i = 0; i < slots.size(); ++i) {
      const auto [t, k] = slots[i];
      const Tier tier = (bits >> i) & 1 ? Tier::kDram : Tier::kSlow;
      if (k == w.tensors[t].alloc_kernel) plan.initial_tiers[t] = tier;
      else if (tier != before[t]) plan.migrations.push_back({static_cast<int32_t>(k) - 1, t, tier});
      before[t] = tier;
    }
    plan.Normalize();
    const CostReport c = EvaluatePlan(w, plan);
    if (!c.oom) best = std::min(best, c.total_ns);
  }
  return best;
}

// Six kernels of 100 ns. A1 and A2 (100 B each) are read at k0 and k5, 10 ns
// more each from the slow tier; B (200 B) is written at k1 and read at k2-k4,
// 30 ns more each. A copy of 100 B takes 50 ns. Under a 200 B limit the plan
// with A1 and A2 in DRAM and B in the slow tier (120 ns over all-DRAM) is one
// no single tensor's move improves (B has no room; an A leaving DRAM gains
// nothing alone); A1 and A2 in the slow tier and B in DRAM costs 40.
Workload JointTrade() {
  Workload w;
  w.name = "joint-trade";
  for (uint32_t k = 0; k < 6; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors = {
      {"A1", 100, TensorKind::kActivation, 0, 5, false},
      {"A2", 100, TensorKind::kActivation, 0, 5, false},
      {"B", 200, TensorKind::kActivation, 1, 4, false},
  };
  w.accesses = {{0, 0, 1, 0, 10}, {0, 1, 1, 0, 10}, {1, 2, 0, 1, 30}, {2, 2, 1, 0, 30},
                {3, 2, 1, 0, 30}, {4, 2, 1, 0, 30}, {5, 0, 1, 0, 10}, {5, 1, 1, 0, 10}};
  w.device.dram_to_slow_bytes_per_second = 2e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}

TEST(PlanRelaxation, MakesTheTradeNoSingleTensorsMoveReaches) {
  const Workload w = JointTrade();
  PlacementPlan stuck = PlacementPlan::Uniform(w, Tier::kDram, 200);
  stuck.initial_tiers[2] = Tier::kSlow;
  ASSERT_DOUBLE_EQ(EvaluatePlan(w, stuck).total_ns, MinCostNs(w) + 120);
  const BestResponseResult responded = RespondPerTensor(w, stuck);
  EXPECT_EQ(responded.tensors_moved, 0);
  EXPECT_EQ(responded.plan, stuck);

  const PlanRelaxationResult r = PlanByRelaxation(w, 200, 0);
  ASSERT_TRUE(r.found);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, MinCostNs(w) + 40);
  EXPECT_DOUBLE_EQ(BruteForceOptimumNs(w, 200), MinCostNs(w) + 40);
  EXPECT_EQ(r.plan.initial_tiers[2], Tier::kDram);
  EXPECT_LE(r.lower_bound_ns, r.cost.total_ns + 1e-9);
  EXPECT_EQ(r.plan.mode, MigrationMode::kSync);
  EXPECT_EQ(r.plan.dram_limit_bytes, 200u);

  // A limit of 0 is none: everything in DRAM, at no cost over all-DRAM.
  const PlanRelaxationResult unlimited = PlanByRelaxation(w, 0, 0);
  ASSERT_TRUE(unlimited.found);
  EXPECT_DOUBLE_EQ(unlimited.cost.total_ns, MinCostNs(w));
  // One step at least, whatever the time limit.
  PlanRelaxationOptions hurried;
  hurried.max_seconds = 1e-9;
  const PlanRelaxationResult quick = PlanByRelaxation(w, 200, 0, hurried);
  EXPECT_TRUE(quick.found);
  EXPECT_GE(quick.iterations, 1);
}

// Random small workloads: 3 tensors over 6 kernels, persistent or not,
// random sizes, uses, penalties and limits.
Workload RandomSmall(uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Workload w;
  w.name = "random-" + std::to_string(seed);
  for (uint32_t k = 0; k < 6; ++k) w.kernels.push_back({"k" + std::to_string(k), 50.0 + uniform(0, 100)});
  uint32_t slots = 0;
  for (uint32_t t = 0; t < 3; ++t) {
    const bool persistent = uniform(0, 2) == 0;
    uint32_t a = persistent ? 0 : static_cast<uint32_t>(uniform(0, 3));
    uint32_t f = persistent ? 5 : static_cast<uint32_t>(uniform(static_cast<int>(a) + 1, 5));
    if (slots + (f - a + 1) > 16) f = a + 1;
    slots += f - a + 1;
    w.tensors.push_back({"t" + std::to_string(t), static_cast<uint64_t>(uniform(1, 4) * 100), TensorKind::kActivation,
                         a, f, persistent});
    for (uint32_t k = a; k <= f; ++k)
      if (k == a || k == f || uniform(0, 1) == 0)
        w.accesses.push_back({k, t, 1, k == a && !persistent ? 1u : 0u, static_cast<double>(uniform(5, 60))});
  }
  w.device.dram_to_slow_bytes_per_second = 1e9 * uniform(2, 8);
  w.device.slow_to_dram_bytes_per_second = 1e9 * uniform(2, 8);
  w.device.dram_to_slow_copy_setup_ns = uniform(0, 20);
  w.Finalize();
  return w;
}

TEST(PlanRelaxation, ItsBoundHoldsForEverySyncPlanAndItsPlanFits) {
  int at_optimum = 0;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const Workload w = RandomSmall(seed);
    const uint64_t limit = w.peak_live_bytes() * (1 + seed % 3) / 4;
    SCOPED_TRACE(w.name + " limit " + std::to_string(limit));
    const double optimum = BruteForceOptimumNs(w, limit);
    const PlanRelaxationResult r = PlanByRelaxation(w, limit, 0);
    ASSERT_TRUE(r.found);
    EXPECT_NO_THROW(r.plan.Validate(w));
    EXPECT_FALSE(EvaluatePlan(w, r.plan).oom);
    EXPECT_DOUBLE_EQ(EvaluatePlan(w, r.plan).total_ns, r.cost.total_ns);
    EXPECT_GE(r.cost.total_ns, optimum - 1e-6);
    EXPECT_LE(r.lower_bound_ns, optimum + 1e-6);
    EXPECT_GE(r.lower_bound_ns, MinCostNs(w) - 1e-6);
    if (r.cost.total_ns <= optimum + 1e-6) ++at_optimum;
  }
  // A heuristic, but on three tensors it should rarely miss.
  EXPECT_GE(at_optimum, 20);
}

// The async bound (envs/async_bound.h) against every async plan, with
// copies hidden in part or not at all.
TEST(AsyncBound, HoldsForEveryAsyncPlan) {
  double closed = 0, open = 0;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    Workload w = RandomSmall(seed);
    w.device.async_copy_exposure = (seed % 4) / 3.0;
    w.Finalize();
    const uint64_t limit = w.peak_live_bytes() * (1 + seed % 3) / 4;
    SCOPED_TRACE(w.name + " limit " + std::to_string(limit));
    const double optimum = BruteForceOptimumNs(w, limit, MigrationMode::kAsync);
    const AsyncBoundResult r = AsyncLowerBound(w, limit, 0);
    EXPECT_LE(r.lower_bound_ns, optimum + 1e-6);
    EXPECT_GE(r.lower_bound_ns, MinCostNs(w) - 1e-6);
    EXPECT_GE(r.iterations, 1);
    closed += r.lower_bound_ns - MinCostNs(w);
    open += optimum - MinCostNs(w);
  }
  // Not the trivial all-DRAM bound: most of the distance to the optimum.
  EXPECT_GT(closed, 0.5 * open);
}

TEST(PlanRelaxation, BestResponsesNeverCostMoreAndKeepThePlanInDram) {
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const Workload w = RandomSmall(seed);
    const uint64_t limit = w.peak_live_bytes() / 2;
    // All-slow with every use fetched and evicted around it: wasteful, fits.
    PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, limit);
    const PlanRelaxationResult relaxed = PlanByRelaxation(w, limit, 0);
    for (const PlacementPlan& start : {plan, relaxed.plan}) {
      const BestResponseResult r = RespondPerTensor(w, start);
      const CostReport c = EvaluatePlan(w, r.plan);
      EXPECT_FALSE(c.oom);
      EXPECT_LE(c.total_ns, EvaluatePlan(w, start).total_ns + 1e-9);
      EXPECT_DOUBLE_EQ(c.total_ns, r.cost.total_ns);
    }
  }
}

// G (200 B) read at k0, k2 and k4 (30 ns more each from the slow tier),
// fetched for k2 and evicted after it, with DRAM for it all iteration: its
// best response is DRAM throughout.
TEST(PlanRelaxation, ABestResponseTakesTheRoomThePlanLeft) {
  Workload w;
  w.name = "one-tensor";
  for (uint32_t k = 0; k < 6; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors = {{"G", 200, TensorKind::kGradient, 0, 4, false}};
  w.accesses = {{0, 0, 1, 0, 30}, {2, 0, 1, 0, 30}, {4, 0, 1, 0, 30}};
  w.device.dram_to_slow_bytes_per_second = 2e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, 200);
  plan.migrations = {{1, 0, Tier::kDram}, {2, 0, Tier::kSlow}};
  plan.Normalize();
  const BestResponseResult r = RespondPerTensor(w, plan);
  EXPECT_EQ(r.tensors_moved, 1);
  EXPECT_EQ(r.plan.initial_tiers[0], Tier::kDram);
  EXPECT_TRUE(r.plan.migrations.empty());
  EXPECT_DOUBLE_EQ(r.cost.total_ns, MinCostNs(w));
  // The polish starts with them; without, its own edits reach the same.
  EXPECT_EQ(PolishValidPlan(w, plan).tensors_responded, 1);
  PlanPolishOptions edits_only;
  edits_only.best_responses = false;
  EXPECT_EQ(PolishValidPlan(w, plan, edits_only).tensors_responded, 0);

  PlacementPlan async = plan;
  async.mode = MigrationMode::kAsync;
  EXPECT_THROW(RespondPerTensor(w, async), std::invalid_argument);
}

}  // namespace
}  // namespace tensortier
