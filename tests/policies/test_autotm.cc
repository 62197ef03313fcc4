// AutoTM's ILP against brute force: on graphs small enough to enumerate,
// the static ILP must find the best static placement and the synchronous and
// asynchronous ones the best plan of all, each under the cost model.
#include <gtest/gtest.h>

#include <algorithm>

#include "envs/cost_model.h"
#include "envs/demonstration.h"
#include "envs/placement_env.h"
#include "policies/autotm.h"
#include "policies/plan_tools.h"
#include "tests/policies/policy_test_util.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {

using testing::BestPlanNs;
using testing::BestStaticNs;
using testing::Fraction;
using testing::HandGraph;
using testing::NearlyEqual;
using testing::Synthetic;

// Proven optimum, every tensor allowed to move, copies allowed to overlap
// any kernel: the formulation with nothing left out.
AutoTmIlpOptions Exact(AutoTmFormulation f, MigrationMode mode, uint64_t limit,
                       MemoryRows rows = MemoryRows::kPerKernel) {
  AutoTmIlpOptions o;
  o.memory_rows = rows;
  o.formulation = f;
  o.mode = mode;
  o.dram_limit_bytes = limit;
  o.mip_gap = 0;
  o.time_limit_seconds = 30;
  o.min_moved_bytes = 0;
  o.async_window = 1 << 20;
  return o;
}

// The ILP's objective is the cost model's time for the plan it returns.
void ExpectConsistent(const Workload& w, const AutoTmIlpResult& r) {
  const CostReport c = EvaluatePlan(w, r.plan);
  EXPECT_FALSE(c.oom);
  EXPECT_TRUE(NearlyEqual(r.predicted_ns, c.total_ns));
  // The gap reported is the returned plan's, also where a start CBC was
  // given beat its own incumbent.
  EXPECT_DOUBLE_EQ(r.mip.gap, RelativeGap(r.mip.objective, r.mip.bound));
}

std::vector<Workload> TinyGraphs() {
  std::vector<Workload> v;
  v.push_back(HandGraph());
  v.push_back(HandGraph(/*a_persistent=*/true));
  v.push_back(Synthetic(SyntheticShape::kTiny, 1, 3, 64 << 10));
  v.push_back(Synthetic(SyntheticShape::kTiny, 3, 5, 64 << 10));
  v.push_back(Synthetic(SyntheticShape::kVggLike, 1, 7, 64 << 10));
  return v;
}

// Both ways of writing the DRAM rows state the same constraint: every
// brute-force test runs with each.
constexpr MemoryRows kBothMemoryRows[] = {MemoryRows::kPerKernel, MemoryRows::kRunningSum};

TEST(AutoTmIlp, StaticMatchesBruteForceOverEveryStaticPlacement) {
  for (const Workload& w : TinyGraphs()) {
    for (double f : {0.15, 0.3, 0.5, 0.75, 1.0})
    for (MemoryRows rows : kBothMemoryRows) {
      const uint64_t limit = Fraction(w, f);
      const AutoTmIlpResult r = SolveAutoTmIlp(w, Exact(AutoTmFormulation::kStatic, MigrationMode::kSync, limit, rows));
      SCOPED_TRACE(w.name + " fraction " + std::to_string(f) + " " + MemoryRowsName(rows));
      EXPECT_EQ(r.memory_rows, rows);
      EXPECT_TRUE(r.plan.migrations.empty());
      ExpectConsistent(w, r);
      EXPECT_TRUE(NearlyEqual(r.predicted_ns, BestStaticNs(w, limit)));
    }
  }
}

// Graphs whose every plan can be enumerated (at most ~2^15 plans).
std::vector<Workload> EnumerableGraphs() {
  std::vector<Workload> v;
  v.push_back(HandGraph());
  v.push_back(HandGraph(/*a_persistent=*/true));
  v.push_back(Synthetic(SyntheticShape::kTiny, 1, 11, 64 << 10));
  return v;
}

// The formulation's optimum is the best of every plan in `mode`.
void ExpectMatchesBruteForce(AutoTmFormulation formulation, MigrationMode mode, double async_copy_exposure = 0) {
  for (Workload w : EnumerableGraphs()) {
    w.device.async_copy_exposure = async_copy_exposure;
    for (double f : {0.2, 0.4, 0.6, 0.8})
    for (MemoryRows rows : kBothMemoryRows) {
      const uint64_t limit = Fraction(w, f);
      SCOPED_TRACE(w.name + " fraction " + std::to_string(f) + " " + MemoryRowsName(rows));
      const AutoTmIlpResult r = SolveAutoTmIlp(w, Exact(formulation, mode, limit, rows));
      ExpectConsistent(w, r);
      EXPECT_TRUE(NearlyEqual(r.predicted_ns, BestPlanNs(w, limit, mode)));
    }
  }
}

TEST(AutoTmIlp, SynchronousMatchesBruteForceOverEveryPlan) {
  ExpectMatchesBruteForce(AutoTmFormulation::kSynchronous, MigrationMode::kSync);
}

TEST(AutoTmIlp, AsynchronousMatchesBruteForceOverEveryPlan) {
  ExpectMatchesBruteForce(AutoTmFormulation::kAsynchronous, MigrationMode::kAsync);
}

// On a host that pays part of an overlapped copy (or all of it), the
// objective is still the cost model's, and still its optimum.
TEST(AutoTmIlp, AsynchronousMatchesBruteForceWhereTheHostHidesOnlyPartOfACopy) {
  for (double exposure : {0.4, 1.0}) {
    SCOPED_TRACE("exposure " + std::to_string(exposure));
    ExpectMatchesBruteForce(AutoTmFormulation::kAsynchronous, MigrationMode::kAsync, exposure);
  }
}

// Moving is an option, never an obligation: each formulation contains the
// one before it, in both modes, also with the default restrictions.
TEST(AutoTmIlp, SynchronousNeverLosesToStaticNorAsynchronousToSynchronous) {
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike}) {
    const Workload w = Synthetic(shape, 3, 2);
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      for (double f : {0.3}) {
        SCOPED_TRACE(w.name + " " + MigrationModeName(mode) + " fraction " + std::to_string(f));
        AutoTmIlpOptions o;
        o.mode = mode;
        o.dram_limit_bytes = Fraction(w, f);
        o.mip_gap = 0;
        o.time_limit_seconds = 20;
        o.formulation = AutoTmFormulation::kStatic;
        const AutoTmIlpResult st = SolveAutoTmIlp(w, o);
        o.formulation = AutoTmFormulation::kSynchronous;
        const AutoTmIlpResult sy = SolveAutoTmIlp(w, o);
        // The asynchronous relaxation is weak (CBC proves optimality slowly),
        // but it starts from the synchronous solution, so even a solve cut
        // short never loses to it. That start is a synchronous solve of a
        // quarter of the time limit: the limit is set from how long the
        // synchronous solve just took (8x its time for the warm start),
        // so that the machine's load cannot cut the warm start short (a
        // fixed 2 s failed under load: 3.552e6 vs 3.550e6).
        o.formulation = AutoTmFormulation::kAsynchronous;
        o.time_limit_seconds = std::max(2.0, 32 * sy.mip.seconds);
        const AutoTmIlpResult as = SolveAutoTmIlp(w, o);
        for (const AutoTmIlpResult* r : {&st, &sy, &as}) ExpectConsistent(w, *r);
        ASSERT_EQ(sy.mip.status, "optimal");
        EXPECT_LE(sy.predicted_ns, st.predicted_ns * (1 + 1e-9));
        EXPECT_LE(as.predicted_ns, sy.predicted_ns * (1 + 1e-9));
      }
    }
  }
}

// A solve with almost no time still returns a plan that fits. Here CBC
// keeps the first-touch MIP start; the case where it returns nothing at all
// (seen beside a busy loop: CBC crashed on the synchronous warm start and
// the asynchronous solve ran out of time) is Mip.ASolverThatDiesIsASolveWithoutASolution's.
TEST(AutoTmIlp, ASolveOutOfTimeStillReturnsAPlanThatFits) {
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike}) {
    const Workload w = Synthetic(shape, 4, 17);
    for (AutoTmFormulation f : {AutoTmFormulation::kSynchronous, AutoTmFormulation::kAsynchronous}) {
      AutoTmIlpOptions o;
      o.formulation = f;
      o.mode = f == AutoTmFormulation::kAsynchronous ? MigrationMode::kAsync : MigrationMode::kSync;
      o.dram_limit_bytes = Fraction(w, 0.2);
      o.time_limit_seconds = 1e-4;
      SCOPED_TRACE(w.name + " " + AutoTmFormulationName(f));
      AutoTmIlpResult r;
      ASSERT_NO_THROW(r = SolveAutoTmIlp(w, o));
      ExpectConsistent(w, r);
      EXPECT_LE(EvaluatePlan(w, r.plan).dram_peak_bytes, o.dram_limit_bytes);
    }
  }
}

TEST(AutoTmIlp, RespectsPerKernelLimits) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 3, 4);
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync})
    for (MemoryRows rows : kBothMemoryRows) {
      SCOPED_TRACE(std::string(MigrationModeName(mode)) + " " + MemoryRowsName(rows));
      AutoTmIlpOptions o;
      o.formulation = mode == MigrationMode::kSync ? AutoTmFormulation::kSynchronous : AutoTmFormulation::kAsynchronous;
      o.mode = mode;
      o.memory_rows = rows;
      o.dram_limit_bytes = Fraction(w, 0.5);
      o.kernel_limits.assign(w.num_kernels(), o.dram_limit_bytes);
      const size_t squeezed = w.num_kernels() / 2;
      o.kernel_limits[squeezed] = Fraction(w, 0.1);
      const AutoTmIlpResult r = SolveAutoTmIlp(w, o);
      const PlanReplay replay = ReplayPlan(w, r.plan);
      for (size_t k = 0; k < w.num_kernels(); ++k) EXPECT_LE(replay.dram_bytes[k], o.kernel_limits[k]) << k;
    }
}

// The same program solved to optimality gives plans of the same cost with
// either form of the DRAM rows.
TEST(AutoTmIlp, RunningSumRowsStateThePerKernelRowsInFewerNonzeros) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 6, 3);
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    SCOPED_TRACE(MigrationModeName(mode));
    AutoTmIlpOptions o;
    o.formulation = AutoTmFormulation::kSynchronous;
    o.mode = mode;
    o.dram_limit_bytes = Fraction(w, 0.3);
    o.mip_gap = 0;
    o.time_limit_seconds = 60;
    o.memory_rows = MemoryRows::kPerKernel;
    const AutoTmIlpResult per_kernel = SolveAutoTmIlp(w, o);
    o.memory_rows = MemoryRows::kRunningSum;
    const AutoTmIlpResult running_sum = SolveAutoTmIlp(w, o);
    ASSERT_EQ(per_kernel.mip.status, "optimal");
    ASSERT_EQ(running_sum.mip.status, "optimal");
    ExpectConsistent(w, per_kernel);
    ExpectConsistent(w, running_sum);
    EXPECT_TRUE(NearlyEqual(per_kernel.predicted_ns, running_sum.predicted_ns))
        << per_kernel.predicted_ns << " against " << running_sum.predicted_ns;
    // One continuous variable per kernel carries the sum.
    EXPECT_EQ(running_sum.variables, per_kernel.variables + static_cast<int>(w.num_kernels()));
    EXPECT_EQ(running_sum.integer_variables, per_kernel.integer_variables);
  }
}

// kAuto takes the per-kernel rows for small programs and the running sum
// once the per-kernel rows would pass kPerKernelNonzeroLimit.
TEST(AutoTmIlp, AutoMemoryRowsFollowTheProgramsSize) {
  AutoTmIlpOptions o;
  o.formulation = AutoTmFormulation::kStatic;
  o.time_limit_seconds = 10;
  const Workload small = Synthetic(SyntheticShape::kVggLike, 4, 1);
  o.dram_limit_bytes = Fraction(small, 0.3);
  EXPECT_EQ(SolveAutoTmIlp(small, o).memory_rows, MemoryRows::kPerKernel);
  // Every tensor live at every kernel: K x T nonzeros in the per-kernel rows.
  Workload big = HandGraph();
  const uint32_t kernels = 1100, tensors = 1000;
  big.name = "everything-live";
  big.kernels.clear();
  big.tensors.clear();
  big.accesses.clear();
  for (uint32_t t = 0; t < tensors; ++t)
    big.tensors.push_back({"t" + std::to_string(t), 8192, TensorKind::kActivation, 0, kernels - 1, false});
  for (uint32_t k = 0; k < kernels; ++k) {
    big.kernels.push_back({"k" + std::to_string(k), 1000});
    big.accesses.push_back({k, k % tensors, 1, 0, 10});
  }
  big.Finalize();
  o.dram_limit_bytes = big.peak_live_bytes() / 2;
  const AutoTmIlpResult r = SolveAutoTmIlp(big, o);
  EXPECT_EQ(r.memory_rows, MemoryRows::kRunningSum);
  // Each location variable in two rows, not in a row per kernel it spans.
  EXPECT_LT(r.nonzeros, kPerKernelNonzeroLimit / 100);
  ExpectConsistent(big, r);
}

TEST(AutoTmPolicy, ReportsSolverStatistics) {
  const Workload w = Synthetic(SyntheticShape::kVggLike, 4, 1);
  PolicyContext ctx;
  ctx.dram_limit_bytes = Fraction(w, 0.3);
  const PolicyResult r = AutoTmPolicy(AutoTmFormulation::kSynchronous).Decide(w, ctx);
  ASSERT_TRUE(r.solver.has_value());
  EXPECT_EQ(r.plan.produced_by, "autotm-sync");
  EXPECT_EQ(r.solver->solves, 1);
  EXPECT_GT(r.solver->variables, 0);
  EXPECT_GT(r.solver->constraints, 0);
  EXPECT_GE(r.solver->mip_gap, 0);
  EXPECT_LE(r.solver->mip_gap, ctx.mip_gap + 1e-9);
  EXPECT_LE(r.solver->bound_ns, r.solver->objective_ns * (1 + 1e-9));
  EXPECT_TRUE(NearlyEqual(r.solver->objective_ns, EvaluatePlan(w, r.plan).total_ns));
  EXPECT_GT(r.decision_seconds, 0);
}

// A real allocator fragments DRAM: here it needs 4% more than the live
// bytes. The loop must shrink L_k by 2% steps until the plan fits.
TEST(AutoTmPolicy, FragmentationLoopShrinksKernelLimitsUntilThePlanFits) {
  const Workload w = Synthetic(SyntheticShape::kResnetLike, 3, 9);
  PolicyContext ctx;
  ctx.dram_limit_bytes = Fraction(w, 0.4);
  AutoTmPolicy policy(AutoTmFormulation::kStatic);
  policy.SetAllocatorModel([](const Workload& wl, const PlacementPlan& plan) {
    std::vector<uint64_t> dram = ReplayPlan(wl, plan).dram_bytes;
    for (uint64_t& b : dram) b = b + b / 25;
    return dram;
  });
  const PolicyResult r = policy.Decide(w, ctx);
  EXPECT_GT(r.solver->solves, 1);
  EXPECT_LE(r.solver->solves, ctx.max_solves);
  EXPECT_EQ(r.stats.at("fits_after_solves"), 1);
  for (uint64_t b : ReplayPlan(w, r.plan).dram_bytes) EXPECT_LE(b + b / 25, ctx.dram_limit_bytes);

  // Without the allocator model one solve suffices: the ILP's DRAM is the
  // cost model's.
  const PolicyResult plain = AutoTmPolicy(AutoTmFormulation::kStatic).Decide(w, ctx);
  EXPECT_EQ(plain.solver->solves, 1);
  EXPECT_LE(plain.solver->objective_ns, r.solver->objective_ns * (1 + 1e-9));
}

// The placement MDP (decisions per access gap, the default) expresses the
// ILP's sync plans exactly: the demonstration replays each at its own cost,
// with no DRAM request clipped. A profiled DenseNet-like module lost 7.7
// points of AutoTM's plan in the MDP before kernels without a bottleneck
// asked about their new and their slow-tier tensors (docs/mdp.md).
// Also beside a pinned buffer (a TorchScript module's debug records): the
// MDP once counted its bytes against a limit already less them, and clipped
// the ILP's DRAM choices at the peak.
TEST(AutoTmPolicy, TheMdpReplaysTheSyncIlpsPlansExactly) {
  int replayed = 0;
  for (SyntheticShape shape : {SyntheticShape::kVggLike, SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike})
    for (double fraction : {0.2, 0.35, 0.5})
    for (bool pinned : {false, true}) {
      const Workload plain = Synthetic(shape, 4, 5);
      const Workload w = pinned ? testing::WithPinnedBuffer(plain, plain.peak_live_bytes() / 50) : plain;
      SCOPED_TRACE(pinned ? "with a pinned buffer" : "no pinned buffer");
      PolicyContext ctx;
      ctx.dram_limit_bytes = Fraction(w, fraction);
      const PolicyResult r = AutoTmPolicy(AutoTmFormulation::kSynchronous).Decide(w, ctx);
      EnvConfig c;
      c.dram_limit_bytes = ctx.dram_limit_bytes;
      ASSERT_EQ(c.scope, DecisionScope::kAccessGaps);
      PlacementEnv env(w, c);
      const Demonstration d = DemonstratePlan(env, r.plan);
      EXPECT_EQ(d.clipped, 0u) << SyntheticShapeName(shape) << " at " << fraction;
      EXPECT_TRUE(NearlyEqual(d.summary.cost.total_ns, EvaluatePlan(w, r.plan).total_ns))
          << SyntheticShapeName(shape) << " at " << fraction << ": " << d.summary.cost.total_ns << " against "
          << EvaluatePlan(w, r.plan).total_ns;
      ++replayed;
    }
  EXPECT_EQ(replayed, 18);
}

TEST(AutoTmPolicy, NoLimitMeansAllDram) {
  const Workload w = Synthetic(SyntheticShape::kMobilenetLike, 3, 1);
  for (const char* name : {"autotm-static", "autotm-sync", "autotm-async"}) {
    PolicyContext ctx;
    const PolicyResult r = MakePolicy(name)->Decide(w, ctx);
    EXPECT_TRUE(NearlyEqual(EvaluatePlan(w, r.plan).total_ns, MinCostNs(w))) << name;
  }
}

}  // namespace
}  // namespace tensortier
