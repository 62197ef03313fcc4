// The async copy schedule: copies move to where they are exposed least,
// never past a kernel that touches their tensor, never over a tier's limit.

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "envs/copy_schedule.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/synthetic.h"
#include "tests/core/synthetic_graph.h"

namespace tensortier {
namespace {

// `kernels` kernels (k0..k5 by default), 100 ns each. P and Q (200 B,
// tensors 0 and 1) are read at the first and the last kernel and idle
// between; R (`r_bytes`, tensor 2) is written at k2 and read at k3. Every
// copy takes 100 ns, one kernel: two under one kernel expose 100.
Workload IdlePair(uint64_t r_bytes, uint32_t kernels = 6) {
  Workload w;
  w.name = "idle-pair";
  for (uint32_t k = 0; k < kernels; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  const uint32_t last = kernels - 1;
  w.tensors = {
      {"P", 200, TensorKind::kActivation, 0, last, false},
      {"Q", 200, TensorKind::kActivation, 0, last, false},
      {"R", r_bytes, TensorKind::kActivation, 2, 3, false},
  };
  w.accesses = {{0, 0, 1, 0, 50}, {0, 1, 1, 0, 50}, {2, 2, 0, 1, 10},
                {3, 2, 1, 0, 10}, {last, 0, 1, 0, 50}, {last, 1, 1, 0, 50}};
  w.device.dram_to_slow_bytes_per_second = 2e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}

// Both evictions after k0 (under k1), both prefetches under the kernel
// before the last: what the MDP makes of "slow while idle".
PlacementPlan Crowded(const Workload& w, uint64_t dram_limit_bytes, MigrationMode mode) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kDram, dram_limit_bytes);
  p.mode = mode;
  const int32_t before_last = static_cast<int32_t>(w.num_kernels()) - 3;
  p.migrations = {{0, 0, Tier::kSlow}, {0, 1, Tier::kSlow}, {before_last, 0, Tier::kDram}, {before_last, 1, Tier::kDram}};
  p.Normalize();
  return p;
}

// The tier each kernel sees each tensor in, as the cost model has it: an
// async copy after kernel a lands for kernel a + 2, a blocking one (the
// next kernel writes the tensor, or sync mode) for a + 1.
std::vector<std::vector<Tier>> SeenTiers(const Workload& w, const PlacementPlan& p) {
  std::vector<Tier> tier = p.initial_tiers;
  std::vector<std::vector<Tier>> seen(w.num_kernels());
  std::vector<std::pair<int64_t, Migration>> landing;  // (first kernel that sees it, copy)
  for (const Migration& m : p.migrations) {
    const bool blocks = p.mode == MigrationMode::kSync || w.KernelWrites(static_cast<size_t>(m.after_kernel + 1), m.tensor);
    landing.push_back({m.after_kernel + (blocks ? 1 : 2), m});
  }
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    for (const auto& [from, m] : landing)
      if (from == static_cast<int64_t>(k)) tier[m.tensor] = m.to;
    seen[k] = tier;
  }
  return seen;
}

using testing::Synthetic;

// The async MDP at `fraction` of the workload's peak.
EnvConfig AsyncAt(const Workload& w, double fraction) {
  EnvConfig c;
  c.dram_limit_bytes = static_cast<uint64_t>(fraction * static_cast<double>(w.peak_live_bytes()));
  c.mode = MigrationMode::kAsync;
  return c;
}

std::map<std::pair<uint32_t, Tier>, int> CopiesByTensor(const PlacementPlan& p) {
  std::map<std::pair<uint32_t, Tier>, int> n;
  for (const Migration& m : p.migrations) ++n[{m.tensor, m.to}];
  return n;
}

TEST(CopySchedule, CrowdedCopiesSpreadOverIdleKernels) {
  const Workload w = IdlePair(100);
  const PlacementPlan crowded = Crowded(w, 0, MigrationMode::kAsync);
  const CostReport before = EvaluatePlan(w, crowded);
  EXPECT_DOUBLE_EQ(before.total_ns, 600 + 100 + 100);  // k1 and k4 each carry two copies
  const CopyScheduleResult r = ScheduleAsyncCopies(w, crowded);
  EXPECT_GE(r.moved, 2);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 600);  // four copies under four kernels
  EXPECT_DOUBLE_EQ(r.saved_ns, 200);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, r.plan).total_ns, r.cost.total_ns);
  EXPECT_EQ(SeenTiers(w, r.plan)[0], SeenTiers(w, crowded)[0]);
  EXPECT_EQ(SeenTiers(w, r.plan)[5], SeenTiers(w, crowded)[5]);
  EXPECT_EQ(CopiesByTensor(r.plan), CopiesByTensor(crowded));
}

// R fills DRAM over k2-k3: with room for R alone beside the copies in
// flight nothing can move; with room for one more copy beside it, one
// eviction moves under k2 and one prefetch under k3.
TEST(CopySchedule, ACopyMovesOnlyWhereBothTiersHoldIt) {
  const Workload w = IdlePair(400);
  const PlacementPlan tight = Crowded(w, 400, MigrationMode::kAsync);
  ASSERT_FALSE(EvaluatePlan(w, tight).oom);
  const CopyScheduleResult none = ScheduleAsyncCopies(w, tight);
  EXPECT_EQ(none.moved, 0);
  EXPECT_TRUE(none.plan == tight);
  EXPECT_DOUBLE_EQ(none.cost.total_ns, 800);

  // Two more idle kernels before the last: a prefetch can move under one,
  // though no eviction can move past R (nor could a pass that moved one
  // there keep its other moves).
  const Workload longer = IdlePair(400, 8);
  const CopyScheduleResult one = ScheduleAsyncCopies(longer, Crowded(longer, 400, MigrationMode::kAsync));
  EXPECT_EQ(one.moved, 1);
  EXPECT_DOUBLE_EQ(one.cost.total_ns, 800 + 100);
  EXPECT_LE(one.cost.dram_peak_bytes, 400u);

  const PlacementPlan roomier = Crowded(w, 600, MigrationMode::kAsync);
  const CopyScheduleResult r = ScheduleAsyncCopies(w, roomier);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 600);
  EXPECT_FALSE(r.cost.oom);
  EXPECT_LE(r.cost.dram_peak_bytes, 600u);

  // A plan out of memory is left alone.
  Workload small_slow = IdlePair(100);
  small_slow.device.slow_capacity_bytes = 200;
  const PlacementPlan p = Crowded(small_slow, 0, MigrationMode::kAsync);
  const CostReport before = EvaluatePlan(small_slow, p);
  ASSERT_TRUE(before.oom);  // P and Q in the slow tier overfill it
  EXPECT_EQ(ScheduleAsyncCopies(small_slow, p).moved, 0);
}

TEST(CopySchedule, SyncPlansAreLeftAsTheyAre) {
  const Workload w = IdlePair(100);
  const PlacementPlan sync = Crowded(w, 0, MigrationMode::kSync);
  const CopyScheduleResult r = ScheduleAsyncCopies(w, sync);
  EXPECT_EQ(r.moved, 0);
  EXPECT_TRUE(r.plan == sync);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, EvaluatePlan(w, sync).total_ns);
}

// On synthetic training iterations, plans the MDP makes: the schedule never
// costs more, its price is the cost model's, every kernel sees every
// tensor it touches in the same tier, the copies are the same, and DRAM
// holds.
TEST(CopySchedule, KeepsEveryTouchedTierAndEveryCopyOnMdpPlans) {
  int improved = 0;
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike, SyntheticShape::kVggLike}) {
    const Workload w = Synthetic(shape);
    for (double fraction : {0.2, 0.4}) {
      SCOPED_TRACE(std::string(SyntheticShapeName(shape)) + " " + std::to_string(fraction));
      const EnvConfig c = AsyncAt(w, fraction);
      PlacementEnv env(w, c);
      const PlacementPlan plan = PlayGreedy(env, [](const Observation& x) {
                                   return std::make_pair(x[kObsHeat], 0.3f);
                                 }).summary.plan;
      const CostReport before = EvaluatePlan(w, plan);
      ASSERT_FALSE(before.oom);
      const CopyScheduleResult r = ScheduleAsyncCopies(w, plan);
      EXPECT_LE(r.cost.total_ns, before.total_ns);
      EXPECT_NEAR(r.saved_ns, before.total_ns - r.cost.total_ns, 1e-9 * before.total_ns);
      const CostReport again = EvaluatePlan(w, r.plan);
      EXPECT_DOUBLE_EQ(again.total_ns, r.cost.total_ns);
      EXPECT_FALSE(again.oom);
      EXPECT_LE(again.dram_peak_bytes, c.dram_limit_bytes);
      EXPECT_DOUBLE_EQ(again.exec_ns, before.exec_ns);  // the same tiers where it matters
      EXPECT_EQ(CopiesByTensor(r.plan), CopiesByTensor(plan));
      const auto seen_before = SeenTiers(w, plan), seen_after = SeenTiers(w, r.plan);
      for (const Access& a : w.accesses)
        ASSERT_EQ(seen_after[a.kernel][a.tensor], seen_before[a.kernel][a.tensor]) << "kernel " << a.kernel << " tensor " << a.tensor;
      improved += r.moved > 0 && r.saved_ns > 0;
    }
  }
  EXPECT_GE(improved, 3);  // the premise: the MDP's plans crowd copies
}

// The search compares async episodes by their plans with copies
// rescheduled and returns the best so, keeping the episode's own plan.
TEST(CopySchedule, TheSearchScoresAndReturnsScheduledPlans) {
  const Workload w = Synthetic(SyntheticShape::kMobilenetLike);
  PlacementEnv env(w, AsyncAt(w, 0.25));
  ActionScores scores = [](const Observation& x) { return std::make_pair(x[kObsHeat], 0.3f); };
  PlanSearchOptions o;
  o.max_rollouts = 8;
  o.max_replays = 200;
  o.max_tensor_replays = 50;
  o.max_room_replays = 50;
  o.polish_plan = false;  // the copy schedule's part alone
  const PlanSearchResult on = SearchPlan(env, scores, o);
  EXPECT_GT(on.copies_moved, 0);
  EXPECT_GT(on.copy_schedule_saved_ns, 0);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, on.best.plan).total_ns, on.best.cost.total_ns);
  EXPECT_NEAR(EvaluatePlan(w, on.best_episode_plan).total_ns - on.best.cost.total_ns, on.copy_schedule_saved_ns,
              1e-9 * on.best.cost.total_ns);
  // From the greedy episode on, every incumbent is worth less than the one before.
  EXPECT_LE(on.best.cost.total_ns, ScheduleAsyncCopies(w, on.greedy.plan).cost.total_ns);

  o.schedule_async_copies = false;
  const PlanSearchResult off = SearchPlan(env, scores, o);
  EXPECT_EQ(off.copies_moved, 0);
  EXPECT_TRUE(off.best.plan == off.best_episode_plan);
  EXPECT_LT(on.best.cost.total_ns, off.best.cost.total_ns);
}

}  // namespace
}  // namespace tensortier
