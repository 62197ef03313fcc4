// The plan polish: a tensor the plan copies between tiers put in one tier
// all iteration where the cost model says that is faster and DRAM holds.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "envs/copy_schedule.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/plan_polish.h"
#include "envs/plan_search.h"
#include "envs/synthetic.h"
#include "tests/core/synthetic_graph.h"

namespace tensortier {
namespace {

// Six kernels of 100 ns. G (200 B, tensor 0) is read at k0, k2 and k4,
// 30 ns more each from the slow tier; R (`r_bytes`, tensor 1) is written at
// k3 and read at k4, `r_penalty_ns` more each from the slow tier. Every
// copy of G takes 100 ns.
Workload ThreeUses(uint64_t r_bytes, double r_penalty_ns = 10) {
  Workload w;
  w.name = "three-uses";
  for (uint32_t k = 0; k < 6; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors = {
      {"G", 200, TensorKind::kGradient, 0, 4, false},
      {"R", r_bytes, TensorKind::kActivation, 3, 4, false},
  };
  w.accesses = {{0, 0, 1, 0, 30}, {2, 0, 1, 0, 30}, {3, 1, 0, 1, r_penalty_ns}, {4, 0, 1, 0, 30}, {4, 1, 1, 0, r_penalty_ns}};
  w.device.dram_to_slow_bytes_per_second = 2e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}

// G read from the slow tier at k0, fetched for k2, evicted before k4: two
// copies and two slow reads, where the slow tier throughout costs three.
PlacementPlan FetchedAndEvicted(const Workload& w, uint64_t dram_limit_bytes) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kDram, dram_limit_bytes);
  p.mode = MigrationMode::kSync;
  p.initial_tiers[0] = Tier::kSlow;
  p.migrations = {{0, 0, Tier::kDram}, {2, 0, Tier::kSlow}};
  p.Normalize();
  return p;
}

using testing::Synthetic;

// The edits alone, without the best responses that reach most of them
// first (tests/core/test_plan_relaxation.cc and test_async_response.cc test
// those), and without the async copy schedule (tests/core/
// test_copy_schedule.cc; below, with them).
PlanPolishOptions Edits() {
  PlanPolishOptions o;
  o.best_responses = false;
  o.reschedule_copies = false;
  return o;
}

// Without the room edits.
PlanPolishOptions OneTierOnly() {
  PlanPolishOptions o = Edits();
  o.room_tensors = 0;
  return o;
}

TEST(PlanPolish, ATensorCopiedAndReadFromTheSlowTierStaysThereWhereDramCannotHoldIt) {
  const Workload w = ThreeUses(400);
  const PlacementPlan plan = FetchedAndEvicted(w, 400);  // G and R do not fit together at k3-k4
  const CostReport before = EvaluatePlan(w, plan);
  ASSERT_FALSE(before.oom);
  EXPECT_DOUBLE_EQ(before.total_ns, 600 + 2 * 30 + 2 * 100);
  const PlanPolishResult r = PolishValidPlan(w, plan, OneTierOnly());
  EXPECT_EQ(r.edits_kept, 1);
  EXPECT_EQ(r.plan.initial_tiers[0], Tier::kSlow);
  EXPECT_TRUE(r.plan.migrations.empty());
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 600 + 3 * 30);
  EXPECT_DOUBLE_EQ(r.saved_ns, before.total_ns - r.cost.total_ns);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, r.plan).total_ns, r.cost.total_ns);
  EXPECT_FALSE(r.cost.oom);
}

// With the room edits: G in DRAM all iteration, R (read and written once,
// 10 ns each from the slow tier) in the slow tier to make room for it.
TEST(PlanPolish, ATensorTradesItsDramForAnothersWhereThatPays) {
  const Workload w = ThreeUses(400);
  const PlanPolishResult r = PolishValidPlan(w, FetchedAndEvicted(w, 400), Edits());
  EXPECT_EQ(r.edits_kept, 2);  // G in the slow tier all iteration, then G's DRAM for R's
  EXPECT_EQ(r.plan.initial_tiers[0], Tier::kDram);
  EXPECT_EQ(r.plan.initial_tiers[1], Tier::kSlow);
  EXPECT_TRUE(r.plan.migrations.empty());
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 600 + 2 * 10);
  EXPECT_LE(r.cost.dram_peak_bytes, 400u);
  // Where R costs more in the slow tier than G does, no trade.
  const Workload dear_r = ThreeUses(400, 100);
  const PlanPolishResult kept = PolishValidPlan(dear_r, FetchedAndEvicted(dear_r, 400), Edits());
  EXPECT_EQ(kept.plan.initial_tiers[0], Tier::kSlow);
  EXPECT_EQ(kept.plan.initial_tiers[1], Tier::kDram);
  EXPECT_DOUBLE_EQ(kept.cost.total_ns, 600 + 3 * 30);
}

TEST(PlanPolish, DramAllIterationWinsWhereItFits) {
  const Workload w = ThreeUses(400);
  const PlanPolishResult r = PolishValidPlan(w, FetchedAndEvicted(w, 600), Edits());
  EXPECT_EQ(r.edits_kept, 1);
  EXPECT_EQ(r.plan.initial_tiers[0], Tier::kDram);
  EXPECT_TRUE(r.plan.migrations.empty());
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 600);
  EXPECT_LE(r.cost.dram_peak_bytes, 600u);
}

TEST(PlanPolish, APlanWithoutCopiesOrOutOfMemoryIsLeftAsItIs) {
  const Workload w = ThreeUses(400);
  const PlacementPlan uniform = PlacementPlan::Uniform(w, Tier::kSlow, 400);
  const PlanPolishResult none = PolishValidPlan(w, uniform, OneTierOnly());
  EXPECT_EQ(none.edits_tried, 0);
  EXPECT_TRUE(none.plan == uniform);

  const PlacementPlan over = FetchedAndEvicted(w, 100);  // R alone overfills DRAM
  ASSERT_TRUE(EvaluatePlan(w, over).oom);
  const PlanPolishResult left = PolishValidPlan(w, over, Edits());
  EXPECT_EQ(left.edits_kept, 0);
  EXPECT_TRUE(left.plan == over);
}

// Kernels of 100 ns. G (100 B, tensor 0) is read at `g_uses`, 100 ns more
// each from the slow tier, and each copy of it takes 50 ns; each R (100 B)
// is written at its first kernel and read at its second, 1,000 ns more each
// from the slow tier. DRAM holds 100 B: G or one R.
Workload GapAround(std::vector<uint32_t> g_uses, std::vector<std::pair<uint32_t, uint32_t>> r_lives,
                   uint32_t kernels) {
  Workload w;
  w.name = "gap-around";
  for (uint32_t k = 0; k < kernels; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors = {{"G", 100, TensorKind::kGradient, 0, kernels - 1, false}};
  for (uint32_t u : g_uses) w.accesses.push_back({u, 0, 1, 0, 100});
  for (const auto& [first, last] : r_lives) {
    const auto r = static_cast<uint32_t>(w.tensors.size());
    w.tensors.push_back({"R" + std::to_string(r), 100, TensorKind::kActivation, first, last, false});
    w.accesses.push_back({first, r, 0, 1, 1000});
    w.accesses.push_back({last, r, 1, 0, 1000});
  }
  std::sort(w.accesses.begin(), w.accesses.end(),
            [](const Access& a, const Access& b) { return a.kernel != b.kernel ? a.kernel < b.kernel : a.tensor < b.tensor; });
  w.device.dram_to_slow_bytes_per_second = 2e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}

PlacementPlan GInTheSlowTier(const Workload& w, MigrationMode mode) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kDram, 100);
  p.mode = mode;
  p.initial_tiers[0] = Tier::kSlow;
  return p;
}

// G in DRAM all iteration overfills it at k2, where R lives, and R in the
// slow tier costs more than G does: G leaves DRAM after k0 and comes back
// for k5, two copies for two slow reads.
TEST(PlanPolish, ATensorLeavesDramAroundTheKernelThatNeedsTheRoom) {
  const Workload w = GapAround({0, 5}, {{2, 3}}, 6);
  const PlacementPlan plan = GInTheSlowTier(w, MigrationMode::kSync);
  ASSERT_DOUBLE_EQ(EvaluatePlan(w, plan).total_ns, 600 + 2 * 100);
  const PlanPolishResult r = PolishValidPlan(w, plan, Edits());
  EXPECT_EQ(r.edits_kept, 1);
  EXPECT_EQ(r.plan.initial_tiers[0], Tier::kDram);
  EXPECT_EQ(r.plan.initial_tiers[1], Tier::kDram);
  const std::vector<Migration> expected = {{0, 0, Tier::kSlow}, {4, 0, Tier::kDram}};
  EXPECT_EQ(r.plan.migrations, expected);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 600 + 2 * 50);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, r.plan).total_ns, r.cost.total_ns);  // and valid
  // Without the gap edits, no edit pays: R's slow reads cost more.
  PlanPolishOptions whole_tensors = Edits();
  whole_tensors.gap_edits = false;
  EXPECT_EQ(PolishValidPlan(w, plan, whole_tensors).edits_kept, 0);
  // In async mode the fetch starts a kernel early, so that it lands before k5.
  const PlanPolishResult async = PolishValidPlan(w, GInTheSlowTier(w, MigrationMode::kAsync), Edits());
  ASSERT_EQ(async.edits_kept, 1);
  const std::vector<Migration> early = {{0, 0, Tier::kSlow}, {3, 0, Tier::kDram}};
  EXPECT_EQ(async.plan.migrations, early);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, async.plan).total_ns, async.cost.total_ns);
  EXPECT_LT(async.cost.total_ns, 600 + 2 * 100);
}

// Two Rs, at k1-k2 and k4-k5: G's first gap moves the overfilled kernel to
// k4, the second clears it; four copies for three slow reads. One step
// finds nothing.
TEST(PlanPolish, RoomEditsChainWhereOneStillOverfillsLater) {
  const Workload w = GapAround({0, 3, 6}, {{1, 2}, {4, 5}}, 7);
  const PlacementPlan plan = GInTheSlowTier(w, MigrationMode::kSync);
  ASSERT_DOUBLE_EQ(EvaluatePlan(w, plan).total_ns, 700 + 3 * 100);
  const PlanPolishResult r = PolishValidPlan(w, plan, Edits());
  EXPECT_EQ(r.edits_kept, 1);
  const std::vector<Migration> expected = {
      {0, 0, Tier::kSlow}, {2, 0, Tier::kDram}, {3, 0, Tier::kSlow}, {5, 0, Tier::kDram}};
  EXPECT_EQ(r.plan.migrations, expected);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 700 + 4 * 50);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, r.plan).total_ns, r.cost.total_ns);
  PlanPolishOptions one_step = Edits();
  one_step.room_depth = 1;
  EXPECT_EQ(PolishValidPlan(w, plan, one_step).edits_kept, 0);
}

// Four kernels of 100 ns. G (200 B) is read at each, 100 ns more each from
// the slow tier; S1 and S2 (100 B each, all iteration) are read once, 50 ns
// more from the slow tier. DRAM holds 200 B: G, or S1 and S2.
Workload OneLargeTwoSmall() {
  Workload w;
  w.name = "one-large-two-small";
  for (uint32_t k = 0; k < 4; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors = {
      {"G", 200, TensorKind::kGradient, 0, 3, false},
      {"S1", 100, TensorKind::kActivation, 0, 3, false},
      {"S2", 100, TensorKind::kActivation, 0, 3, false},
  };
  w.accesses = {{0, 0, 1, 0, 100}, {1, 0, 1, 0, 100}, {1, 1, 1, 0, 50},
                {2, 0, 1, 0, 100}, {2, 2, 1, 0, 50}, {3, 0, 1, 0, 100}};
  w.device.dram_to_slow_bytes_per_second = 2e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}

// G in DRAM overfills every kernel by 200 B; S1 in the slow tier halves
// that without moving the first kernel over the limit, and S2 clears it:
// two small tensors' room for one large one, 100 ns for 400.
TEST(PlanPolish, SeveralSmallTensorsMakeTheRoomOneLargeOneNeeds) {
  const Workload w = OneLargeTwoSmall();
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kDram, 200);
  plan.mode = MigrationMode::kSync;
  plan.initial_tiers[0] = Tier::kSlow;
  ASSERT_DOUBLE_EQ(EvaluatePlan(w, plan).total_ns, 400 + 4 * 100);
  const PlanPolishResult r = PolishValidPlan(w, plan, Edits());
  EXPECT_EQ(r.edits_kept, 1);
  const std::vector<Tier> expected = {Tier::kDram, Tier::kSlow, Tier::kSlow};
  EXPECT_EQ(r.plan.initial_tiers, expected);
  EXPECT_TRUE(r.plan.migrations.empty());
  EXPECT_DOUBLE_EQ(r.cost.total_ns, 400 + 2 * 50);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, r.plan).total_ns, r.cost.total_ns);
  // One step frees only half of the room.
  PlanPolishOptions one_step = Edits();
  one_step.room_depth = 1;
  EXPECT_EQ(PolishValidPlan(w, plan, one_step).edits_kept, 0);
}

// On the plans the search makes of synthetic training iterations: the
// polished plan never costs more than the MDP's, is priced as the cost model
// prices it, fits, and the plan a network would imitate stays the MDP's.
// Heat order's greedy plan on three synthetic shapes in both modes, a fifth
// of the peak in DRAM: check(w, c, plan) for each.
template <typename Check>
void ForEachHeatOrderPlan(Check&& check) {
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike, SyntheticShape::kVggLike}) {
    const Workload w = Synthetic(shape);
    for (MigrationMode mode : {MigrationMode::kAsync, MigrationMode::kSync}) {
      SCOPED_TRACE(std::string(SyntheticShapeName(shape)) + " " + MigrationModeName(mode));
      const EnvConfig c = testing::FifthOfPeak(w, mode);
      PlacementEnv env(w, c);
      check(w, c, PlayGreedy(env, testing::HeatScores).summary.plan);
    }
  }
}

// In async mode the polish ends with the copies where the copy schedule
// leaves them: an edit issues its copies where its tiers change, and the
// schedule after the edits finds what one before them could not. It never
// ends slower than the edits alone: it starts from where they end.
TEST(PlanPolish, AsyncPlansEndWithTheirCopiesRescheduled) {
  int rescheduled = 0;
  ForEachHeatOrderPlan([&](const Workload& w, const EnvConfig& c, const PlacementPlan& plan) {
    const MigrationMode mode = c.mode;
    PlanPolishOptions without = Edits();
    PlanPolishOptions with = without;
    with.reschedule_copies = true;
    const PlanPolishResult a = PolishValidPlan(w, plan, without), b = PolishValidPlan(w, plan, with);
    ASSERT_FALSE(b.cost.oom);
    EXPECT_LE(b.cost.dram_peak_bytes, c.dram_limit_bytes);
    EXPECT_DOUBLE_EQ(EvaluatePlan(w, b.plan).total_ns, b.cost.total_ns);
    EXPECT_NEAR(b.saved_ns, EvaluatePlan(w, plan).total_ns - b.cost.total_ns, 1e-6 * b.cost.total_ns);
    EXPECT_EQ(a.copies_moved, 0);
    if (mode == MigrationMode::kSync) {
      EXPECT_EQ(b.copies_moved, 0);
      EXPECT_TRUE(b.plan == a.plan);
      return;
    }
    EXPECT_EQ(ScheduleAsyncCopies(w, b.plan).moved, 0);  // nothing left for the schedule
    EXPECT_LE(b.cost.total_ns, a.cost.total_ns);
    EXPECT_EQ(b.changes(), b.edits_kept + b.copies_moved);
    rescheduled += b.copies_moved > 0 && b.cost.total_ns < a.cost.total_ns;
  });
  EXPECT_GE(rescheduled, 2);  // the premise: the MDP crowds copies, and edits leave them so
}

// An episode's plan finished as the "+polish" pipeline and imitation's
// expert choice finish it: in async mode the copy schedule, then the polish
// from the scheduled plan; either step can be left out.
TEST(PlanPolish, AnEpisodesPlanIsFinishedByTheCopyScheduleThenThePolish) {
  int scheduled_first = 0;
  ForEachHeatOrderPlan([&](const Workload& w, const EnvConfig& c, const PlacementPlan& plan) {
    const MigrationMode mode = c.mode;
    const double plan_ns = EvaluatePlan(w, plan).total_ns;
    const PlanPolishOptions polish;
    const PlanPolishResult finished = FinishEpisodePlan(w, plan, true, &polish);
    // The same two steps by hand.
    const CopyScheduleResult scheduled = ScheduleValidAsyncCopies(w, plan);
    const PlacementPlan start = mode == MigrationMode::kAsync && scheduled.moved > 0 ? scheduled.plan : plan;
    const PlanPolishResult by_hand = PolishValidPlan(w, start, polish);
    EXPECT_DOUBLE_EQ(finished.cost.total_ns, by_hand.changes() > 0 ? by_hand.cost.total_ns
                                                                    : EvaluatePlan(w, start).total_ns);
    EXPECT_DOUBLE_EQ(EvaluatePlan(w, finished.plan).total_ns, finished.cost.total_ns);
    EXPECT_LE(finished.cost.total_ns, plan_ns);
    EXPECT_LE(finished.cost.dram_peak_bytes, c.dram_limit_bytes);
    EXPECT_NEAR(finished.saved_ns, plan_ns - finished.cost.total_ns, 1e-6 * plan_ns);
    // The schedule alone: no edit, no best response.
    const PlanPolishResult copies_only = FinishEpisodePlan(w, plan, true, nullptr);
    EXPECT_EQ(copies_only.edits_kept + copies_only.tensors_responded, 0);
    if (mode == MigrationMode::kSync) {
      EXPECT_EQ(copies_only.copies_moved, 0);
      EXPECT_TRUE(copies_only.plan == plan);
    } else {
      EXPECT_EQ(copies_only.copies_moved, scheduled.moved);
      EXPECT_DOUBLE_EQ(copies_only.cost.total_ns, scheduled.cost.total_ns);
      scheduled_first += scheduled.moved > 0;
    }
    // Neither step: the plan as it is.
    const PlanPolishResult neither = FinishEpisodePlan(w, plan, false, nullptr);
    EXPECT_TRUE(neither.plan == plan);
    EXPECT_EQ(neither.changes(), 0);
    EXPECT_DOUBLE_EQ(neither.cost.total_ns, plan_ns);
  });
  EXPECT_GE(scheduled_first, 2);  // the premise: the MDP's async copies are crowded
}

TEST(PlanPolish, TheSearchReturnsThePolishedPlanAndKeepsTheEpisodesOwn) {
  int polished_plans = 0;
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync})
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kVggLike}) {
    const Workload w = Synthetic(shape);
    const EnvConfig c = testing::FifthOfPeak(w, mode);
    PlacementEnv env(w, c);
    // A policy that asks for DRAM everywhere but at every third tensor.
    const ActionScores scores = [](const Observation& o) {
      return std::pair<float, float>{0.f, static_cast<int>(o[0] * 1000) % 3 == 0 ? 1.f : -1.f};
    };
    PlanSearchOptions o;
    o.max_rollouts = 4;
    o.max_replays = 16;
    o.max_tensor_replays = 64;
    o.max_room_replays = 64;
    o.max_window_replays = 64;
    o.polish_plan = false;
    o.max_polished_restarts = 0;  // one search: its episode's plan is the same with the polish or without
    const PlanSearchResult plain = SearchPlan(env, scores, o);
    o.polish_plan = true;
    const PlanSearchResult polished = SearchPlan(env, scores, o);
    EXPECT_TRUE(polished.best_episode_plan == plain.best_episode_plan) << MigrationModeName(mode);
    EXPECT_LE(polished.best.cost.total_ns, plain.best.cost.total_ns);
    EXPECT_DOUBLE_EQ(EvaluatePlan(w, polished.best.plan).total_ns, polished.best.cost.total_ns);
    EXPECT_FALSE(polished.best.cost.oom);
    EXPECT_LE(polished.best.cost.dram_peak_bytes, c.dram_limit_bytes);
    EXPECT_NEAR(polished.polish_saved_ns, plain.best.cost.total_ns - polished.best.cost.total_ns, 1e-6);
    EXPECT_EQ(polished.polish_edits > 0, polished.polish_saved_ns > 0);
    polished_plans += polished.polish_edits > 0;
  }
  EXPECT_GT(polished_plans, 1);  // the premise: the MDP's search leaves some
}

// In the time a search leaves, it goes on from its polished plan while that
// pays: never slower than the single search, and faster where the polish
// changed what the MDP's moves could not (async copies, best responses).
TEST(PlanPolish, TheSearchGoesOnFromItsPolishedPlan) {
  int faster = 0;
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync})
    for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike, SyntheticShape::kVggLike}) {
      SCOPED_TRACE(std::string(SyntheticShapeName(shape)) + " " + MigrationModeName(mode));
      const Workload w = Synthetic(shape);
      const EnvConfig c = testing::FifthOfPeak(w, mode);
      PlacementEnv env(w, c);
      const ActionScores scores = testing::HeatScores;
      PlanSearchOptions o = testing::SmallSearch();
      o.max_polished_restarts = 0;
      const PlanSearchResult once = SearchPlan(env, scores, o);
      o.max_polished_restarts = 4;
      const PlanSearchResult again = SearchPlan(env, scores, o);
      EXPECT_EQ(once.polished_restarts, 0);
      EXPECT_GE(again.polished_restarts, 1);
      EXPECT_LE(again.polished_restarts, 4);
      EXPECT_LE(again.best.cost.total_ns, once.best.cost.total_ns);
      EXPECT_FALSE(again.best.cost.oom);
      EXPECT_LE(again.best.cost.dram_peak_bytes, c.dram_limit_bytes);
      EXPECT_DOUBLE_EQ(EvaluatePlan(w, again.best.plan).total_ns, again.best.cost.total_ns);
      EXPECT_DOUBLE_EQ(again.greedy.cost.total_ns, once.greedy.cost.total_ns);
      faster += again.best.cost.total_ns < once.best.cost.total_ns;
    }
  EXPECT_GE(faster, 1);  // the premise: the polished plan leads somewhere new
}

}  // namespace
}  // namespace tensortier
