#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/synthetic.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {
using testing::HandGraph;
using testing::kA;
using testing::kB;
using testing::kC;
using testing::kD;
using testing::WithPinnedBuffer;

PlacementPlan Plan(const Workload& w, std::vector<Tier> tiers, std::vector<Migration> moves,
                   MigrationMode mode, uint64_t limit = 0) {
  PlacementPlan p;
  p.workload_signature = w.Signature();
  p.dram_limit_bytes = limit;
  p.mode = mode;
  p.initial_tiers = std::move(tiers);
  p.migrations = std::move(moves);
  p.Normalize();
  return p;
}

constexpr Tier D = Tier::kDram;
constexpr Tier S = Tier::kSlow;

TEST(CostModel, AllDramIsTheSumOfKernelTimes) {
  Workload w = HandGraph();
  CostReport r = EvaluatePlan(w, PlacementPlan::Uniform(w, D, 0));
  EXPECT_DOUBLE_EQ(r.total_ns, 600);
  EXPECT_DOUBLE_EQ(r.migration_ns, 0);
  EXPECT_EQ(r.dram_peak_bytes, 2100u);  // k1: A + B + C + D
  EXPECT_EQ(r.slow_peak_bytes, 0u);
  EXPECT_FALSE(r.oom);
  EXPECT_DOUBLE_EQ(MinCostNs(w), 600);
}

TEST(CostModel, AllSlowAddsEveryPenalty) {
  Workload w = HandGraph();
  CostReport r = EvaluatePlan(w, PlacementPlan::Uniform(w, S, 1));
  EXPECT_DOUBLE_EQ(r.total_ns, 600 + 50 + 30 + 20 + 40 + 25 + 60 + 10);
  EXPECT_DOUBLE_EQ(MaxCostNs(w), 835);
  EXPECT_EQ(r.dram_peak_bytes, 0u);
  EXPECT_FALSE(r.oom);
  EXPECT_DOUBLE_EQ(NormalisedCost(w, r.total_ns), 1.0);
}

TEST(CostModel, SyncMigrationBlocksAndMovesBeforeTheNextKernel) {
  Workload w = HandGraph();
  // A starts slow and is fetched to DRAM after k1, before k2 reads it.
  PlacementPlan p = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kSync);
  CostReport r = EvaluatePlan(w, p);
  EXPECT_DOUBLE_EQ(r.exec_ns, 150 + 200 + 300);
  EXPECT_DOUBLE_EQ(r.migration_ns, 500);  // 1000 bytes at 2 bytes/ns
  EXPECT_DOUBLE_EQ(r.total_ns, 1150);
  EXPECT_EQ(r.bytes_to_dram, 1000u);
  EXPECT_EQ(r.migrations_to_dram, 1u);
  EXPECT_EQ(r.dram_peak_bytes, 1600u);  // k2: A + C + D
  ASSERT_EQ(r.kernel_ns.size(), 3u);
  EXPECT_DOUBLE_EQ(r.kernel_ns[2], 800);
}

// A copy costs its setup (allocation, device latency) plus its bytes over
// the bandwidth, per direction.
TEST(CostModel, CopiesPayTheirSetupTime) {
  Workload w = HandGraph();
  w.device.slow_to_dram_copy_setup_ns = 70;
  w.device.dram_to_slow_copy_setup_ns = 1e6;  // the other direction is not used
  w.Finalize();
  EXPECT_DOUBLE_EQ(CopyTimeNs(w, 1000, Tier::kDram), 570);
  PlacementPlan p = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kSync);
  CostReport r = EvaluatePlan(w, p);
  EXPECT_DOUBLE_EQ(r.migration_ns, 570);
  EXPECT_DOUBLE_EQ(r.total_ns, 1220);
  w.device.slow_to_dram_copy_setup_ns = -1;
  EXPECT_THROW(w.Finalize(), std::invalid_argument);
}

TEST(CostModel, AsyncMigrationOverlapsTheNextKernelAndHoldsBothCopies) {
  Workload w = HandGraph();
  PlacementPlan p = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kAsync);
  CostReport r = EvaluatePlan(w, p);
  // k2 still reads A from the slow tier while the copy runs: 300 + 60; the
  // 500 ns copy is hidden except for 140 ns.
  EXPECT_DOUBLE_EQ(r.exec_ns, 150 + 200 + 360);
  EXPECT_DOUBLE_EQ(r.migration_ns, 140);
  EXPECT_DOUBLE_EQ(r.raw_migration_ns, 500);
  EXPECT_DOUBLE_EQ(r.total_ns, 850);
  EXPECT_EQ(r.dram_peak_bytes, 1600u);  // C + D + A's DRAM copy in flight
}

// A host that hides only part of a copy under the kernel it overlaps
// (DeviceModel::async_copy_exposure) pays that share of the hidden part.
TEST(CostModel, AsyncCopiesPayTheShareOfTheirOverlapTheHostDoesNotHide) {
  Workload w = HandGraph();
  const PlacementPlan p = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kAsync);
  // The 500 ns copy runs under k2 (360 ns with A read from the slow tier).
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, p).overlapped_ns, 360);
  for (double exposure : {0.0, 0.25, 1.0}) {
    w.device.async_copy_exposure = exposure;
    w.Finalize();
    const CostReport r = EvaluatePlan(w, p);
    EXPECT_DOUBLE_EQ(r.migration_ns, 140 + exposure * 360) << exposure;
    EXPECT_DOUBLE_EQ(r.total_ns, 850 + exposure * 360) << exposure;
    EXPECT_DOUBLE_EQ(r.overlapped_ns, 360) << exposure;
    EXPECT_DOUBLE_EQ(ExposedAsyncCopyNs(w, 500, 360), 140 + exposure * 360) << exposure;
    EXPECT_DOUBLE_EQ(ExposedAsyncCopyNs(w, 100, 360), exposure * 100) << exposure;
  }
  // Exposed entirely, an overlapped copy costs what a blocking one does
  // (500 ns here), plus what k2 pays for reading A from the slow tier.
  const PlacementPlan sync = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kSync);
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, p).total_ns, EvaluatePlan(w, sync).total_ns + 60);
  // Synchronous copies hide nothing.
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, sync).overlapped_ns, 0);
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    w.device.async_copy_exposure = bad;
    EXPECT_THROW(w.Finalize(), std::invalid_argument) << bad;
  }
}

TEST(CostModel, AsyncCopyOfATensorTheNextKernelWritesIsSynchronous) {
  Workload w = HandGraph();
  PlacementPlan p = Plan(w, {D, D, D, D}, {{0, kD, S}}, MigrationMode::kAsync);
  CostReport r = EvaluatePlan(w, p);
  // k1 writes D: the 200-byte copy to slow blocks (200 ns) and k1 writes D in slow (+25).
  EXPECT_DOUBLE_EQ(r.migration_ns, 200);
  EXPECT_DOUBLE_EQ(r.total_ns, 100 + 200 + 225 + 300);
  EXPECT_EQ(r.bytes_to_slow, 200u);
}

TEST(CostModel, DetectsOutOfMemoryAtTheFirstKernelOverTheLimit) {
  Workload w = HandGraph();
  PlacementPlan p = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kSync, 1200);
  CostReport r = EvaluatePlan(w, p);
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.oom_kernel, 2);
  EXPECT_EQ(r.oom_excess_bytes, 400u);
  // 1600 fits.
  p.dram_limit_bytes = 1600;
  EXPECT_FALSE(EvaluatePlan(w, p).oom);
}

TEST(CostModel, AsyncInFlightCopiesCountAgainstTheLimit) {
  Workload w = HandGraph();
  // Evicting B after k0 keeps its DRAM copy during k1: B + C + D = 1100.
  PlacementPlan sync = Plan(w, {S, D, D, D}, {{0, kB, S}}, MigrationMode::kSync, 1000);
  PlacementPlan async = sync;
  async.mode = MigrationMode::kAsync;
  EXPECT_FALSE(EvaluatePlan(w, sync).oom);  // k1: C + D = 600
  CostReport r = EvaluatePlan(w, async);
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.oom_kernel, 1);
}

TEST(CostModel, PersistentTensorsReturnToTheirStartingTier) {
  Workload w = HandGraph(/*a_persistent=*/true);
  PlacementPlan p = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kSync);
  CostReport r = EvaluatePlan(w, p);
  // 500 ns fetch + 1000 ns write-back at 1 byte/ns for the next iteration.
  EXPECT_DOUBLE_EQ(r.migration_ns, 1500);
  EXPECT_EQ(r.bytes_to_slow, 1000u);
}

// TensorLedger splits the cost model's own sums by tensor: the penalties
// with the kernels' DRAM times make exec_ns, the copies (the copy back of
// persistent tensors included) raw_migration_ns and the copy counts, in both
// modes; in sync mode every copy blocks, so they make migration_ns too, and
// a tensor's slow accesses are those the plan's timeline puts in the slow tier.
TEST(CostModel, TheTensorLedgerAddsUpToTheCostModelsSums) {
  SyntheticOptions o;
  o.shape = SyntheticShape::kResnetLike;
  o.layers = 6;
  o.base_bytes = 1 << 20;
  const Workload w = GenerateSynthetic(o);
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    EnvConfig c;
    c.dram_limit_bytes = w.peak_live_bytes() / 3;
    c.mode = mode;
    PlacementEnv env(w, c);
    std::mt19937_64 rng(11);
    size_t copies_back = 0;
    for (int episode = 0; episode < 6; ++episode) {
      const PlacementPlan plan = RunEpisode(env, [&](const Observation&) { return static_cast<int>(rng() % 2); }).plan;
      CostReport r;
      TensorLedger ledger;
      EvaluateValidPlan(w, plan, r, nullptr, &ledger);
      EXPECT_EQ(r.total_ns, EvaluatePlan(w, plan).total_ns) << "the ledger changes nothing";
      double penalty = 0, copy = 0;
      uint64_t copies = 0;
      for (size_t t = 0; t < w.num_tensors(); ++t) {
        penalty += ledger.slow_penalty_ns[t];
        copy += ledger.copy_ns[t];
        copies += ledger.copies[t];
      }
      double dram_ns = 0;
      for (const Kernel& k : w.kernels) dram_ns += k.dram_time_ns;
      EXPECT_NEAR(dram_ns + penalty, r.exec_ns, 1e-6 * r.exec_ns);
      EXPECT_NEAR(copy, r.raw_migration_ns, 1e-6 * std::max(1.0, r.raw_migration_ns));
      EXPECT_EQ(copies, r.migrations_to_slow + r.migrations_to_dram);
      EXPECT_GT(penalty, 0);
      EXPECT_GT(copies, 0u);
      if (mode != MigrationMode::kSync) continue;
      EXPECT_NEAR(copy, r.migration_ns, 1e-6 * std::max(1.0, r.migration_ns));
      const std::vector<std::vector<Tier>> timeline = plan.TierTimeline(w);
      std::vector<uint32_t> slow(w.num_tensors(), 0);
      for (const Access& a : w.accesses) slow[a.tensor] += timeline[a.kernel][a.tensor] == Tier::kSlow;
      EXPECT_EQ(slow, ledger.slow_accesses);
      for (size_t t = 0; t < w.num_tensors(); ++t)
        copies_back += w.tensors[t].persistent && timeline.back()[t] != plan.initial_tiers[t];
    }
    if (mode == MigrationMode::kSync) EXPECT_GT(copies_back, 0u) << "no plan copied a tensor back";
  }
}

TEST(CostModel, RejectsAPlanForAnotherWorkload) {
  Workload w = HandGraph();
  PlacementPlan p = PlacementPlan::Uniform(w, D, 0);
  p.initial_tiers.pop_back();
  EXPECT_THROW(EvaluatePlan(w, p), std::invalid_argument);
  PlacementPlan q = PlacementPlan::Uniform(w, D, 0);
  q.migrations.push_back({2, kA, S});  // after the last kernel A is gone
  EXPECT_THROW(EvaluatePlan(w, q), std::invalid_argument);
  PlacementPlan c = PlacementPlan::Uniform(w, D, 0);
  c.migrations.push_back({0, kC, S});  // C does not exist yet after k0
  EXPECT_THROW(EvaluatePlan(w, c), std::invalid_argument);
}

TEST(FirstTouch, FillsDramInAllocationOrderAndReusesFreedSpace) {
  Workload w = HandGraph();
  // Limit 1500: A (1000) fits, B (500) fits, D (200) does not; at k1 nothing
  // has been freed yet, so C (400) goes slow.
  PlacementPlan p = FirstTouchPlan(w, 1500);
  EXPECT_EQ(p.initial_tiers, (std::vector<Tier>{D, D, S, S}));
  EXPECT_TRUE(p.migrations.empty());
  EXPECT_FALSE(EvaluatePlan(w, p).oom);
  // Limit 1100: A fits; B (1500), D (1200) and C (1400) would not.
  EXPECT_EQ(FirstTouchPlan(w, 1100).initial_tiers, (std::vector<Tier>{D, S, S, S}));
}

TEST(FirstTouch, NeverExceedsTheLimit) {
  Workload w = HandGraph();
  for (uint64_t limit : {100u, 500u, 900u, 1300u, 1700u, 2100u}) {
    CostReport r = EvaluatePlan(w, FirstTouchPlan(w, limit));
    EXPECT_FALSE(r.oom) << limit;
    EXPECT_LE(r.dram_peak_bytes, limit);
  }
}

TEST(PlacementPlan, HashAndEqualityFollowContent) {
  Workload w = HandGraph();
  PlacementPlan a = Plan(w, {S, D, D, D}, {{1, kA, D}}, MigrationMode::kSync);
  PlacementPlan b = a;
  EXPECT_EQ(a.Hash(), b.Hash());
  b.produced_by = "someone else";  // provenance is not content
  EXPECT_EQ(a.Hash(), b.Hash());
  b.mode = MigrationMode::kAsync;
  EXPECT_NE(a.Hash(), b.Hash());
  PlacementPlan c = a;
  c.initial_tiers[kB] = S;
  EXPECT_NE(a.Hash(), c.Hash());
  EXPECT_FALSE(a == c);
}

TEST(PlacementPlan, NormalizeDropsMovesThatChangeNothing) {
  Workload w = HandGraph();
  PlacementPlan p = Plan(w, {D, D, D, D}, {{0, kA, D}, {1, kA, S}, {0, kD, S}, {1, kD, S}},
                         MigrationMode::kSync);
  ASSERT_EQ(p.migrations.size(), 2u);
  EXPECT_EQ(p.migrations[0], (Migration{0, kD, S}));
  EXPECT_EQ(p.migrations[1], (Migration{1, kA, S}));
  auto timeline = p.TierTimeline(w);
  EXPECT_EQ(timeline[0][kD], D);
  EXPECT_EQ(timeline[1][kD], S);
  EXPECT_EQ(timeline[2][kA], S);
}

TEST(Workload, FinalizeRejectsBrokenGraphs) {
  Workload w = HandGraph();
  Workload bad = w;
  bad.accesses.push_back({0, 2, 1, 0, 0});  // C is not live at k0
  EXPECT_THROW(bad.Finalize(), std::invalid_argument);
  bad = w;
  bad.tensors[1].free_kernel = 7;
  EXPECT_THROW(bad.Finalize(), std::invalid_argument);
  bad = w;
  bad.accesses.push_back({1, 9, 1, 0, 0});
  EXPECT_THROW(bad.Finalize(), std::invalid_argument);
  bad = w;
  bad.tensors[0].size_bytes = 0;
  EXPECT_THROW(bad.Finalize(), std::invalid_argument);
}

TEST(Workload, IndicesDescribeLiveness) {
  Workload w = HandGraph();
  EXPECT_EQ(w.live_at(1), (std::vector<uint32_t>{kA, kB, kC, kD}));
  EXPECT_EQ(w.live_at(2), (std::vector<uint32_t>{kA, kC, kD}));
  EXPECT_EQ(w.allocated_at(1), (std::vector<uint32_t>{kC}));
  EXPECT_EQ(w.kernels_of_tensor(kA), (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(w.peak_live_bytes(), 2100u);
  // Heat's future frequency: a search per access, summed from each use on.
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    const auto& uses = w.kernels_of_tensor(t);
    for (size_t u = 0; u <= uses.size(); ++u) {
      uint64_t count = 0;
      for (size_t v = u; v < uses.size(); ++v) {
        const Access* a = w.FindAccess(uses[v], t);
        count += std::max<uint32_t>(1, a->reads + a->writes);
      }
      EXPECT_EQ(w.future_accesses(t, u), count) << "tensor " << t << ", use " << u;
    }
  }
  EXPECT_GT(w.future_accesses(kA, 0), w.future_accesses(kA, 1));
  Workload other = HandGraph();
  EXPECT_EQ(w.Signature(), other.Signature());
  other.tensors[0].size_bytes = 999;
  EXPECT_NE(w.Signature(), other.Signature());
}

// What the all-slow run adds to a kernel is spread over its accesses: by
// the bytes each moves, or by a device's cost of an access (a latency each,
// beside the bytes), which gives small tensors more than their bytes' share.
TEST(AssignKernelTimes, SpreadsEachKernelsExtraByBytesOrByTheDevicesAccessCost) {
  Workload w = HandGraph();
  const std::vector<double> dram = {100, 200, 300}, slow = {180, 285, 370};
  AssignKernelTimes(w, dram, slow);
  // k0: 80 ns over A (1,000 B read) and B (500 B written).
  EXPECT_DOUBLE_EQ(w.FindAccess(0, kA)->slow_penalty_ns, 80.0 * 1000 / 1500);
  EXPECT_DOUBLE_EQ(w.FindAccess(0, kB)->slow_penalty_ns, 80.0 * 500 / 1500);
  EXPECT_DOUBLE_EQ(w.kernels[1].dram_time_ns, 200);
  // 100 ns of latency per access and 0.1 ns per byte.
  const AccessWeight device = [](uint64_t bytes, uint32_t reads, uint32_t writes) {
    return (reads + writes) * (100 + 0.1 * static_cast<double>(bytes));
  };
  AssignKernelTimes(w, dram, slow, device);
  EXPECT_DOUBLE_EQ(w.FindAccess(0, kA)->slow_penalty_ns, 80.0 * 200 / 350);
  EXPECT_DOUBLE_EQ(w.FindAccess(0, kB)->slow_penalty_ns, 80.0 * 150 / 350);
  for (size_t k = 0; k < 3; ++k) {
    double sum = 0;
    for (uint32_t ai : w.accesses_of_kernel(k)) sum += w.accesses[ai].slow_penalty_ns;
    EXPECT_NEAR(sum, slow[k] - dram[k], 1e-9) << "kernel " << k;
  }
  EXPECT_DOUBLE_EQ(EvaluatePlan(w, PlacementPlan::Uniform(w, S, 0)).total_ns, 180 + 285 + 370);
}

// With the device's charges for the all-slow run (an emulated tier), each
// access costs what the device charges it alone, and only what a kernel
// measured beyond its charge is spread: a kernel whose small tensors shared
// a page in the all-slow run (one latency saved here) does not make each of
// them cheaper in a plan where one of them is slow.
TEST(AssignKernelTimes, PricesEachAccessAtTheDevicesOwnChargeWhenTheChargesAreKnown) {
  Workload w = HandGraph();
  const AccessWeight device = [](uint64_t bytes, uint32_t reads, uint32_t writes) {
    return (reads + writes) * (100 + 0.1 * static_cast<double>(bytes));
  };
  const std::vector<double> dram = {100, 200, 300};
  std::vector<double> own(3, 0), charged(3), slow(3);
  for (size_t k = 0; k < 3; ++k)
    for (uint32_t ai : w.accesses_of_kernel(k)) {
      const Access& a = w.accesses[ai];
      own[k] += device(w.tensors[a.tensor].size_bytes, a.reads, a.writes);
    }
  const std::vector<double> saved = {100, 0, 0}, noise = {10, -5, 0};
  for (size_t k = 0; k < 3; ++k) {
    charged[k] = own[k] - saved[k];
    slow[k] = dram[k] + charged[k] + noise[k];
  }
  AssignKernelTimes(w, dram, slow, device, charged);
  // k0: A (1,000 B read) costs 200 alone, B (500 B written) 150; the 10 ns
  // measured beyond the 250 charged is spread by those.
  ASSERT_DOUBLE_EQ(own[0], 350);
  EXPECT_DOUBLE_EQ(w.FindAccess(0, kA)->slow_penalty_ns, 200.0 * 360 / 350);
  EXPECT_DOUBLE_EQ(w.FindAccess(0, kB)->slow_penalty_ns, 150.0 * 360 / 350);
  double all_slow = 0;
  for (size_t k = 0; k < 3; ++k) {
    double sum = 0;
    for (uint32_t ai : w.accesses_of_kernel(k)) sum += w.accesses[ai].slow_penalty_ns;
    EXPECT_NEAR(sum, own[k] + noise[k], 1e-9) << "kernel " << k;
    all_slow += slow[k];
  }
  // The all-slow plan costs more than measured by what sharing saved it.
  EXPECT_NEAR(EvaluatePlan(w, PlacementPlan::Uniform(w, S, 0)).total_ns, all_slow + 100, 1e-9);
  // Charges without the device's weight, or not one per kernel, are refused.
  EXPECT_THROW(AssignKernelTimes(w, dram, slow, nullptr, charged), std::invalid_argument);
  EXPECT_THROW(AssignKernelTimes(w, dram, slow, device, {1, 2}), std::invalid_argument);
}

// A pinned tensor (a buffer the framework holds, never touched) stays in
// DRAM on every executor, so the cost model charges it there whatever the
// plan says, and never a copy of it.
TEST(PinnedTensors, StayInDramWhateverThePlanSays) {
  const Workload w = WithPinnedBuffer(HandGraph(), 300);
  const uint32_t pinned = 4;
  ASSERT_EQ(w.pinned_dram_bytes(), 300u);
  const PlacementPlan says_slow = Plan(w, {Tier::kSlow, Tier::kSlow, Tier::kSlow, Tier::kSlow, Tier::kSlow},
                                       {{0, pinned, Tier::kDram}}, MigrationMode::kSync, 1000);
  const PlacementPlan says_dram = Plan(w, {Tier::kSlow, Tier::kSlow, Tier::kSlow, Tier::kSlow, Tier::kDram}, {},
                                       MigrationMode::kSync, 1000);
  const CostReport a = EvaluatePlan(w, says_slow), b = EvaluatePlan(w, says_dram);
  EXPECT_EQ(a.dram_peak_bytes, 300u);
  EXPECT_EQ(b.dram_peak_bytes, 300u);
  EXPECT_DOUBLE_EQ(a.total_ns, b.total_ns);
  EXPECT_EQ(a.bytes_to_dram + a.bytes_to_slow, 0u);
  EXPECT_EQ(a.migrations_to_dram, 0u);
  // All-slow for the rest: the three kernels' times plus every penalty.
  EXPECT_DOUBLE_EQ(b.total_ns, 600 + 50 + 30 + 20 + 40 + 25 + 60 + 10);
  // Under a limit below its size every plan is over the limit.
  PlacementPlan tight = says_slow;
  tight.dram_limit_bytes = 299;
  EXPECT_TRUE(EvaluatePlan(w, tight).oom);
}

TEST(PinnedTensors, KeepPinnedInDramSaysWhatExecutorsDo) {
  const Workload w = WithPinnedBuffer(HandGraph(), 300);
  PlacementPlan plan = Plan(w, {Tier::kSlow, Tier::kDram, Tier::kSlow, Tier::kSlow, Tier::kSlow},
                            {{0, kA, Tier::kDram}, {0, 4, Tier::kDram}}, MigrationMode::kSync, 1000);
  EXPECT_EQ(plan.KeepPinnedInDram(w), 2u);  // its initial tier and its migration
  EXPECT_EQ(plan.initial_tiers[4], Tier::kDram);
  ASSERT_EQ(plan.migrations.size(), 1u);
  EXPECT_EQ(plan.migrations[0].tensor, kA);
  EXPECT_EQ(plan.KeepPinnedInDram(w), 0u);
  // A workload without pinned tensors: nothing changes.
  PlacementPlan plain = Plan(HandGraph(), {Tier::kSlow, Tier::kSlow, Tier::kSlow, Tier::kSlow}, {},
                             MigrationMode::kSync, 1000);
  EXPECT_EQ(plain.KeepPinnedInDram(HandGraph()), 0u);
}

TEST(PinnedTensors, PlansShareWhatTheyLeaveOfTheLimit) {
  const Workload w = WithPinnedBuffer(HandGraph(), 300);
  EXPECT_EQ(PlannableDramBytes(w, 1000), 700u);
  EXPECT_EQ(PlannableDramBytes(w, 0), 0u);  // no limit stays no limit
  EXPECT_EQ(PlannableDramBytes(HandGraph(), 1000), 1000u);
  try {
    PlannableDramBytes(w, 300);
    FAIL() << "a limit the pinned tensors fill was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be met"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("300"), std::string::npos) << e.what();
  }
}

TEST(PinnedTensors, OnlyAPersistentTensorNoKernelTouchesCanBePinned) {
  Workload touched = HandGraph(/*a_persistent=*/true);
  touched.tensors[kA].pinned_dram = true;  // k0 and k2 read it
  EXPECT_THROW(touched.Finalize(), std::invalid_argument);
  Workload transient = HandGraph();
  transient.tensors.push_back({"buffer", 64, TensorKind::kTemporary, 0, 2, /*persistent=*/false, /*pinned_dram=*/true});
  EXPECT_THROW(transient.Finalize(), std::invalid_argument);
  // The flag is part of the graph's identity: plans for one do not fit the other.
  Workload unpinned = WithPinnedBuffer(HandGraph(), 300);
  const uint64_t pinned_signature = unpinned.Signature();
  unpinned.tensors.back().pinned_dram = false;
  unpinned.Finalize();
  EXPECT_NE(unpinned.Signature(), pinned_signature);
  EXPECT_EQ(unpinned.pinned_dram_bytes(), 0u);
}

}  // namespace
}  // namespace tensortier
