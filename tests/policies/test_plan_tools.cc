// The shared machinery under the heuristic policies: timelines to plans,
// the cost model's replay, and the repair that makes any plan fit.
#include <gtest/gtest.h>

#include <random>

#include "envs/cost_model.h"
#include "policies/plan_tools.h"
#include "tests/policies/policy_test_util.h"

namespace tensortier {
namespace {

using testing::Fraction;
using testing::Synthetic;

TierTimeline RandomTimeline(const Workload& w, std::mt19937_64& rng, double switch_probability) {
  std::bernoulli_distribution coin(0.5), flip(switch_probability);
  TierTimeline tl(w.num_tensors());
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    Tier tier = coin(rng) ? Tier::kDram : Tier::kSlow;
    for (uint32_t k = w.tensors[t].alloc_kernel; k <= w.tensors[t].free_kernel; ++k) {
      if (flip(rng)) tier = tier == Tier::kDram ? Tier::kSlow : Tier::kDram;
      tl[t].push_back(tier);
    }
  }
  return tl;
}

PlacementPlan RandomPlan(const Workload& w, std::mt19937_64& rng, MigrationMode mode, uint64_t limit) {
  PlacementPlan plan = TimelineToPlan(w, RandomTimeline(w, rng, 0.3), mode, limit);
  return plan;
}

TEST(TimelineToPlan, SyncPlansFollowTheTimelineExactly) {
  std::mt19937_64 rng(1);
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 3, 1);
  for (int i = 0; i < 20; ++i) {
    const TierTimeline tl = RandomTimeline(w, rng, 0.3);
    const PlacementPlan plan = TimelineToPlan(w, tl, MigrationMode::kSync, 0);
    const auto tiers = plan.TierTimeline(w);
    for (uint32_t t = 0; t < w.num_tensors(); ++t)
      for (uint32_t k = w.tensors[t].alloc_kernel; k <= w.tensors[t].free_kernel; ++k)
        ASSERT_EQ(tiers[k][t], tl[t][k - w.tensors[t].alloc_kernel]) << "tensor " << t << " kernel " << k;
  }
}

TEST(TimelineToPlan, AsyncCopiesOverlapThePreviousKernelWhereTheyCan) {
  // T is written by k0 and read by k3; it should be slow for k1 and k2.
  Workload w;
  for (int k = 0; k < 5; ++k) w.kernels.push_back({"k" + std::to_string(k), 1000});
  w.tensors = {{"T", 4096, TensorKind::kActivation, 0, 4, false}};
  w.accesses = {{0, 0, 0, 1, 10}, {3, 0, 1, 0, 10}};
  w.Finalize();
  const TierTimeline tl = {{Tier::kDram, Tier::kSlow, Tier::kSlow, Tier::kDram, Tier::kDram}};
  const PlacementPlan plan = TimelineToPlan(w, tl, MigrationMode::kAsync, 0);
  // Leaving for k1 would need a copy overlapping k0, issued before T exists:
  // it leaves one kernel late, overlapping k1. The copy in overlaps k2
  // (issued after k1) and T is in DRAM for k3, as asked.
  const std::vector<Migration> expected = {{0, 0, Tier::kSlow}, {1, 0, Tier::kDram}};
  EXPECT_EQ(plan.migrations, expected);
  const PlanReplay r = ReplayPlan(w, plan);
  EXPECT_EQ(r.tier[3][0], Tier::kDram);
  ASSERT_EQ(r.copying_in[2].size(), 1u);
  EXPECT_EQ(r.copying_in[2][0], 0u);
  EXPECT_EQ(r.dram_bytes[2], 4096u);
}

TEST(ReplayPlan, CountsDramExactlyAsTheCostModel) {
  std::mt19937_64 rng(2);
  for (SyntheticShape shape : {SyntheticShape::kVggLike, SyntheticShape::kMobilenetLike}) {
    const Workload w = Synthetic(shape, 4, 3);
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      for (int i = 0; i < 10; ++i) {
        const PlacementPlan plan = RandomPlan(w, rng, mode, 0);
        const PlanReplay r = ReplayPlan(w, plan);
        uint64_t peak = 0;
        for (uint64_t b : r.dram_bytes) peak = std::max(peak, b);
        EXPECT_EQ(peak, EvaluatePlan(w, plan).dram_peak_bytes);
        // PlacementPlan::TierTimeline reads migrations with sync semantics.
        if (mode == MigrationMode::kSync) {
          EXPECT_TRUE(r.tier == plan.TierTimeline(w));
        }
      }
    }
  }
}

TEST(RepairToLimit, MakesAnyPlanFitAndLeavesFittingPlansAlone) {
  std::mt19937_64 rng(3);
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kTiny}) {
    const Workload w = Synthetic(shape, 4, 4);
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      for (double f : {0.05, 0.3, 0.6}) {
        for (int i = 0; i < 5; ++i) {
          PlacementPlan plan = RandomPlan(w, rng, mode, Fraction(w, f));
          const bool was_oom = EvaluatePlan(w, plan).oom;
          const int changes = RepairToLimit(w, &plan);
          EXPECT_EQ(changes > 0, was_oom);
          EXPECT_NO_THROW(plan.Validate(w));
          EXPECT_FALSE(EvaluatePlan(w, plan).oom);
          EXPECT_EQ(RepairToLimit(w, &plan), 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tensortier
