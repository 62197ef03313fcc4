// The ILP a policy's network guides (policies/guided_ilp.h): what it fixes,
// where it starts, and that it never returns a plan worse than the policy's;
// and the same ILP with no network (heat+ilp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "policies/autotm.h"
#include "policies/guided_ilp.h"
#include "tests/core/hand_graph.h"
#include "tests/policies/policy_test_util.h"

namespace tensortier {
namespace {

using testing::Fraction;
using testing::Synthetic;

// A policy that always prefers DRAM, surer for larger tensors: heat order
// and clip-to-fit make its plan (DRAM until it is full), a poor start.
ActionScores PrefersDram() {
  return [](const Observation& o) { return std::pair<float, float>{1.0f + o[kObsSizeOfLimit], 0.0f}; };
}

struct Case {
  Workload w;
  EnvConfig env;
};

Case SmallCase(MigrationMode mode) {
  Case c{Synthetic(SyntheticShape::kVggLike, 3, 2), {}};
  c.env.dram_limit_bytes = Fraction(c.w, 0.3);
  c.env.mode = mode;
  return c;
}

// AutoTM's whole program of `c` in `formulation`, to its optimum.
AutoTmIlpResult SolveWholeProgram(const Case& c, AutoTmFormulation formulation) {
  AutoTmIlpOptions o;
  o.formulation = formulation;
  o.mode = c.env.mode;
  o.dram_limit_bytes = c.env.dram_limit_bytes;
  o.mip_gap = 0;
  o.time_limit_seconds = 30;
  return SolveAutoTmIlp(c.w, o);
}

GuidedIlpOptions Options(std::vector<double> shares) {
  GuidedIlpOptions o;
  o.fixed_shares = std::move(shares);
  o.mip_gap = 0;
  o.final_mip_gap = 0;  // each solve is already to the optimum of its program
  o.time_limit_seconds = 30;
  o.async_windows = false;  // the shares alone; the windows have tests of their own
  o.synchronous_shares_in_async = true;
  return o;
}
GuidedIlpOptions Options(double share) { return Options(std::vector<double>{share}); }

// A buffer the framework holds in DRAM (Tensor::pinned_dram): the program
// plans the rest under what it leaves, so that the plan fits beside it, and
// nothing is lost to it: the optimum is the graph's without the buffer under
// the limit less its bytes.
TEST(GuidedIlp, PlansTheRestOfTheLimitBesideAPinnedBuffer) {
  Case plain = SmallCase(MigrationMode::kSync);
  const uint64_t pinned_bytes = plain.env.dram_limit_bytes / 10;
  Case c{testing::WithPinnedBuffer(plain.w, pinned_bytes), plain.env};
  const uint32_t pinned = static_cast<uint32_t>(c.w.num_tensors() - 1);
  PlacementEnv env(c.w, c.env);
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), Options(0));
  ASSERT_TRUE(r.solved);
  EXPECT_FALSE(r.cost.oom);
  EXPECT_LE(r.cost.dram_peak_bytes, c.env.dram_limit_bytes);
  EXPECT_EQ(r.plan.dram_limit_bytes, c.env.dram_limit_bytes);
  EXPECT_EQ(r.plan.initial_tiers[pinned], Tier::kDram);
  for (const Migration& m : r.plan.migrations) EXPECT_NE(m.tensor, pinned);
  plain.env.dram_limit_bytes -= pinned_bytes;
  const AutoTmIlpResult whole = SolveWholeProgram(plain, AutoTmFormulation::kSynchronous);
  ASSERT_EQ(whole.mip.status, "optimal");
  EXPECT_NEAR(r.cost.total_ns, EvaluatePlan(plain.w, whole.plan).total_ns, 1e-6 * r.cost.total_ns);
}

TEST(GuidedIlp, NothingFixedSolvesTheWholeIlpFromThePolicysPlan) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    Case c = SmallCase(mode);
    PlacementEnv env(c.w, c.env);
    const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), Options(0));
    // In async mode the synchronous formulation goes first, then the
    // asynchronous one from the best plan so far.
    ASSERT_EQ(r.solves.size(), mode == MigrationMode::kSync ? 1u : 2u);
    for (const GuidedIlpSolve& solve : r.solves) EXPECT_EQ(solve.fixed_variables, 0);
    EXPECT_EQ(r.solves.back().formulation, mode == MigrationMode::kSync ? "synchronous" : "asynchronous");
    EXPECT_EQ(r.solves.front().formulation, "synchronous");
    EXPECT_GT(r.location_variables, 0);
    EXPECT_EQ(r.formulation, mode == MigrationMode::kSync ? "synchronous" : "synchronous, then asynchronous");
    ASSERT_TRUE(r.solved) << "the whole ILP improves on DRAM-until-full";
    EXPECT_FALSE(r.cost.oom);
    EXPECT_LT(r.cost.total_ns, r.greedy.cost.total_ns);
    EXPECT_DOUBLE_EQ(r.cost.total_ns, EvaluatePlan(c.w, r.plan).total_ns);

    // The same formulation solved from first-touch reaches the same optimum.
    const AutoTmIlpResult whole = SolveWholeProgram(
        c, mode == MigrationMode::kSync ? AutoTmFormulation::kSynchronous : AutoTmFormulation::kAsynchronous);
    ASSERT_EQ(whole.mip.status, "optimal");
    EXPECT_NEAR(r.cost.total_ns, EvaluatePlan(c.w, whole.plan).total_ns, 1e-6 * r.cost.total_ns);
  }
}

TEST(GuidedIlp, FixingThePolicysSureDecisionsRestrictsTheSolver) {
  Case c = SmallCase(MigrationMode::kSync);
  PlacementEnv env(c.w, c.env);
  const GuidedIlpResult free = SolveGuidedIlp(env, PrefersDram(), Options(0));
  const GuidedIlpResult half = SolveGuidedIlp(env, PrefersDram(), Options(0.5));
  const GuidedIlpResult all = SolveGuidedIlp(env, PrefersDram(), Options(1));
  EXPECT_EQ(half.location_variables, free.location_variables);
  EXPECT_GT(half.solves.at(0).fixed_variables, 0);
  EXPECT_LT(half.solves.at(0).fixed_variables, all.solves.at(0).fixed_variables);
  EXPECT_LE(all.solves.at(0).fixed_variables, all.location_variables);
  // Each is solved to optimality over what it leaves free: fixing more can
  // only cost time, and nothing is worse than the policy's own plan.
  EXPECT_LE(free.cost.total_ns, half.cost.total_ns * (1 + 1e-9));
  EXPECT_LE(half.cost.total_ns, all.cost.total_ns * (1 + 1e-9));
  EXPECT_LE(all.cost.total_ns, all.greedy.cost.total_ns * (1 + 1e-9));
  EXPECT_DOUBLE_EQ(all.greedy.cost.total_ns, free.greedy.cost.total_ns);
}

TEST(GuidedIlp, EachSolveFixesLessAndStartsFromTheBestPlanSoFar) {
  Case c = SmallCase(MigrationMode::kSync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({1, 0.5, 0});
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_EQ(r.solves.size(), 3u);
  EXPECT_GT(r.solves[0].fixed_variables, r.solves[1].fixed_variables);
  EXPECT_EQ(r.solves[2].fixed_variables, 0);
  double best = r.greedy.cost.total_ns;
  for (const GuidedIlpSolve& s : r.solves) {
    ASSERT_EQ(s.mip.status, "optimal");
    // Started from the best plan so far, a solve over a superset of its
    // freedom never ends worse than it.
    EXPECT_LE(s.cost_ns, best * (1 + 1e-9));
    EXPECT_EQ(s.improved, s.cost_ns < best);
    if (s.improved) best = s.cost_ns;
    EXPECT_TRUE(s.mip.values.empty());
  }
  EXPECT_DOUBLE_EQ(r.cost.total_ns, best);
  // The last solve fixed nothing: the whole program's optimum.
  const GuidedIlpResult whole = SolveGuidedIlp(env, PrefersDram(), Options(0));
  EXPECT_NEAR(r.cost.total_ns, whole.cost.total_ns, 1e-6 * whole.cost.total_ns);
}

// A network's surest decisions can be wrong (a model it never saw): every
// share's program keeps some of them, so the synchronous phase ends with its
// whole program before the asynchronous solves start from its plan.
TEST(GuidedIlp, InAsyncModeTheWholeSynchronousProgramFollowsItsShares) {
  Case c = SmallCase(MigrationMode::kAsync);
  PlacementEnv env(c.w, c.env);
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), Options({1, 0.5}));
  ASSERT_EQ(r.solves.size(), 5u);
  const std::vector<std::string> formulations = {"synchronous", "synchronous", "synchronous", "asynchronous",
                                                 "asynchronous"};
  const std::vector<double> shares = {1, 0.5, 0, 1, 0.5};
  for (size_t i = 0; i < r.solves.size(); ++i) {
    EXPECT_EQ(r.solves[i].formulation, formulations[i]) << "solve " << i;
    EXPECT_DOUBLE_EQ(r.solves[i].fixed_share, shares[i]) << "solve " << i;
  }
  EXPECT_EQ(r.solves[2].fixed_variables, 0);
  EXPECT_DOUBLE_EQ(r.solves[2].target_gap, Options(0).mip_gap);
  // The whole synchronous program's optimum is where the asynchronous
  // solves start: none of them ends slower than it.
  const AutoTmIlpResult whole = SolveWholeProgram(c, AutoTmFormulation::kSynchronous);
  ASSERT_EQ(whole.mip.status, "optimal");
  const double sync_optimum_ns = EvaluatePlan(c.w, whole.plan).total_ns;
  for (size_t i = 3; i < r.solves.size(); ++i) EXPECT_LE(r.solves[i].cost_ns, sync_optimum_ns * (1 + 1e-6));
  EXPECT_LE(r.cost.total_ns, sync_optimum_ns * (1 + 1e-6));
}

// By default the synchronous phase of async mode is the whole synchronous
// program alone, from the policy's plan, then the asynchronous solves.
TEST(GuidedIlp, ByDefaultTheSynchronousPhaseIsTheWholeProgramAlone) {
  Case c = SmallCase(MigrationMode::kAsync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({1, 0.5});
  o.synchronous_shares_in_async = false;
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_EQ(r.solves.size(), 3u);
  EXPECT_EQ(r.solves[0].formulation, "synchronous");
  EXPECT_DOUBLE_EQ(r.solves[0].fixed_share, 0);
  EXPECT_EQ(r.solves[0].fixed_variables, 0);
  for (size_t i = 1; i < 3; ++i) EXPECT_EQ(r.solves[i].formulation, "asynchronous") << "solve " << i;
  const AutoTmIlpResult whole = SolveWholeProgram(c, AutoTmFormulation::kSynchronous);
  ASSERT_EQ(whole.mip.status, "optimal");
  EXPECT_LE(r.cost.total_ns, EvaluatePlan(c.w, whole.plan).total_ns * (1 + 1e-6));
  // In sync mode the shares stay.
  Case sync = SmallCase(MigrationMode::kSync);
  PlacementEnv sync_env(sync.w, sync.env);
  EXPECT_EQ(SolveGuidedIlp(sync_env, PrefersDram(), o).solves.size(), 2u);
}

// One share's program can stall CBC: each share may use only a fraction of
// the time left, and the whole program from the best plan follows even a
// share that ran out of its time.
TEST(GuidedIlp, ASharesSolveGetsAFractionOfTheTimeAndTheWholeProgramTheRest) {
  Case c = SmallCase(MigrationMode::kSync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({0.9, 0.5});
  o.share_time_fraction = 1e-6;  // 30 microseconds: too little for any share
  o.final_mip_gap = 1e-9;
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_GE(r.solves.size(), 2u);
  for (size_t i = 0; i + 1 < r.solves.size(); ++i) {
    EXPECT_GT(r.solves[i].fixed_share, 0) << "solve " << i;
    EXPECT_LE(r.solves[i].time_limit_seconds, 30e-6) << "solve " << i;
  }
  const GuidedIlpSolve& whole = r.solves.back();
  EXPECT_EQ(whole.fixed_share, 0);
  EXPECT_EQ(whole.fixed_variables, 0);
  EXPECT_GT(whole.time_limit_seconds, 20);  // all that was left of 30 s
  ASSERT_EQ(whole.mip.status, "optimal");
  const AutoTmIlpResult optimum = SolveWholeProgram(c, AutoTmFormulation::kSynchronous);
  ASSERT_EQ(optimum.mip.status, "optimal");
  EXPECT_NEAR(r.cost.total_ns, EvaluatePlan(c.w, optimum.plan).total_ns, 1e-6 * r.cost.total_ns);

  o.share_time_fraction = 0;
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), o), std::invalid_argument);
  o.share_time_fraction = 1.5;
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), o), std::invalid_argument);
}

TEST(GuidedIlp, InAsyncModeTheAsynchronousFormulationStartsFromTheSynchronousOnesBest) {
  Case c = SmallCase(MigrationMode::kAsync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({0.5, 0});
  const GuidedIlpResult both = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_EQ(both.solves.size(), 4u);
  double best = both.greedy.cost.total_ns;
  for (size_t i = 0; i < both.solves.size(); ++i) {
    const GuidedIlpSolve& s = both.solves[i];
    EXPECT_EQ(s.formulation, i < 2 ? "synchronous" : "asynchronous");
    ASSERT_EQ(s.mip.status, "optimal");
    // Each starts from the best plan before it: none ends slower.
    EXPECT_LE(s.cost_ns, best * (1 + 1e-9)) << "solve " << i;
    if (s.improved) best = s.cost_ns;
  }
  EXPECT_DOUBLE_EQ(both.cost.total_ns, best);
  // The asynchronous formulation alone, to its optimum, ends where both do:
  // the synchronous solves only change where the asynchronous ones start.
  o.synchronous_first_in_async = false;
  const GuidedIlpResult async_only = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_EQ(async_only.solves.size(), 2u);
  EXPECT_EQ(async_only.formulation, "asynchronous");
  EXPECT_NEAR(both.cost.total_ns, async_only.cost.total_ns, 1e-6 * async_only.cost.total_ns);
}

TEST(GuidedIlp, TimeLeftAfterTheSharesGoesToTheWholeProgramAtTheFinalGap) {
  Case c = SmallCase(MigrationMode::kSync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({0.9});
  o.mip_gap = 0.5;  // the share's solve may stop far from its optimum
  o.final_mip_gap = 1e-9;
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_EQ(r.solves.size(), 2u);
  EXPECT_GT(r.solves[0].fixed_variables, 0);
  EXPECT_DOUBLE_EQ(r.solves[0].target_gap, 0.5);
  EXPECT_EQ(r.solves[1].fixed_share, 0);
  EXPECT_EQ(r.solves[1].fixed_variables, 0);
  EXPECT_DOUBLE_EQ(r.solves[1].target_gap, 1e-9);
  EXPECT_EQ(r.solves[1].mip.status, "optimal");
  // The whole program's optimum, whatever the share's solve stopped at.
  const GuidedIlpResult whole = SolveGuidedIlp(env, PrefersDram(), Options(0));
  EXPECT_NEAR(r.cost.total_ns, whole.cost.total_ns, 1e-6 * whole.cost.total_ns);
  // Not when the shares used the time up, nor when the final gap is 0.
  o.final_mip_gap = 0;
  EXPECT_EQ(SolveGuidedIlp(env, PrefersDram(), o).solves.size(), 1u);
}

// The asynchronous windows (large-neighbourhood search): each frees the
// segments inside a run of kernels and fixes the rest to the best plan so
// far, so none ends slower than that plan; the first pass covers every
// kernel; where the asynchronous program has room to overlap copies, they
// improve on the synchronous phase's plan.
TEST(GuidedIlp, AsyncWindowsCoverTheKernelsAndImproveOnTheSynchronousPlan) {
  Case c = SmallCase(MigrationMode::kAsync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({1});  // the synchronous share fixes everything: no change
  o.async_windows = true;
  const int32_t K = static_cast<int32_t>(c.w.num_kernels());
  o.window_kernels = std::max<int32_t>(2, K / 6);
  o.window_time_fraction = 1;
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  std::vector<int> covered(K, 0);
  double best = std::numeric_limits<double>::infinity();
  bool any_window = false;
  for (const GuidedIlpSolve& s : r.solves) {
    if (s.window_first < 0) {
      if (s.formulation == "synchronous" && s.improved) best = std::min(best, s.cost_ns);
      continue;
    }
    any_window = true;
    EXPECT_EQ(s.formulation, "asynchronous");
    EXPECT_EQ(s.fixed_share, -1);
    EXPECT_LE(s.window_first, s.window_last);
    EXPECT_LT(s.window_last, K);
    for (int32_t k = s.window_first; k <= s.window_last; ++k) covered[k] = 1;
    if (s.window_last - s.window_first + 1 < K) {
      EXPECT_GT(s.fixed_variables, 0) << "a window fixes what lies outside it";
    }
  }
  ASSERT_TRUE(any_window);
  for (int32_t k = 0; k < K; ++k) EXPECT_EQ(covered[k], 1) << "kernel " << k;
  // A window solved in time is not solved again before the plan changes:
  // CBC with fixed seeds would give the same.
  std::set<std::pair<int32_t, int32_t>> clean;
  for (const GuidedIlpSolve& s : r.solves) {
    if (s.window_first < 0) continue;
    const std::pair<int32_t, int32_t> window{s.window_first, s.window_last};
    EXPECT_EQ(clean.count(window), 0u) << "kernels " << s.window_first << "-" << s.window_last << " solved again";
    if (s.improved) clean.clear();
    if (s.mip.status != "time-limit") clean.insert(window);
  }
  // The synchronous phase's plan, then the windows: asynchronous copies
  // overlap kernels where the synchronous plan blocks.
  const double synchronous_plan = std::isfinite(best) ? best : r.greedy.cost.total_ns;
  EXPECT_LT(r.cost.total_ns, synchronous_plan * (1 - 1e-6));
  // And no worse than the greedy plan, as every guided solve.
  EXPECT_LE(r.cost.total_ns, r.greedy.cost.total_ns);
  EXPECT_DOUBLE_EQ(r.cost.total_ns, EvaluatePlan(c.w, r.plan).total_ns);
}

// A window solved well within its time doubles the size of the next ones,
// up to the whole workload: a small model ends with its whole program.
TEST(GuidedIlp, FastWindowsGrowToTheWholeWorkload) {
  Case c = SmallCase(MigrationMode::kAsync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({1});
  o.async_windows = true;
  o.window_kernels = 2;
  o.window_time_fraction = 1;
  o.time_limit_seconds = 600;  // every small window is fast against a tenth of its cap
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  int32_t widest = 0;
  for (const GuidedIlpSolve& s : r.solves)
    if (s.window_first >= 0) widest = std::max(widest, s.window_last - s.window_first + 1);
  EXPECT_EQ(widest, static_cast<int32_t>(c.w.num_kernels()));
  // The whole asynchronous program solved to its optimum: AutoTM-async's.
  const AutoTmIlpResult whole = SolveWholeProgram(c, AutoTmFormulation::kAsynchronous);
  ASSERT_EQ(whole.mip.status, "optimal");
  EXPECT_NEAR(r.cost.total_ns, EvaluatePlan(c.w, whole.plan).total_ns, 1e-6 * r.cost.total_ns);
}

// Kept for a caller that measures plans: the greedy plan first, each
// formulation's best, plans on the way to the last one's, the best last;
// no plan twice, each with its cost-model time. Off by default.
TEST(GuidedIlp, CandidatesAreTheGreedyPlanEachFormulationsBestAndTheWayThereBestLast) {
  Case c = SmallCase(MigrationMode::kAsync);
  PlacementEnv env(c.w, c.env);
  GuidedIlpOptions o = Options({1});
  o.async_windows = true;
  o.window_kernels = std::max<int32_t>(2, static_cast<int32_t>(c.w.num_kernels()) / 6);
  o.window_time_fraction = 1;
  EXPECT_TRUE(SolveGuidedIlp(env, PrefersDram(), o).candidates.empty());
  o.keep_candidates = true;
  o.trail_candidates = 2;
  const GuidedIlpResult r = SolveGuidedIlp(env, PrefersDram(), o);
  ASSERT_GE(r.candidates.size(), 3u);
  EXPECT_EQ(r.candidates.front().source, "greedy");
  EXPECT_EQ(r.candidates.front().plan, r.greedy.plan);
  EXPECT_EQ(r.candidates.back().source, "asynchronous");
  EXPECT_EQ(r.candidates.back().plan, r.plan);
  EXPECT_DOUBLE_EQ(r.candidates.back().cost_ns, r.cost.total_ns);
  int synchronous = 0, on_the_way = 0, improved_async = 0, improved_sync = 0;
  for (const GuidedIlpSolve& s : r.solves) {
    improved_async += s.improved && s.formulation == "asynchronous";
    improved_sync += s.improved && s.formulation == "synchronous";
  }
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const GuidedIlpCandidate& x = r.candidates[i];
    // The synchronous program's best, also where it did not beat the greedy plan.
    synchronous += x.source == (improved_sync ? "synchronous" : "synchronous, not better on the cost model");
    if (x.source.rfind("asynchronous, improvement ", 0) == 0) ++on_the_way;
    EXPECT_DOUBLE_EQ(x.cost_ns, EvaluatePlan(c.w, x.plan).total_ns) << x.source;
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(r.candidates[j].plan == x.plan) << x.source << " twice";
  }
  EXPECT_EQ(synchronous, 1);
  ASSERT_GE(improved_async, 2) << "the case must improve on its way for the trail to be tested";
  EXPECT_EQ(on_the_way, std::min(2, std::max(0, improved_async - 1)));
  // Each later plan that beat the one before is better on the cost model:
  // they are the best so far.
  double best = r.candidates.front().cost_ns;
  for (size_t i = 1; i < r.candidates.size(); ++i) {
    if (r.candidates[i].source.find("not better") != std::string::npos) {
      EXPECT_GE(r.candidates[i].cost_ns, best);
      continue;
    }
    EXPECT_LT(r.candidates[i].cost_ns, best) << r.candidates[i].source;
    best = r.candidates[i].cost_ns;
  }
}

TEST(GuidedIlp, RefusesBadSharesAndNoTime) {
  Case c = SmallCase(MigrationMode::kSync);
  PlacementEnv env(c.w, c.env);
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), Options(-0.1)), std::invalid_argument);
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), Options(1.5)), std::invalid_argument);
  GuidedIlpOptions rising = Options(0.5);
  rising.fixed_shares = {0.5, 0.7};
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), rising), std::invalid_argument);
  rising.fixed_shares.clear();
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), rising), std::invalid_argument);
  GuidedIlpOptions no_time = Options(0.5);
  no_time.time_limit_seconds = 0;
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), no_time), std::invalid_argument);
  GuidedIlpOptions windows = Options(0.5);
  windows.window_time_fraction = 0;
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), windows), std::invalid_argument);
  windows.window_time_fraction = 0.2;
  windows.window_kernels = -1;
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), windows), std::invalid_argument);
  windows.window_kernels = 0;
  windows.trail_candidates = -1;
  EXPECT_THROW(SolveGuidedIlp(env, PrefersDram(), windows), std::invalid_argument);
}

TEST(HeatGuidedIlp, StartsFromHeatOrderAndFixesTheHottestDecisionsToDram) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    Case c = SmallCase(mode);
    PolicyContext ctx;
    ctx.dram_limit_bytes = c.env.dram_limit_bytes;
    ctx.mode = mode;
    ctx.mip_gap = 0;
    ctx.solver_time_limit_seconds = 30;
    const PolicyResult r = MakePolicy("heat+ilp")->Decide(c.w, ctx);
    EXPECT_EQ(r.plan.produced_by, "heat+ilp");
    ASSERT_TRUE(r.solver.has_value());
    EXPECT_GE(r.solver->solves, 1);
    const CostReport cost = EvaluatePlan(c.w, r.plan);
    EXPECT_FALSE(cost.oom);
    // Heat order's own plan is the constant DRAM action's episode: the
    // policy starts there and never ends slower.
    PlacementEnv env(c.w, c.env);
    const EpisodeSummary heat_order = RunEpisode(env, [](const Observation&) { return 0; });
    EXPECT_DOUBLE_EQ(r.stats.at("heat_order_cost_ns"), heat_order.cost.total_ns);
    EXPECT_LT(cost.total_ns, heat_order.cost.total_ns) << "the solves improve on DRAM-until-full";
    // Every decision asks for DRAM, so heat ranks them: the first solve
    // fixes the hottest 90% of heat order's decisions and cannot end slower.
    const GuidedIlpResult first = SolveGuidedIlp(env, HeatOrderScores(), Options(0.9));
    EXPECT_GT(first.solves.at(0).fixed_variables, 0);
    EXPECT_LE(first.cost.total_ns, heat_order.cost.total_ns * (1 + 1e-9));
  }
}

// Beside a pinned buffer, heat+ilp plans under the same limit as AutoTM
// (the limit less the buffer, taken off once), so both reach the same
// optimum of the same program.
TEST(HeatGuidedIlp, PlansBesideAPinnedBufferUnderTheSameLimitAsAutoTm) {
  const Workload plain = Synthetic(SyntheticShape::kVggLike, 3, 2);
  PolicyContext ctx;
  ctx.dram_limit_bytes = Fraction(plain, 0.3);
  const Workload w = testing::WithPinnedBuffer(plain, ctx.dram_limit_bytes / 4);
  ctx.mip_gap = 0;
  ctx.solver_time_limit_seconds = 30;
  const PolicyResult heat = MakePolicy("heat+ilp")->Decide(w, ctx);
  const PolicyResult autotm = MakePolicy("autotm-sync")->Decide(w, ctx);
  ASSERT_EQ(autotm.solver->status, "optimal");
  EXPECT_EQ(heat.plan.dram_limit_bytes, ctx.dram_limit_bytes);
  EXPECT_NEAR(EvaluatePlan(w, heat.plan).total_ns, EvaluatePlan(w, autotm.plan).total_ns,
              1e-6 * EvaluatePlan(w, autotm.plan).total_ns);
}

TEST(HeatGuidedIlp, WithoutALimitKeepsEverythingInDram) {
  Case c = SmallCase(MigrationMode::kSync);
  PolicyContext ctx;  // no DRAM limit
  ctx.solver_time_limit_seconds = 10;
  const PolicyResult r = MakePolicy("heat+ilp")->Decide(c.w, ctx);
  EXPECT_DOUBLE_EQ(EvaluatePlan(c.w, r.plan).total_ns, MinCostNs(c.w));
}

}  // namespace
}  // namespace tensortier
