// HeatWeightEnv: the action-to-weights mapping, episodes whose return is the
// cost model's score of the final plan, the DRAM limit under any action,
// and Algorithm 1 through the same env.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "envs/cost_model.h"
#include "envs/heat_weight_env.h"
#include "envs/synthetic.h"
#include "tests/common/synthetic_family.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {

HeatWeightEnvConfig HandConfig() {
  HeatWeightEnvConfig c;
  c.dram_limit_bytes = 1000;  // every kernel of the hand graph is a bottleneck
  return c;
}

HeatAction RandomAction(std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  HeatAction a{};
  for (float& x : a) x = u(rng);
  return a;
}

TEST(HeatWeightEnv, ActionMapsToWeightRangesAndBack) {
  Workload w = testing::HandGraph();
  HeatWeightEnv env(w, HandConfig());
  HeatWeights mid = env.ActionToWeights(HeatAction{});
  EXPECT_NEAR(mid.w_r, 1.0, 1e-12);  // Algorithm 1's starting weights at a = 0
  EXPECT_NEAR(mid.w_f, 1.0, 1e-12);
  EXPECT_NEAR(mid.w_s, 1.0, 1e-12);
  EXPECT_NEAR(mid.w_l, 1.0, 1e-12);
  EXPECT_NEAR(mid.threshold, 0.0, 1e-12);
  HeatWeights lo = env.ActionToWeights({-1, -1, -1, -1, -1});
  HeatWeights hi = env.ActionToWeights({1, 1, 1, 1, 1});
  EXPECT_NEAR(lo.w_r, 0.1, 1e-12);
  EXPECT_NEAR(hi.w_s, 10.0, 1e-9);
  EXPECT_NEAR(lo.threshold, -1.0, 1e-12);
  EXPECT_NEAR(hi.threshold, 1.0, 1e-12);
  // Out-of-range actions are clamped.
  HeatWeights over = env.ActionToWeights({5, -5, 0, 0, 3});
  EXPECT_NEAR(over.w_r, 10.0, 1e-9);
  EXPECT_NEAR(over.w_f, 0.1, 1e-12);
  EXPECT_NEAR(over.threshold, 1.0, 1e-12);

  std::mt19937_64 rng(3);
  for (int i = 0; i < 100; ++i) {
    HeatAction a = RandomAction(rng);
    HeatAction back = env.WeightsToAction(env.ActionToWeights(a));
    for (int k = 0; k < kHeatActionSize; ++k) EXPECT_NEAR(back[k], a[k], 1e-5);
  }
}

TEST(HeatWeightEnv, EpisodeReturnIsTheFinalPlansScore) {
  Workload w = testing::HandGraph();
  HeatWeightEnvConfig c = HandConfig();
  for (double beta : {1.0, 0.5}) {
    c.beta = beta;
    HeatWeightEnv env(w, c);
    ASSERT_EQ(env.decision_kernels().size(), 3u);
    std::mt19937_64 rng(11);
    for (int e = 0; e < 50; ++e) {
      HeatObservation obs = env.Reset();
      for (float x : obs) {
        EXPECT_GE(x, -1.0f);
        EXPECT_LE(x, 1.0f);
      }
      double total = 0;
      int steps = 0;
      while (!env.done()) {
        HeatStepResult r = env.Step(RandomAction(rng));
        total += r.reward;
        ++steps;
        EXPECT_EQ(r.done, env.done());
      }
      EXPECT_EQ(steps, 3);
      const EpisodeSummary& s = env.summary();
      EXPECT_FALSE(s.oom);
      EXPECT_LE(s.cost.dram_peak_bytes, c.dram_limit_bytes);
      EXPECT_NEAR(total, s.episodic_reward, 1e-9);
      EXPECT_NEAR(env.episode_return(), total, 1e-12);
      s.plan.Validate(w);
      // The summary's score is the cost model's.
      CostReport again = EvaluatePlan(w, s.plan);
      EXPECT_DOUBLE_EQ(again.total_ns, s.cost.total_ns);
      EXPECT_NEAR(s.episodic_reward, env.EpisodicReward(NormalisedCost(w, again.total_ns), again.dram_peak_bytes),
                  1e-12);
    }
  }
}

// A buffer the framework holds in DRAM takes its share of the limit: the
// episode's plan keeps it there and still fits.
TEST(HeatWeightEnv, PinnedTensorsStayInDramAndThePlanFitsBesideThem) {
  const Workload w = testing::WithPinnedBuffer(testing::HandGraph(), 200);
  HeatWeightEnv env(w, HandConfig());
  std::mt19937_64 rng(5);
  for (int e = 0; e < 20; ++e) {
    env.Reset();
    while (!env.done()) env.Step(RandomAction(rng));
    const EpisodeSummary& s = env.summary();
    EXPECT_EQ(s.plan.initial_tiers.back(), Tier::kDram);
    EXPECT_FALSE(s.oom);
    EXPECT_LE(s.cost.dram_peak_bytes, 1000u);
  }
}

TEST(HeatWeightEnv, ThresholdExtremesGiveAllColdOrAsMuchDramAsFits) {
  Workload w = testing::HandGraph();
  HeatWeightEnvConfig c = HandConfig();
  c.beta = 1.0;
  HeatWeightEnv env(w, c);
  // Threshold at the top: nothing is hot, every tensor lives in the slow tier.
  EpisodeSummary cold = RunFixedWeights(env, {0, 0, 0, 0, 1});
  EXPECT_EQ(cold.cost.dram_peak_bytes, 0u);
  EXPECT_NEAR(cold.normalised_cost, 1.0, 1e-9);
  EXPECT_NEAR(cold.episodic_reward, 0.0, 1e-9);
  // Threshold at the bottom: everything is hot, DRAM fills up to the limit.
  double ret = 0;
  EpisodeSummary hot = RunFixedWeights(env, {0, 0, 0, 0, -1}, &ret);
  EXPECT_GT(hot.cost.dram_peak_bytes, 0u);
  EXPECT_LE(hot.cost.dram_peak_bytes, c.dram_limit_bytes);
  EXPECT_GT(hot.spills, 0u);  // not everything fits
  // (On this graph copies are slow next to the penalties: all-hot pays more
  // in migrations than it saves, which is what the weights must learn.)
  EXPECT_NE(hot.plan.Hash(), cold.plan.Hash());
  EXPECT_NEAR(ret, hot.episodic_reward, 1e-9);
}

TEST(HeatWeightEnv, StepWithHeatsPlacesHottestFirstWithinTheLimit) {
  Workload w = testing::HandGraph();
  HeatWeightEnvConfig c = HandConfig();
  HeatWeightEnv env(w, c);
  env.Reset();
  ASSERT_EQ(env.current_kernel(), 0u);
  // k0 live: A (1000), B (500), D (200). D hottest, then B, then A: D and B
  // fit (700), A does not.
  ASSERT_EQ(w.live_at(0), (std::vector<uint32_t>{testing::kA, testing::kB, testing::kD}));
  env.StepWithHeats({1.0, 2.0, 3.0}, 0.5);
  while (!env.done()) env.StepWithHeats(std::vector<double>(w.live_at(env.current_kernel()).size(), -1.0), 0.0);
  const PlacementPlan& plan = env.summary().plan;
  EXPECT_EQ(plan.initial_tiers[testing::kA], Tier::kSlow);
  EXPECT_EQ(plan.initial_tiers[testing::kB], Tier::kDram);
  EXPECT_EQ(plan.initial_tiers[testing::kD], Tier::kDram);
  EXPECT_EQ(env.summary().spills, 1u);
  // A new episode starts from scratch.
  env.Reset();
  EXPECT_FALSE(env.done());
  EXPECT_EQ(env.current_kernel(), 0u);
}

TEST(HeatWeightEnv, Algorithm1RespectsTheLimitOnSyntheticWorkloads) {
  for (SyntheticShape shape : testing::kSyntheticFamilies) {
    Workload w = testing::SyntheticWithLayers(shape, 6);
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      HeatWeightEnvConfig c;
      c.dram_limit_bytes = w.peak_live_bytes() / 2;
      c.mode = mode;
      HeatWeightEnv env(w, c);
      ASSERT_GT(env.decision_kernels().size(), 0u);
      double ret = 0;
      EpisodeSummary alg1 = RunAlgorithm1(env, &ret);
      EXPECT_FALSE(alg1.oom) << SyntheticShapeName(shape) << " " << MigrationModeName(mode);
      EXPECT_LE(alg1.cost.dram_peak_bytes, c.dram_limit_bytes);
      EXPECT_NEAR(ret, alg1.episodic_reward, 1e-9);
      EXPECT_EQ(alg1.steps, env.decision_kernels().size());
      // Random weights never break the limit either (async evictions hold
      // their DRAM copy, which the env reserves first).
      std::mt19937_64 rng(5);
      for (int e = 0; e < 10; ++e) {
        env.Reset();
        while (!env.done()) env.Step(RandomAction(rng));
        EXPECT_FALSE(env.summary().oom) << SyntheticShapeName(shape) << " " << MigrationModeName(mode);
        EXPECT_LE(env.summary().cost.dram_peak_bytes, c.dram_limit_bytes);
        EXPECT_NEAR(env.episode_return(), env.summary().episodic_reward, 1e-9);
      }
    }
  }
}

TEST(HeatWeightEnv, NoBottleneckMeansNoSteps) {
  Workload w = testing::HandGraph();
  HeatWeightEnvConfig c;
  c.dram_limit_bytes = 1 << 20;
  HeatWeightEnv env(w, c);
  env.Reset();
  EXPECT_TRUE(env.done());
  EXPECT_EQ(env.summary().cost.total_ns, MinCostNs(w));
  EXPECT_THROW(env.Step(HeatAction{}), std::logic_error);
}

TEST(HeatWeightEnv, RejectsBadConfigAndActions) {
  Workload w = testing::HandGraph();
  HeatWeightEnvConfig c = HandConfig();
  c.dram_limit_bytes = 0;
  EXPECT_THROW(HeatWeightEnv(w, c), std::invalid_argument);
  c = HandConfig();
  c.weight_min = 0;
  EXPECT_THROW(HeatWeightEnv(w, c), std::invalid_argument);
  c = HandConfig();
  c.threshold_min = 2;
  EXPECT_THROW(HeatWeightEnv(w, c), std::invalid_argument);
  HeatWeightEnv env(w, HandConfig());
  env.Reset();
  EXPECT_THROW(env.Step({NAN, 0, 0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(env.StepWithHeats({1.0}, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace tensortier
