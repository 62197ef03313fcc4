// Every policy behind MakePolicy: names, the DRAM limit on random graphs
// under the cost model, and the semantics of the simple ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "policies/cached_arrays.h"
#include "policies/plan_tools.h"
#include "policies/policy.h"
#include "policies/relaxation.h"
#include "tests/policies/policy_test_util.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {

using testing::Fraction;
using testing::LimitAt;
using testing::HandGraph;
using testing::NearlyEqual;
using testing::Synthetic;

TEST(PolicyRegistry, MakesEveryListedPolicyUnderItsName) {
  const std::vector<std::string> expected = {"all-dram",      "all-slow",    "random",      "first-touch",
                                             "sentinel",      "autotm-static", "autotm-sync", "autotm-async",
                                             "deeptm-heuristic", "ca-l",     "ca-lm",       "ca-lmp",
                                             "heat+ilp",      "relaxation"};
  EXPECT_EQ(PolicyNames(), expected);
  for (const std::string& name : PolicyNames()) EXPECT_EQ(MakePolicy(name)->name(), name);
}

TEST(PolicyRegistry, RejectsUnknownNamesAndListsTheValidOnes) {
  for (const char* bad : {"", "Sentinel", "autotm", "deeptm", "ca"}) {
    try {
      MakePolicy(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'" + std::string(bad) + "'"), std::string::npos) << what;
      for (const std::string& name : PolicyNames()) EXPECT_NE(what.find(name), std::string::npos) << what;
    }
  }
}

// The central guarantee: whatever the graph, limit and mode, a policy's plan
// never runs out of DRAM under the cost model (all-slow always fits, so a
// plan that fits always exists). all-DRAM is the unlimited ideal.
TEST(PolicyLimits, EveryPolicyRespectsTheDramLimitOnRandomGraphs) {
  struct Shape {
    SyntheticShape shape;
    int layers;
  };
  const std::vector<Shape> shapes = {{SyntheticShape::kVggLike, 4},
                                     {SyntheticShape::kResnetLike, 4},
                                     {SyntheticShape::kMobilenetLike, 3},
                                     {SyntheticShape::kTiny, 5}};
  int plans = 0;
  for (const Shape& s : shapes) {
    for (uint64_t seed : {3, 17}) {
      const Workload w = Synthetic(s.shape, s.layers, seed);
      for (double f : {0.2, 0.4, 0.6, 0.8}) {
        for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
          PolicyContext ctx;
          ctx.dram_limit_bytes = Fraction(w, f);
          ctx.mode = mode;
          ctx.seed = seed;
          // Short solves: a time-limited ILP must still return a plan that
          // fits (its MIP start does). Some of these programs crash CBC's
          // preprocessing (heat+ilp's, with most variables fixed): the solve
          // runs in a child process and the plan before it stands.
          ctx.mip_gap = 0.05;
          ctx.solver_time_limit_seconds = 0.3;
          for (const std::string& name : PolicyNames()) {
            if (name == "all-dram") continue;
            SCOPED_TRACE(name + " on " + w.name + " seed " + std::to_string(seed) + " fraction " +
                         std::to_string(f) + " " + MigrationModeName(mode));
            const PolicyResult r = MakePolicy(name)->Decide(w, ctx);
            EXPECT_EQ(r.plan.produced_by, name);
            EXPECT_EQ(r.plan.dram_limit_bytes, ctx.dram_limit_bytes);
            EXPECT_EQ(r.plan.mode, mode);
            EXPECT_GE(r.decision_seconds, 0);
            const CostReport c = EvaluatePlan(w, r.plan);
            EXPECT_FALSE(c.oom) << "kernel " << c.oom_kernel << " over by " << c.oom_excess_bytes;
            EXPECT_LE(c.dram_peak_bytes, ctx.dram_limit_bytes);
            // Sentinel and AutoTM book DRAM exactly as the cost model counts
            // it, and in sync mode so does everything else: no repair.
            if (name == "sentinel" || name.rfind("autotm", 0) == 0 || mode == MigrationMode::kSync) {
              auto it = r.stats.find("repairs");
              if (it != r.stats.end()) {
                EXPECT_EQ(it->second, 0);
              }
            }
            ++plans;
          }
        }
      }
    }
  }
  EXPECT_EQ(plans, 4 * 2 * 4 * 2 * static_cast<int>(PolicyNames().size() - 1));
}

// A buffer the framework holds in DRAM (a TorchScript module's debug
// records) is in every plan's DRAM: each policy plans the rest under what it
// leaves, and its plan says the buffer stays in DRAM.
TEST(PolicyLimits, EveryPolicyKeepsPinnedTensorsInDramAndFitsBesideThem) {
  const Workload plain = Synthetic(SyntheticShape::kResnetLike, 4, 3);
  const Workload w = testing::WithPinnedBuffer(plain, plain.peak_live_bytes() / 20);
  const uint32_t pinned = static_cast<uint32_t>(w.num_tensors() - 1);
  for (double f : {0.2, 0.4}) {
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      PolicyContext ctx = LimitAt(w, f);
      ctx.mode = mode;
      ctx.mip_gap = 0.05;
      ctx.solver_time_limit_seconds = 0.3;
      for (const std::string& name : PolicyNames()) {
        if (name == "all-dram") continue;
        SCOPED_TRACE(name + " fraction " + std::to_string(f) + " " + MigrationModeName(mode));
        const PolicyResult r = MakePolicy(name)->Decide(w, ctx);
        EXPECT_EQ(r.plan.initial_tiers[pinned], Tier::kDram);
        for (const Migration& m : r.plan.migrations) EXPECT_NE(m.tensor, pinned);
        EXPECT_EQ(r.plan.dram_limit_bytes, ctx.dram_limit_bytes);
        const CostReport c = EvaluatePlan(w, r.plan);
        EXPECT_FALSE(c.oom) << "kernel " << c.oom_kernel << " over by " << c.oom_excess_bytes;
        EXPECT_LE(c.dram_peak_bytes, ctx.dram_limit_bytes);
      }
    }
  }
  PolicyContext full;
  full.dram_limit_bytes = w.pinned_dram_bytes();
  EXPECT_THROW(MakePolicy("first-touch")->Decide(w, full), std::invalid_argument);
}

// A policy plans beside the pinned bytes as it plans the workload without
// them under the limit they leave: the pinned buffer is not charged twice,
// however large a share of the limit it holds.
TEST(PolicyLimits, PinnedBytesAreChargedOnceWhateverShareOfTheLimitTheyHold) {
  const Workload plain = Synthetic(SyntheticShape::kResnetLike, 4, 3);
  const uint64_t limit = testing::Fraction(plain, 0.4);
  for (double share : {0.05, 0.6}) {
    const uint64_t pinned_bytes = static_cast<uint64_t>(static_cast<double>(limit) * share);
    const Workload w = testing::WithPinnedBuffer(plain, pinned_bytes);
    for (const char* name : {"first-touch", "sentinel", "ca-lm", "deeptm-heuristic", "autotm-sync", "heat+ilp"}) {
      SCOPED_TRACE(std::string(name) + " pinned share " + std::to_string(share));
      PolicyContext with_pinned, without;
      with_pinned.dram_limit_bytes = limit;
      with_pinned.mip_gap = 0.05;
      without = with_pinned;
      without.dram_limit_bytes = limit - pinned_bytes;
      const PolicyResult a = MakePolicy(name)->Decide(w, with_pinned);
      const PolicyResult b = MakePolicy(name)->Decide(plain, without);
      ASSERT_EQ(a.plan.initial_tiers.size(), b.plan.initial_tiers.size() + 1);
      EXPECT_EQ(a.plan.initial_tiers.back(), Tier::kDram);
      EXPECT_TRUE(std::equal(b.plan.initial_tiers.begin(), b.plan.initial_tiers.end(), a.plan.initial_tiers.begin()));
      EXPECT_EQ(a.plan.migrations, b.plan.migrations);
      EXPECT_EQ(a.plan.dram_limit_bytes, limit);
      EXPECT_FALSE(EvaluatePlan(w, a.plan).oom);
    }
  }
}

// The relaxation reports its bound as a solver's: in sync mode the
// relaxation's, which holds for every sync plan (AutoTM-sync's included); in
// async mode the async bound's, which holds for every async plan
// (AutoTM-async's included).
TEST(Relaxation, ItsBoundsCapAutoTmsPlansInEachMode) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 4, 3);
  PolicyContext ctx = LimitAt(w, 0.3);
  ctx.solver_time_limit_seconds = 5;
  const PolicyResult sync = MakePolicy("relaxation")->Decide(w, ctx);
  ASSERT_TRUE(sync.solver.has_value());
  EXPECT_EQ(sync.solver->status, "relaxation");
  EXPECT_TRUE(sync.solver->bound_caps_cost_model);
  const double cost = EvaluatePlan(w, sync.plan).total_ns;
  EXPECT_DOUBLE_EQ(sync.solver->objective_ns, cost);
  EXPECT_LE(sync.solver->bound_ns, cost + 1e-6);
  EXPECT_GE(sync.solver->bound_ns, MinCostNs(w) - 1e-6);
  EXPECT_LE(sync.solver->bound_ns, EvaluatePlan(w, MakePolicy("autotm-sync")->Decide(w, ctx).plan).total_ns + 1e-6);
  EXPECT_LT(cost, EvaluatePlan(w, MakePolicy("first-touch")->Decide(w, ctx).plan).total_ns);

  ctx.mode = MigrationMode::kAsync;
  const PolicyResult async = MakePolicy("relaxation")->Decide(w, ctx);
  EXPECT_EQ(async.plan.mode, MigrationMode::kAsync);
  EXPECT_FALSE(EvaluatePlan(w, async.plan).oom);
  ASSERT_TRUE(async.solver.has_value());
  EXPECT_EQ(async.solver->status, "async bound");
  EXPECT_TRUE(async.solver->bound_caps_cost_model);
  const double async_cost = EvaluatePlan(w, async.plan).total_ns;
  EXPECT_DOUBLE_EQ(async.solver->objective_ns, async_cost);
  EXPECT_LE(async.solver->bound_ns, async_cost + 1e-6);
  EXPECT_GT(async.solver->bound_ns, MinCostNs(w));
  EXPECT_LE(async.solver->bound_ns, EvaluatePlan(w, MakePolicy("autotm-async")->Decide(w, ctx).plan).total_ns + 1e-6);
  // Without the bound (the plan-time search's start): the same kind of plan, no solver line.
  const PolicyResult plan_only = DecideRelaxationPlan(w, ctx);
  EXPECT_FALSE(plan_only.solver.has_value());
  EXPECT_EQ(plan_only.plan.mode, MigrationMode::kAsync);
  EXPECT_FALSE(EvaluatePlan(w, plan_only.plan).oom);
}

TEST(AllDram, IgnoresTheLimitAndIsTheIdeal) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 3, 1);
  PolicyContext ctx = LimitAt(w, 0.2);
  const PlacementPlan plan = MakePolicy("all-dram")->Plan(w, ctx);
  EXPECT_EQ(plan.dram_limit_bytes, 0u);
  EXPECT_TRUE(plan.migrations.empty());
  EXPECT_TRUE(NearlyEqual(EvaluatePlan(w, plan).total_ns, MinCostNs(w)));
}

TEST(AllSlow, PutsEverythingInTheSlowTier) {
  const Workload w = Synthetic(SyntheticShape::kVggLike, 3, 1);
  PolicyContext ctx = LimitAt(w, 0.2);
  const PlacementPlan plan = MakePolicy("all-slow")->Plan(w, ctx);
  for (Tier t : plan.initial_tiers) EXPECT_EQ(t, Tier::kSlow);
  EXPECT_TRUE(plan.migrations.empty());
  EXPECT_TRUE(NearlyEqual(EvaluatePlan(w, plan).total_ns, MaxCostNs(w)));
}

TEST(Random, IsStaticSeededAndUsesDram) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 4, 2);
  PolicyContext ctx = LimitAt(w, 0.5);
  ctx.seed = 7;
  const auto policy = MakePolicy("random");
  const PlacementPlan a = policy->Plan(w, ctx), b = policy->Plan(w, ctx);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(a.migrations.empty());
  ctx.seed = 8;
  EXPECT_NE(policy->Plan(w, ctx).initial_tiers, a.initial_tiers);
  int in_dram = 0;
  for (Tier t : a.initial_tiers) in_dram += t == Tier::kDram;
  EXPECT_GT(in_dram, 0);
  EXPECT_LT(in_dram, static_cast<int>(w.num_tensors()));
}

// First-touch (AutoTM's definition): a tensor goes to DRAM when it is
// created if it fits at that moment, else to the slow tier, and never moves;
// DRAM freed by dead tensors is reused.
TEST(FirstTouch, AllocatesInDramUntilFullAndNeverMoves) {
  const Workload w = HandGraph();  // k0 creates A 1000, B 500, D 200; k1 creates C 400; B dies after k1
  PolicyContext ctx;
  ctx.dram_limit_bytes = 1500;
  const PlacementPlan plan = MakePolicy("first-touch")->Plan(w, ctx);
  using testing::kA;
  using testing::kB;
  using testing::kC;
  using testing::kD;
  EXPECT_EQ(plan.initial_tiers[kA], Tier::kDram);
  EXPECT_EQ(plan.initial_tiers[kB], Tier::kDram);
  EXPECT_EQ(plan.initial_tiers[kD], Tier::kSlow);  // 1700 > 1500 at k0
  EXPECT_EQ(plan.initial_tiers[kC], Tier::kSlow);  // B still live at k1
  EXPECT_TRUE(plan.migrations.empty());
  PlacementPlan expected = FirstTouchPlan(w, 1500);
  EXPECT_EQ(plan.initial_tiers, expected.initial_tiers);

  ctx.dram_limit_bytes = 2100;
  const PlacementPlan roomy = MakePolicy("first-touch")->Plan(w, ctx);
  for (Tier t : roomy.initial_tiers) EXPECT_EQ(t, Tier::kDram);
}

TEST(FirstTouch, ReusesDramOfFreedTensors) {
  Workload w;
  w.kernels = {{"k0", 10}, {"k1", 10}, {"k2", 10}};
  w.tensors = {{"early", 1000, TensorKind::kActivation, 0, 0, false},
               {"late", 1000, TensorKind::kActivation, 1, 2, false}};
  w.accesses = {{0, 0, 0, 1, 5}, {1, 1, 0, 1, 5}, {2, 1, 1, 0, 5}};
  w.Finalize();
  PolicyContext ctx;
  ctx.dram_limit_bytes = 1000;
  const PlacementPlan plan = MakePolicy("first-touch")->Plan(w, ctx);
  EXPECT_EQ(plan.initial_tiers[0], Tier::kDram);
  EXPECT_EQ(plan.initial_tiers[1], Tier::kDram);
  EXPECT_FALSE(EvaluatePlan(w, plan).oom);
}

TEST(DeepTmHeuristic, KeepsEverythingInDramWithoutABottleneck) {
  const Workload w = Synthetic(SyntheticShape::kMobilenetLike, 3, 1);
  PolicyContext ctx;
  ctx.dram_limit_bytes = w.peak_live_bytes();
  const PlacementPlan plan = MakePolicy("deeptm-heuristic")->Plan(w, ctx);
  EXPECT_TRUE(NearlyEqual(EvaluatePlan(w, plan).total_ns, MinCostNs(w)));
}

TEST(DeepTmHeuristic, MovesTensorsBetweenKernelsUnderPressure) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 4, 1);
  PolicyContext ctx = LimitAt(w, 0.3);
  const PolicyResult r = MakePolicy("deeptm-heuristic")->Decide(w, ctx);
  EXPECT_FALSE(r.plan.migrations.empty());
  int in_dram = 0;
  for (Tier t : r.plan.initial_tiers) in_dram += t == Tier::kDram;
  EXPECT_GT(in_dram, 0);
}

TEST(CachedArrays, HintsFollowTheGraph) {
  const Workload w = HandGraph();
  using testing::kA;
  using testing::kB;
  const std::vector<CaKernelHints> hints = DeriveCachedArraysHints(w, /*retire=*/true);
  ASSERT_EQ(hints.size(), 3u);
  auto has = [](const std::vector<CaHint>& v, uint32_t t, CaHintKind kind) {
    for (const CaHint& h : v)
      if (h.tensor == t && h.kind == kind) return true;
    return false;
  };
  EXPECT_TRUE(has(hints[0].before, kA, CaHintKind::kWillRead));
  EXPECT_TRUE(has(hints[0].before, kB, CaHintKind::kWillWrite));
  EXPECT_TRUE(has(hints[0].after, kA, CaHintKind::kArchive));   // next use at k2, not k1
  EXPECT_FALSE(has(hints[0].after, kB, CaHintKind::kArchive));  // used again right away
  EXPECT_TRUE(has(hints[1].after, kB, CaHintKind::kRetire));    // dies after k1
  EXPECT_TRUE(has(hints[2].after, kA, CaHintKind::kRetire));
  const std::vector<CaKernelHints> no_retire = DeriveCachedArraysHints(w, /*retire=*/false);
  for (const CaKernelHints& h : no_retire)
    for (const CaHint& x : h.after) EXPECT_NE(x.kind, CaHintKind::kRetire);
}

TEST(CachedArrays, RetireFreesDeadObjectsAndPrefetchMovesReadsIn) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 4, 3);
  PolicyContext ctx = LimitAt(w, 0.3);
  const PolicyResult l = MakePolicy("ca-l")->Decide(w, ctx);
  const PolicyResult lm = MakePolicy("ca-lm")->Decide(w, ctx);
  const PolicyResult lmp = MakePolicy("ca-lmp")->Decide(w, ctx);
  // Without retire, dead objects linger in DRAM until LRU reaches them.
  EXPECT_GT(l.stats.at("lingering_evicted_bytes"), 0);
  EXPECT_EQ(lm.stats.at("lingering_evicted_bytes"), 0);
  EXPECT_GT(lmp.stats.at("moves_in"), lm.stats.at("moves_in"));
  // Local allocation: with DRAM for everything, nothing is ever slow. CA:L
  // needs room for the dead objects as well.
  ctx.dram_limit_bytes = w.peak_live_bytes();
  for (const char* name : {"ca-lm", "ca-lmp"})
    EXPECT_TRUE(NearlyEqual(EvaluatePlan(w, MakePolicy(name)->Plan(w, ctx)).total_ns, MinCostNs(w))) << name;
  uint64_t every_byte = 0;
  for (const Tensor& t : w.tensors) every_byte += t.size_bytes;
  ctx.dram_limit_bytes = every_byte;
  EXPECT_TRUE(NearlyEqual(EvaluatePlan(w, MakePolicy("ca-l")->Plan(w, ctx)).total_ns, MinCostNs(w)));
}

}  // namespace
}  // namespace tensortier
