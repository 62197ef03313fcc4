#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/synthetic.h"
#include "tests/common/synthetic_family.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {
using testing::HandGraph;

EnvConfig HandConfig(MigrationMode mode = MigrationMode::kSync) {
  EnvConfig c;
  c.dram_limit_bytes = 1000;  // every kernel of the hand graph is a bottleneck
  c.mode = mode;
  c.beta = 0.75;
  c.step_reward = StepRewardKind::kDeepTm;
  c.scope = DecisionScope::kAllLive;
  return c;
}

// A six-layer synthetic graph of 1 MiB-based tensors, and a DRAM limit of a
// third of its peak.
Workload SixLayers(SyntheticShape shape) {
  SyntheticOptions o;
  o.shape = shape;
  o.layers = 6;
  o.base_bytes = 1 << 20;
  return GenerateSynthetic(o);
}

EnvConfig ThirdOfPeak(const Workload& w) {
  EnvConfig c;
  c.dram_limit_bytes = w.peak_live_bytes() / 3;
  return c;
}

TEST(PlacementEnv, EveryLiveTensorOfEveryBottleneckKernelIsOneStep) {
  Workload w = HandGraph();
  PlacementEnv env(w, HandConfig());
  EXPECT_EQ(env.max_steps(), 3u + 4u + 3u);
  EpisodeSummary s = RunEpisode(env, [](const Observation&) { return 1; });
  EXPECT_EQ(s.steps, 10u);
  EXPECT_FALSE(s.oom);
}

TEST(PlacementEnv, StepRewardIsTheInputShareKeptInDram) {
  Workload w = HandGraph();
  PlacementEnv env(w, HandConfig());
  env.Reset();
  ASSERT_EQ(env.current_kernel(), 0u);
  // k0 touches A (1000) and B (500); D is live but untouched.
  int checked = 0;
  while (env.current_kernel() == 0) {
    uint32_t t = env.current_tensor();
    double expected = t == testing::kA ? 0.0 : (t == testing::kB ? 500.0 / 1500.0 : 0.0);
    int action = t == testing::kA ? 1 : 0;  // A slow, B and D in DRAM (700 bytes)
    StepResult r = env.Step(action);
    EXPECT_NEAR(r.reward, expected, 1e-12) << "tensor " << t;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(PlacementEnv, TimeSavedRewardAddsUpToTheEpisodicReward) {
  Workload w = HandGraph();
  EnvConfig c = HandConfig();
  c.step_reward = StepRewardKind::kTimeSaved;
  PlacementEnv env(w, c);
  const double scale = c.beta * c.reward_fix / (835.0 - 600.0);
  env.Reset();
  // k0: A to DRAM saves its 50 ns penalty; B and D go slow.
  while (env.current_kernel() == 0) {
    bool is_a = env.current_tensor() == testing::kA;
    EXPECT_NEAR(env.Step(is_a ? 0 : 1).reward, is_a ? 50 * scale : 0.0, 1e-9);
  }
  // k1: fetching B costs its 250 ns copy and saves its 20 ns penalty (A
  // is evicted first to make room).
  while (env.current_tensor() != testing::kB) env.Step(1);
  EXPECT_NEAR(env.Step(0).reward, (20 - 250) * scale, 1e-9);
  // Without migrations the whole return of an episode is eq. 13.
  PlacementEnv env2(w, c);
  env2.Reset();
  double sum = 0;
  while (!env2.done()) {
    bool keep_a = env2.current_tensor() == testing::kA;  // A (1000 bytes) alone fits everywhere
    sum += env2.Step(keep_a ? 0 : 1).reward;
  }
  EXPECT_DOUBLE_EQ(env2.summary().cost.total_ns, 835 - 110);
  EXPECT_NEAR(sum, env2.summary().episodic_reward, 1e-9);
}

TEST(PlacementEnv, MigrationCostIsSubtractedFromTheStepReward) {
  Workload w = HandGraph();
  PlacementEnv env(w, HandConfig());
  env.Reset();
  // k0: all slow.
  while (env.current_kernel() == 0) env.Step(1);
  // k1: fetching B (500 bytes at 2 bytes/ns = 250 ns) for a 200 ns kernel
  // costs min(1, 250/200) = 1; B is read by k1, a 500/1100 share.
  while (env.current_tensor() != testing::kB) env.Step(1);
  StepResult r = env.Step(0);
  EXPECT_NEAR(r.reward, 500.0 / 1100.0 - 1.0, 1e-12);
}

// A buffer the framework holds in DRAM takes its share of the limit in
// every decision scope: whatever the agent does, the episode's plan keeps
// the buffer in DRAM and fits beside it.
TEST(PlacementEnv, PinnedTensorsStayInDramAndThePlanFitsBesideThem) {
  const Workload plain = SixLayers(SyntheticShape::kResnetLike);
  const Workload w = testing::WithPinnedBuffer(plain, plain.peak_live_bytes() / 20);
  const uint32_t pinned = static_cast<uint32_t>(w.num_tensors() - 1);
  std::mt19937_64 rng(9);
  for (DecisionScope scope : {DecisionScope::kAccessGaps, DecisionScope::kRelevant, DecisionScope::kAllLive}) {
    EnvConfig c = ThirdOfPeak(w);
    c.scope = scope;
    PlacementEnv env(w, c);
    for (int policy = 0; policy < 3; ++policy) {  // all DRAM, all slow, random
      env.Reset();
      while (!env.done()) {
        // No decision is asked for the pinned buffer: it is DRAM throughout,
        // outside the limit the MDP plans under.
        EXPECT_NE(env.current_tensor(), pinned);
        env.Step(policy == 0 ? 0 : policy == 1 ? 1 : static_cast<int>(rng() % 2));
      }
      const EpisodeSummary& s = env.summary();
      SCOPED_TRACE(std::string(DecisionScopeName(scope)) + " policy " + std::to_string(policy));
      EXPECT_EQ(s.plan.initial_tiers[pinned], Tier::kDram);
      for (const Migration& m : s.plan.migrations) EXPECT_NE(m.tensor, pinned);
      EXPECT_FALSE(s.oom);
      EXPECT_LE(s.cost.dram_peak_bytes, c.dram_limit_bytes);
      EXPECT_EQ(s.plan.dram_limit_bytes, c.dram_limit_bytes);
    }
  }
}

TEST(PlacementEnv, RunningOutOfDramEndsTheEpisodeWithAPenalty) {
  Workload w = HandGraph();
  EnvConfig c = HandConfig();
  c.oom_handling = OomHandling::kTerminate;
  PlacementEnv env(w, c);
  env.Reset();
  StepResult r;
  int steps = 0;
  do {
    r = env.Step(0);  // everything in DRAM: 1700 bytes at k0 > 1000
    ++steps;
  } while (!r.done);
  EXPECT_LE(steps, 3);
  EXPECT_TRUE(env.summary().oom);
  EXPECT_LE(r.reward, -c.oom_penalty + 1.0);
  EXPECT_DOUBLE_EQ(env.summary().episodic_reward, 0.0);
}

TEST(PlacementEnv, ADramChoiceThatDoesNotFitSpillsToTheSlowTier) {
  Workload w = HandGraph();
  EnvConfig c = HandConfig();
  c.spill_penalty = 2.0;
  PlacementEnv env(w, c);
  env.Reset();
  double total = 0;
  while (!env.done()) total += env.Step(0).reward;  // ask for DRAM every time
  const EpisodeSummary& s = env.summary();
  EXPECT_FALSE(s.oom);
  EXPECT_GT(s.spills, 0u);
  EXPECT_FALSE(s.cost.oom);
  EXPECT_LE(s.cost.dram_peak_bytes, c.dram_limit_bytes);
  // k0 holds A (1000) or B + D (700), never all three.
  EXPECT_NE(s.plan.initial_tiers, std::vector<Tier>(4, Tier::kDram));
  EXPECT_LT(s.step_reward_sum, 0.0);
}

TEST(PlacementEnv, EpisodicRewardFollowsEquationThirteen) {
  Workload w = HandGraph();
  EnvConfig c = HandConfig();
  PlacementEnv env(w, c);
  Observation o = env.Reset();
  StepResult r;
  while (!env.done()) r = env.Step(1);  // all slow
  const EpisodeSummary& s = env.summary();
  EXPECT_DOUBLE_EQ(s.cost.total_ns, 835);
  EXPECT_DOUBLE_EQ(s.normalised_cost, 1.0);
  EXPECT_DOUBLE_EQ(s.price_score, 1.0);  // no DRAM used
  double expected = c.reward_fix * (c.beta * 0.0 + (1 - c.beta) * 1.0);
  EXPECT_DOUBLE_EQ(s.episodic_reward, expected);
  EXPECT_DOUBLE_EQ(r.reward, expected);  // last step: slow placement (0) + episodic
  EXPECT_DOUBLE_EQ(env.EpisodicReward(0.0, w.peak_live_bytes()), c.reward_fix * c.beta);
  (void)o;
}

TEST(PlacementEnv, RescoreUsesMeasuredRuntime) {
  Workload w = HandGraph();
  PlacementEnv env(w, HandConfig());
  RunEpisode(env, [](const Observation&) { return 1; });
  double r = env.RescoreWithRuntime(/*runtime=*/150, /*min=*/100, /*max=*/300);
  EXPECT_DOUBLE_EQ(env.summary().normalised_cost, 0.25);
  EXPECT_DOUBLE_EQ(r, 50 * (0.75 * 0.75 + 0.25 * 1.0));
}

TEST(PlacementEnv, ObservationsAreBoundedAndDescribeTheTensor) {
  Workload w = SixLayers(SyntheticShape::kResnetLike);
  EnvConfig c = ThirdOfPeak(w);
  PlacementEnv env(w, c);
  std::mt19937_64 rng(5);
  Observation obs = env.Reset();
  while (!env.done()) {
    for (int i = 0; i < kObservationSize; ++i) {
      EXPECT_TRUE(std::isfinite(obs[i]));
      EXPECT_GE(obs[i], -1.0f) << i;
      EXPECT_LE(obs[i], 1.0f) << i;
    }
    obs = env.Step(static_cast<int>(rng() % 2)).observation;
  }
}

// The gap features, recomputed from the workload: the most live bytes while
// the tensor waits for its next access, and how long it waits.
TEST(PlacementEnv, GapFeaturesDescribeTheWaitForTheNextAccess) {
  Workload w = SixLayers(SyntheticShape::kResnetLike);
  EnvConfig c = ThirdOfPeak(w);
  c.scope = DecisionScope::kAllLive;
  PlacementEnv env(w, c);
  const double K = static_cast<double>(w.num_kernels());
  std::mt19937_64 rng(3);
  Observation obs = env.Reset();
  size_t checked = 0, nonzero_peaks = 0;
  while (!env.done()) {
    const size_t k = env.current_kernel();
    const uint32_t t = env.current_tensor();
    size_t next = w.num_kernels();
    for (uint32_t kt : w.kernels_of_tensor(t))
      if (kt > k) {
        next = kt;
        break;
      }
    double peak = 0;
    for (size_t j = k + 1; j < next; ++j)
      peak = std::max(peak, static_cast<double>(w.live_bytes_at(j)) / static_cast<double>(c.dram_limit_bytes));
    EXPECT_NEAR(obs[kObsGapPeak], std::min(4.0, peak) / 4.0, 1e-5) << "tensor " << t << " kernel " << k;
    EXPECT_NEAR(obs[kObsGapLength], std::log1p(static_cast<double>(next - k)) / std::log1p(K), 1e-5);
    nonzero_peaks += obs[kObsGapPeak] > 0;
    ++checked;
    obs = env.Step(static_cast<int>(rng() % 2)).observation;
  }
  EXPECT_GT(checked, 50u);
  EXPECT_GT(nonzero_peaks, 0u);
}

// kObsStartTier against the episode's own first decisions: at a decision
// of a persistent tensor with no access left (kernel k its last access or
// after it), the tier its first step chose (the plan's initial tier); 0.5 at
// every other decision, so it does not tell where a tensor started while
// the tensor is still used.
TEST(PlacementEnv, StartTierShowsWhereAPersistentTensorStartedOnceItHasNoAccessLeft) {
  Workload w = SixLayers(SyntheticShape::kResnetLike);
  EnvConfig c = ThirdOfPeak(w);
  PlacementEnv env(w, c);
  std::vector<int> first_tier(w.num_tensors(), -1);  // the tier of each tensor's first step
  std::mt19937_64 rng(11);
  Observation obs = env.Reset();
  size_t shown_slow = 0, shown_dram = 0, hidden_persistent = 0;
  while (!env.done()) {
    const size_t k = env.current_kernel();
    const uint32_t t = env.current_tensor();
    const std::vector<uint32_t>& kernels = w.kernels_of_tensor(t);
    const bool access_left = !kernels.empty() && kernels.back() > k;
    const bool placed = first_tier[t] >= 0;
    if (w.tensors[t].persistent && placed && !access_left) {
      ASSERT_EQ(obs[kObsStartTier], static_cast<float>(first_tier[t])) << "tensor " << t << " kernel " << k;
      (first_tier[t] == 1 ? shown_slow : shown_dram) += 1;
    } else {
      ASSERT_EQ(obs[kObsStartTier], 0.5f) << "tensor " << t << " kernel " << k;
      hidden_persistent += w.tensors[t].persistent && placed;
    }
    const int action = static_cast<int>(rng() % 2);
    const bool clipped = action == 0 && env.DramRequestWouldSpill();
    if (!placed) first_tier[t] = clipped ? 1 : action;
    obs = env.Step(action).observation;
  }
  EXPECT_GT(shown_slow, 0u);
  EXPECT_GT(shown_dram, 0u);
  EXPECT_GT(hidden_persistent, 0u);
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    if (w.tensors[t].persistent && first_tier[t] >= 0 && !w.tensors[t].pinned_dram) {
      EXPECT_EQ(env.summary().plan.initial_tiers[t], first_tier[t] == 0 ? Tier::kDram : Tier::kSlow) << t;
    }
  }
}

// A priority decides the order of each kernel's decisions (higher first);
// without one, the order is the heat's. Either way every decision is asked once.
TEST(PlacementEnv, ADecisionPriorityOrdersEachKernelsDecisions) {
  Workload w = SixLayers(SyntheticShape::kVggLike);
  EnvConfig c = ThirdOfPeak(w);
  c.scope = DecisionScope::kAllLive;
  PlacementEnv env(w, c);
  auto decisions = [&](std::vector<std::pair<size_t, uint32_t>>* order, std::vector<float>* sizes) {
    order->clear();
    sizes->clear();
    Observation ob = env.Reset();
    while (!env.done()) {
      order->emplace_back(env.current_kernel(), env.current_tensor());
      sizes->push_back(ob[kObsSizeOfLimit]);
      ob = env.Step(0).observation;
    }
    return env.summary();
  };
  std::vector<std::pair<size_t, uint32_t>> heat_order, size_order;
  std::vector<float> heat_sizes, sizes;
  const EpisodeSummary by_heat = decisions(&heat_order, &heat_sizes);
  // Smallest first: more of the requests for DRAM fit.
  env.SetDecisionPriority([](const std::vector<Observation>& obs, std::vector<float>& priority) {
    for (size_t i = 0; i < obs.size(); ++i) priority[i] = -obs[i][kObsSizeOfLimit];
  });
  const EpisodeSummary by_size = decisions(&size_order, &sizes);
  ASSERT_EQ(size_order.size(), heat_order.size());
  for (size_t i = 1; i < size_order.size(); ++i)
    if (size_order[i].first == size_order[i - 1].first) {
      EXPECT_LE(sizes[i - 1], sizes[i]) << i;
    }
  std::vector<std::pair<size_t, uint32_t>> a = heat_order, b = size_order;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_NE(heat_order, size_order);
  EXPECT_LT(by_size.spills, by_heat.spills);

  env.SetDecisionPriority([](const std::vector<Observation>&, std::vector<float>& priority) { priority.pop_back(); });
  EXPECT_THROW(env.Reset(), std::logic_error);
}

// Whatever the agent does, an episode that did not run out of memory yields
// a plan the cost model finds within the limit: the env and the cost model
// agree on what occupies DRAM, in both migration modes.
TEST(PlacementEnv, PlansFromCompletedEpisodesRespectTheLimit) {
  for (auto shape : {SyntheticShape::kVggLike, SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike}) {
    SyntheticOptions o;
    o.shape = shape;
    o.layers = 5;
    o.base_bytes = 1 << 20;
    o.seed = 3;
    Workload w = GenerateSynthetic(o);
    for (auto mode : {MigrationMode::kSync, MigrationMode::kAsync})
    for (auto scope : {DecisionScope::kRelevant, DecisionScope::kAccessGaps}) {
      EnvConfig c;
      c.dram_limit_bytes = w.peak_live_bytes() / 2;
      c.mode = mode;
      c.scope = scope;
      PlacementEnv env(w, c);
      std::mt19937_64 rng(17);
      int completed = 0;
      for (int episode = 0; episode < 40; ++episode) {
        double p_slow = 0.5 + 0.5 * (episode % 5) / 4.0;
        EpisodeSummary s = RunEpisode(env, [&](const Observation&) {
          return std::uniform_real_distribution<double>(0, 1)(rng) < p_slow ? 1 : 0;
        });
        if (s.oom) continue;
        ++completed;
        EXPECT_FALSE(s.cost.oom) << SyntheticShapeName(shape) << " " << MigrationModeName(mode);
        EXPECT_LE(s.cost.dram_peak_bytes, c.dram_limit_bytes);
        EXPECT_NO_THROW(s.plan.Validate(w));
        EXPECT_EQ(s.plan.mode, mode);
      }
      EXPECT_GT(completed, 5);
    }
  }
}

TEST(PlacementEnv, RelevantScopeSkipsIdleTensorsInTheSlowTier) {
  Workload w = HandGraph();
  EnvConfig c = HandConfig();
  c.scope = DecisionScope::kRelevant;
  PlacementEnv env(w, c);
  EpisodeSummary s = RunEpisode(env, [](const Observation&) { return 1; });
  // k0: A, B, D are new (3 steps); k1: B, C and D are touched, A sits in
  // the slow tier untouched (3 steps); k2: A and C are touched, D is idle (2 steps).
  EXPECT_EQ(s.steps, 8u);
  EXPECT_EQ(s.plan.initial_tiers, std::vector<Tier>(4, Tier::kSlow));
  // Async: k2 reads A, so A is a prefetch candidate at k1.
  c.mode = MigrationMode::kAsync;
  PlacementEnv async(w, c);
  EXPECT_EQ(RunEpisode(async, [](const Observation&) { return 1; }).steps, 9u);
}

// The kernels at which P (idle from k1 to k4) is asked, when the policy
// keeps it in DRAM (or, with `evict_at_gap`, evicts it at its first idle kernel).
std::vector<size_t> KernelsAskingP(DecisionScope scope, MigrationMode mode, bool evict_at_gap,
                                   std::vector<size_t>* holds_until = nullptr) {
  Workload w = testing::LongGapGraph();
  EnvConfig c;
  c.dram_limit_bytes = 1000;
  c.scope = scope;
  c.mode = mode;
  PlacementEnv env(w, c);
  std::vector<size_t> kernels;
  env.Reset();
  while (!env.done()) {
    int action = 1;  // the temporaries go to the slow tier
    if (env.current_tensor() == testing::kLongGapTensor) {
      kernels.push_back(env.current_kernel());
      if (holds_until) holds_until->push_back(env.decision_holds_until());
      action = evict_at_gap && env.current_kernel() == 1 ? 1 : 0;
    }
    env.Step(action);
  }
  return kernels;
}

TEST(PlacementEnv, AccessGapScopeAsksAnIdleDramTensorOncePerGap) {
  using K = std::vector<size_t>;
  EXPECT_EQ(KernelsAskingP(DecisionScope::kAllLive, MigrationMode::kSync, false), (K{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(KernelsAskingP(DecisionScope::kRelevant, MigrationMode::kSync, false), (K{0, 1, 2, 3, 4, 5}));
  K holds;
  EXPECT_EQ(KernelsAskingP(DecisionScope::kAccessGaps, MigrationMode::kSync, false, &holds), (K{0, 1, 5}));
  EXPECT_EQ(holds, (K{1, 5, 6}));  // the gap decision at k1 holds until P's next access
  // Evicted, P idles in the slow tier: asked again where it is read.
  EXPECT_EQ(KernelsAskingP(DecisionScope::kRelevant, MigrationMode::kSync, true), (K{0, 1, 5}));
  EXPECT_EQ(KernelsAskingP(DecisionScope::kAccessGaps, MigrationMode::kSync, true), (K{0, 1, 5}));
  // Async: the kernel before the access decides the prefetch (or a late eviction).
  holds.clear();
  EXPECT_EQ(KernelsAskingP(DecisionScope::kAccessGaps, MigrationMode::kAsync, false, &holds), (K{0, 1, 4, 5}));
  EXPECT_EQ(holds, (K{1, 4, 5, 6}));
}

TEST(PlacementEnv, AnIdleTensorKeptThroughItsGapHoldsItsRoom) {
  // P stays in DRAM from k1 to k4 with no decision there: the temporaries'
  // DRAM requests are clipped to the room it leaves (1,000 - 400 < 700).
  Workload w = testing::LongGapGraph();
  EnvConfig c;
  c.dram_limit_bytes = 1000;
  PlacementEnv env(w, c);
  EXPECT_EQ(c.scope, DecisionScope::kAccessGaps);  // the default
  EpisodeSummary s = RunEpisode(env, [](const Observation&) { return 0; });
  EXPECT_FALSE(s.oom);
  EXPECT_EQ(s.plan.initial_tiers[testing::kLongGapTensor], Tier::kDram);
  for (uint32_t t = 1; t < w.num_tensors(); ++t) EXPECT_EQ(s.plan.initial_tiers[t], Tier::kSlow) << t;
  EXPECT_TRUE(s.plan.migrations.empty());
  EXPECT_LE(s.cost.dram_peak_bytes, c.dram_limit_bytes);
}

// Q's keep-or-evict at k2 sees the room P already holds over Q's gap
// (k3-k4) when P was kept through its own gap at k1, and none when P was
// evicted; the other scopes hold nothing through gaps.
TEST(PlacementEnv, AGapDecisionSeesWhatEarlierKeepsHoldOverItsGap) {
  Workload w = testing::LongGapGraph(/*second=*/true);
  auto q_gap_held = [&](DecisionScope scope, bool keep_p) {
    EnvConfig c;
    c.dram_limit_bytes = 1000;
    c.scope = scope;
    PlacementEnv env(w, c);
    Observation obs = env.Reset();
    float seen = -1;
    while (!env.done()) {
      const uint32_t t = env.current_tensor();
      int action = 1;
      if (t == testing::kLongGapTensor) action = keep_p || env.current_kernel() != 1 ? 0 : 1;
      if (t == testing::kLongGapSecond) {
        action = 0;
        if (env.current_kernel() == 2) seen = obs[kObsGapHeld];
      }
      obs = env.Step(action).observation;
    }
    return seen;
  };
  EXPECT_FLOAT_EQ(q_gap_held(DecisionScope::kAccessGaps, true), 0.4f);
  EXPECT_FLOAT_EQ(q_gap_held(DecisionScope::kAccessGaps, false), 0.0f);
  EXPECT_FLOAT_EQ(q_gap_held(DecisionScope::kRelevant, true), 0.0f);
}

// kObsGapHeld against a brute-force count over a random sync episode: every
// keep of an untouched DRAM tensor holds its bytes from the next kernel
// until its next decision (or the end of its life).
TEST(PlacementEnv, GapHeldBytesMatchABruteForceCount) {
  Workload w = SixLayers(SyntheticShape::kResnetLike);
  EnvConfig c = ThirdOfPeak(w);
  PlacementEnv env(w, c);
  const size_t K = w.num_kernels();
  std::vector<double> held(K, 0.0);
  std::mt19937_64 rng(9);
  Observation obs = env.Reset();
  size_t gap_decisions = 0, nonzero = 0;
  while (!env.done()) {
    const size_t k = env.current_kernel();
    const uint32_t t = env.current_tensor();
    size_t gap_end = std::min<size_t>(w.tensors[t].free_kernel + 1, K);
    for (uint32_t kt : w.kernels_of_tensor(t))
      if (kt > k) {
        gap_end = kt;
        break;
      }
    double most = 0;
    for (size_t j = k + 1; j < gap_end; ++j) most = std::max(most, held[j]);
    ASSERT_NEAR(obs[kObsGapHeld], std::min(1.0, most / static_cast<double>(c.dram_limit_bytes)), 1e-6)
        << "tensor " << t << " kernel " << k;
    nonzero += obs[kObsGapHeld] > 0;
    const bool gap_decision = obs[kObsAccessedNow] == 0 && obs[kObsTier] == 0.0f;
    const size_t until = std::min<size_t>(env.decision_holds_until(), w.tensors[t].free_kernel + 1);
    const int action = static_cast<int>(rng() % 3 == 0);  // mostly keep
    const bool clipped = action == 0 && env.DramRequestWouldSpill();
    if (gap_decision && action == 0 && !clipped) {
      ++gap_decisions;
      for (size_t j = k + 1; j < until; ++j) held[j] += static_cast<double>(w.tensors[t].size_bytes);
    }
    obs = env.Step(action).observation;
  }
  EXPECT_GT(gap_decisions, 5u);
  EXPECT_GT(nonzero, 0u);
}

TEST(PlacementEnv, DecisionScopesHaveNames) {
  for (DecisionScope s : {DecisionScope::kAllLive, DecisionScope::kRelevant, DecisionScope::kAccessGaps})
    EXPECT_EQ(ParseDecisionScope(DecisionScopeName(s)), s);
  EXPECT_THROW(ParseDecisionScope("gaps"), std::invalid_argument);
}

TEST(PlacementEnv, NoDecisionsWhenEverythingFits) {
  Workload w = HandGraph();
  EnvConfig c;
  c.dram_limit_bytes = 1u << 20;
  PlacementEnv env(w, c);
  env.Reset();
  EXPECT_TRUE(env.done());
  EXPECT_EQ(env.max_steps(), 0u);
  EXPECT_DOUBLE_EQ(env.summary().cost.total_ns, 600);
}

TEST(PlacementEnv, RejectsBadConfig) {
  Workload w = HandGraph();
  EnvConfig c;
  c.dram_limit_bytes = 0;
  EXPECT_THROW(PlacementEnv(w, c), std::invalid_argument);
  c.dram_limit_bytes = 10;
  c.beta = 1.5;
  EXPECT_THROW(PlacementEnv(w, c), std::invalid_argument);
}

TEST(Synthetic, ShapesAreValidAndDistinct) {
  for (auto shape : {SyntheticShape::kVggLike, SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike,
                     SyntheticShape::kTiny}) {
    SyntheticOptions o;
    o.shape = shape;
    o.layers = 8;
    Workload w = GenerateSynthetic(o);
    EXPECT_TRUE(w.finalized());
    EXPECT_EQ(w.num_kernels(), 8u * 3 + 1);
    EXPECT_GT(w.peak_live_bytes(), 0u);
    EXPECT_GT(MaxCostNs(w), MinCostNs(w));
    EXPECT_EQ(GenerateSynthetic(o).Signature(), w.Signature());  // deterministic
  }
  SyntheticOptions m;
  m.shape = SyntheticShape::kMobilenetLike;
  Workload w = GenerateSynthetic(m);
  size_t small = 0;
  for (const Tensor& t : w.tensors) small += t.size_bytes < 4096;
  EXPECT_GT(small, w.num_tensors() / 2);  // mostly tensors under a page
  EXPECT_THROW(ParseSyntheticShape("lenet"), std::invalid_argument);
}

uint32_t TensorNamed(const Workload& w, const std::string& name) {
  for (uint32_t t = 0; t < w.num_tensors(); ++t)
    if (w.tensors[t].name == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return 0u;
}

size_t KernelsTouching(const Workload& w, uint32_t tensor) {
  size_t n = 0;
  for (const Access& a : w.accesses) n += a.tensor == tensor;
  return n;
}

// The recurrent shape: two cells unrolled over time, so each weight is read
// by every step forward and backward, and its gradient is summed at every
// step into one tensor live across the whole backward pass.
TEST(Synthetic, RecurrentShapeReusesEachWeightAtEveryStep) {
  EXPECT_EQ(ParseSyntheticShape("rnn"), SyntheticShape::kRnnLike);
  EXPECT_EQ(ParseSyntheticShape(SyntheticShapeName(SyntheticShape::kRnnLike)), SyntheticShape::kRnnLike);
  SyntheticOptions o;
  o.shape = SyntheticShape::kRnnLike;
  o.layers = 6;
  Workload w = GenerateSynthetic(o);
  ASSERT_TRUE(w.finalized());
  EXPECT_EQ(GenerateSynthetic(o).Signature(), w.Signature());
  // 2 cells x 6 steps x (2 forward + 3 backward kernels), the head forward
  // and backward, the loss, each cell's last sum, one optimizer kernel per
  // cell and the head's.
  EXPECT_EQ(w.num_kernels(), 2u * 6 * 5 + 3 + 2 + 3);
  EXPECT_GT(MaxCostNs(w), MinCostNs(w));
  auto find = [&](const std::string& name) { return TensorNamed(w, name); };
  auto kernels_touching = [&](uint32_t tensor) { return KernelsTouching(w, tensor); };
  const uint32_t weight = find("cell0.weight_hh");
  EXPECT_TRUE(w.tensors[weight].persistent);
  EXPECT_EQ(kernels_touching(weight), 2u * 6 + 1);  // every step, both passes, and the optimizer
  const uint32_t sum = find("cell1.weight_ih.grad");
  EXPECT_FALSE(w.tensors[sum].persistent);
  // Summed at the 4 steps with a share 2 steps old, then once more for the
  // last 2 shares; read by the optimizer.
  EXPECT_EQ(kernels_touching(sum), 4u + 1 + 1);
  EXPECT_EQ(w.kernels[w.tensors[sum].free_kernel].name, "optimizer.cell1");
  // One step's share: written once, read once, two steps (12 kernels) later.
  const uint32_t share = find("cell1.3.weight_ih.grad");
  EXPECT_EQ(kernels_touching(share), 2u);
  EXPECT_EQ(w.kernels[w.tensors[share].free_kernel].name, "backward.cell1.1.accumulate");
  EXPECT_EQ(w.tensors[find("cell1.0.weight_ih.grad")].free_kernel, w.tensors[find("cell1.1.weight_ih.grad")].free_kernel);
  for (const Tensor& t : w.tensors) EXPECT_LE(t.alloc_kernel, t.free_kernel) << t.name;
  o.layers = 1025;
  EXPECT_THROW(GenerateSynthetic(o), std::invalid_argument);
}

// The transformer shape: AdamW keeps two states per parameter, each block's
// attention probabilities live from the softmax to its backward, and a
// weight's gradient from its backward kernel to the optimizer's step.
TEST(Synthetic, TransformerShapeKeepsAttentionForBackwardAndTwoAdamStates) {
  EXPECT_EQ(ParseSyntheticShape("transformer"), SyntheticShape::kTransformerLike);
  EXPECT_EQ(ParseSyntheticShape(SyntheticShapeName(SyntheticShape::kTransformerLike)),
            SyntheticShape::kTransformerLike);
  SyntheticOptions o;
  o.shape = SyntheticShape::kTransformerLike;
  o.layers = 3;
  Workload w = GenerateSynthetic(o);
  ASSERT_TRUE(w.finalized());
  EXPECT_EQ(GenerateSynthetic(o).Signature(), w.Signature());
  // 9 forward and 9 backward kernels and one optimizer step per block; the
  // embedding (forward, backward, step), the final norm, head and loss
  // forward, their two backward kernels and one step.
  EXPECT_EQ(w.num_kernels(), 3u * 19 + 3 + 3 + 2 + 1);
  EXPECT_GT(MaxCostNs(w), MinCostNs(w));
  auto find = [&](const std::string& name) { return TensorNamed(w, name); };
  auto kernels_touching = [&](uint32_t tensor) { return KernelsTouching(w, tensor); };
  size_t parameters = 0, states = 0;
  for (const Tensor& t : w.tensors) {
    parameters += t.kind == TensorKind::kParameter;
    states += t.kind == TensorKind::kOptimizerState;
  }
  EXPECT_EQ(states, 2 * parameters);
  const uint32_t qkv = find("block1.attn.qkv.weight");
  EXPECT_TRUE(w.tensors[qkv].persistent);
  EXPECT_EQ(kernels_touching(qkv), 3u);  // forward, backward, its step
  const uint32_t probs = find("block1.attn.probs");
  EXPECT_FALSE(w.tensors[probs].persistent);
  EXPECT_EQ(w.kernels[w.tensors[probs].alloc_kernel].name, "forward.block1.attn.softmax");
  EXPECT_EQ(w.kernels[w.tensors[probs].free_kernel].name, "backward.block1.attn.softmax");
  const uint32_t grad = find("block2.mlp.fc1.weight.grad");
  EXPECT_EQ(w.kernels[w.tensors[grad].alloc_kernel].name, "backward.block2.mlp.fc1");
  EXPECT_EQ(w.kernels[w.tensors[grad].free_kernel].name, "optimizer.block2");
  // The MLP's hidden activation is four times the residual stream's.
  EXPECT_EQ(w.tensors[find("block0.mlp.fc1.out")].size_bytes, 4 * w.tensors[find("block0.out")].size_bytes);
  size_t small = 0;
  for (const Tensor& t : w.tensors) small += t.size_bytes < 4096;
  EXPECT_GT(small, 0u);  // biases and norm gains
  for (const Tensor& t : w.tensors) EXPECT_LE(t.alloc_kernel, t.free_kernel) << t.name;
  o.layers = 1025;
  EXPECT_THROW(GenerateSynthetic(o), std::invalid_argument);
}

}  // namespace
}  // namespace tensortier

namespace tensortier {
namespace {

// With async copies, a tensor in DRAM holds DRAM during the kernel whatever
// it is decided (kept, or its eviction in flight): DRAM requests leave room
// for the residents still to decide, so no policy runs the MDP out of memory
// (a constant-DRAM policy did, on MobileNetV2 at 0.2 x peak).
TEST(PlacementEnv, AsyncEpisodesNeverRunOutOfMemoryWithClipToFit) {
  int episodes = 0;
  for (SyntheticShape shape : testing::kSyntheticFamilies) {
    Workload w = testing::SyntheticWithLayers(shape, 8);
    w.Finalize();
    for (double fraction : {0.1, 0.2, 0.35})
    for (DecisionScope scope : {DecisionScope::kRelevant, DecisionScope::kAccessGaps}) {
      EnvConfig c;
      c.dram_limit_bytes = static_cast<uint64_t>(fraction * static_cast<double>(w.peak_live_bytes()));
      c.mode = MigrationMode::kAsync;
      c.scope = scope;
      PlacementEnv env(w, c);
      std::mt19937_64 rng(11);
      for (int policy = 0; policy < 4; ++policy) {
        EpisodeSummary s = RunEpisode(env, [&](const Observation& o) {
          switch (policy) {
            case 0: return 0;                                     // always DRAM
            case 1: return o[kObsAccessedNow] > 0 ? 0 : 1;        // DRAM while used
            case 2: return o[kObsTier] == 0.0f ? 1 : 0;            // flip every tensor
            default: return static_cast<int>(rng() % 2);          // random
          }
        });
        ++episodes;
        EXPECT_FALSE(s.oom) << SyntheticShapeName(shape) << " at " << fraction << ", policy " << policy;
        EXPECT_FALSE(s.cost.oom) << SyntheticShapeName(shape) << " at " << fraction << ", policy " << policy;
      }
    }
  }
  EXPECT_EQ(episodes, 24 * static_cast<int>(std::size(testing::kSyntheticFamilies)));
}

// An async migration after kernel k of a tensor that dies at k + 1 and that
// k + 1 does not write: the copy overlaps k + 1, which still uses the source,
// so the tensor would reach its new tier only when dead, and the executor
// cannot finish the copy of a storage freed under it (it counts the
// migration skipped: greedy plans on profiled AlexNet had three).
bool MovesATensorUnderItsLastKernel(const Workload& w, const Migration& m) {
  const Tensor& t = w.tensors[m.tensor];
  return !t.persistent && static_cast<int64_t>(t.free_kernel) <= m.after_kernel + 1 &&
         !w.KernelWrites(static_cast<size_t>(m.after_kernel) + 1, m.tensor);
}

// Hand graph: B (500 B, [k0, k1]) is written at k0 and read at k1, its last
// kernel. Started in the slow tier and asked for DRAM at k1, it moves in sync
// mode (the copy blocks before k1) and stays in async mode; written at k1,
// its copy is synchronous in async mode too, and it moves.
TEST(PlacementEnv, AsyncCopiesThatWouldFinishAfterTheTensorDiesAreNotPlanned) {
  for (bool written_at_k1 : {false, true})
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      Workload w = HandGraph();
      if (written_at_k1) {
        for (Access& a : w.accesses)
          if (a.kernel == 1 && a.tensor == testing::kB) a.writes = 1;
        w.Finalize();
      }
      PlacementEnv env(w, HandConfig(mode));
      EpisodeSummary s = RunEpisode(env, [&](const Observation&) {
        if (env.current_tensor() != testing::kB) return 1;
        return env.current_kernel() == 0 ? 1 : 0;  // B: slow at k0, DRAM at k1
      });
      const std::string what = std::string(MigrationModeName(mode)) + (written_at_k1 ? ", written at k1" : "");
      EXPECT_EQ(s.plan.initial_tiers[testing::kB], Tier::kSlow) << what;
      const bool moved = std::count(s.plan.migrations.begin(), s.plan.migrations.end(),
                                    Migration{0, testing::kB, Tier::kDram}) == 1;
      EXPECT_EQ(moved, mode == MigrationMode::kSync || written_at_k1) << what;
      if (mode == MigrationMode::kAsync) {
        for (const Migration& m : s.plan.migrations) EXPECT_FALSE(MovesATensorUnderItsLastKernel(w, m)) << what;
      }
    }
  // A persistent tensor still moves at its last kernel: it spares the copy
  // back at the end of the iteration.
  Workload w = HandGraph(/*a_persistent=*/true);
  PlacementEnv env(w, HandConfig(MigrationMode::kAsync));
  EpisodeSummary s = RunEpisode(env, [&](const Observation&) {
    if (env.current_tensor() != testing::kA) return 1;
    return env.current_kernel() < 2 ? 1 : 0;  // A: slow, then DRAM at k2 (its initial tier is slow)
  });
  EXPECT_EQ(std::count(s.plan.migrations.begin(), s.plan.migrations.end(), Migration{1, testing::kA, Tier::kDram}),
            1);
}

// Whatever a policy asks, async plans hold no such migration.
TEST(PlacementEnv, AsyncPlansNeverMoveATensorUnderItsLastKernel) {
  int episodes = 0;
  size_t migrations = 0;
  for (SyntheticShape shape : testing::kSyntheticFamilies) {
    Workload w = testing::SyntheticWithLayers(shape, 8);
    w.Finalize();
    for (double fraction : {0.1, 0.35})
      for (DecisionScope scope : {DecisionScope::kAllLive, DecisionScope::kAccessGaps}) {
        EnvConfig c;
        c.dram_limit_bytes = static_cast<uint64_t>(fraction * static_cast<double>(w.peak_live_bytes()));
        c.mode = MigrationMode::kAsync;
        c.scope = scope;
        PlacementEnv env(w, c);
        std::mt19937_64 rng(3);
        for (int policy = 0; policy < 3; ++policy) {
          EpisodeSummary s = RunEpisode(env, [&](const Observation& o) {
            switch (policy) {
              case 0: return o[kObsTier] == 0.0f ? 1 : 0;  // flip every tensor
              case 1: return o[kObsAccessedNow] > 0 ? 0 : 1;  // DRAM while used
              default: return static_cast<int>(rng() % 2);
            }
          });
          ++episodes;
          migrations += s.plan.migrations.size();
          for (const Migration& m : s.plan.migrations)
            EXPECT_FALSE(MovesATensorUnderItsLastKernel(w, m))
                << SyntheticShapeName(shape) << " at " << fraction << ", policy " << policy << ": tensor " << m.tensor
                << " after kernel " << m.after_kernel;
        }
      }
  }
  EXPECT_EQ(episodes, 12 * static_cast<int>(std::size(testing::kSyntheticFamilies)));
  EXPECT_GT(migrations, 0u);
}

// An action per decision, a function of its kernel and tensor, so that an
// episode resumed from a checkpoint, or one that differs in one decision,
// takes the same actions at the same decisions. `flipped`: the (kernel,
// tensor) decision that takes the other action.
constexpr uint64_t kNoFlip = ~uint64_t{0};
int KeyedAction(const PlacementEnv& env, uint64_t flipped) {
  const uint64_t key = (uint64_t{env.current_kernel()} << 32) | env.current_tensor();
  const int a = static_cast<int>(std::hash<uint64_t>{}(key * 0x9E3779B97F4A7C15ull) % 3 == 0);  // DRAM twice as often
  return key == flipped ? 1 - a : a;
}

struct PlayedEpisode {
  EpisodeSummary summary;
  std::vector<uint64_t> keys;                    // (kernel, tensor) of each step
  std::vector<size_t> kernel_start_steps;
  std::vector<size_t> kernels;                   // of each kernel start
  std::vector<uint64_t> fingerprints;            // before each step
  std::vector<PlacementEnv::Checkpoint> checkpoints;  // at each kernel start
  std::vector<EpisodeSummary> progress;          // steps, spills, step rewards before each step
};

PlayedEpisode Play(PlacementEnv& env, uint64_t flipped) {
  PlayedEpisode p;
  env.Reset();
  for (size_t i = 0; !env.done(); ++i) {
    p.keys.push_back((uint64_t{env.current_kernel()} << 32) | env.current_tensor());
    p.fingerprints.push_back(env.fingerprint());
    p.progress.push_back(env.summary());
    if (env.at_kernel_start()) {
      p.kernel_start_steps.push_back(i);
      p.kernels.push_back(env.current_kernel());
      p.checkpoints.push_back(env.TakeCheckpoint());
    } else {
      EXPECT_THROW(env.TakeCheckpoint(), std::logic_error);
    }
    env.Step(KeyedAction(env, flipped));
  }
  p.summary = env.summary();
  return p;
}

// The plan-time search's replays resume an episode at a kernel's start and
// end it where they rejoin another: both must give the plan, cost and
// summary that playing the whole episode gives.
TEST(PlacementEnv, AResumedEpisodeAndOneFinishedAsAnotherMakeTheWholeEpisodesPlan) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    SCOPED_TRACE(mode == MigrationMode::kSync ? "sync" : "async");
    Workload w = SixLayers(SyntheticShape::kResnetLike);
    w.Finalize();
    EnvConfig c = ThirdOfPeak(w);
    c.mode = mode;
    PlacementEnv env(w, c);
    const PlayedEpisode base = Play(env, kNoFlip);
    ASSERT_GE(base.kernel_start_steps.size(), 4u);
    for (size_t k = 0; k < base.kernel_start_steps.size(); k += 3) {
      env.Resume(base.checkpoints[k], base.summary.plan);
      EXPECT_EQ(env.fingerprint(), base.fingerprints[base.kernel_start_steps[k]]);
      while (!env.done()) env.Step(KeyedAction(env, kNoFlip));
      EXPECT_TRUE(env.summary().plan == base.summary.plan);
      EXPECT_EQ(env.summary().cost.total_ns, base.summary.cost.total_ns);
      EXPECT_EQ(env.summary().steps, base.summary.steps);
      EXPECT_EQ(env.summary().spills, base.summary.spills);
      EXPECT_DOUBLE_EQ(env.summary().step_reward_sum, base.summary.step_reward_sum);
    }
    // Episodes that differ from base in one decision: once one's
    // fingerprint at a kernel's start is base's, FinishAs ends it with
    // base's decisions, and the plan is the one its whole play makes.
    size_t rejoined = 0, flips = 0;
    for (size_t f = 0; f < base.keys.size(); f += 7, ++flips) {
      const uint64_t flipped = base.keys[f];
      const PlayedEpisode whole = Play(env, flipped);
      ASSERT_FALSE(whole.summary.oom);
      for (size_t k = 0; k < whole.kernel_start_steps.size(); ++k) {
        if (whole.kernels[k] <= (flipped >> 32)) continue;
        auto same = std::find(base.kernels.begin(), base.kernels.end(), whole.kernels[k]);
        if (same == base.kernels.end()) continue;
        const size_t i = base.kernel_start_steps[static_cast<size_t>(same - base.kernels.begin())];
        if (base.fingerprints[i] != whole.fingerprints[whole.kernel_start_steps[k]]) continue;
        env.Resume(whole.checkpoints[k], whole.summary.plan);
        env.FinishAs(base.summary, base.progress[i]);
        EXPECT_TRUE(env.summary().plan == whole.summary.plan);
        EXPECT_EQ(env.summary().cost.total_ns, whole.summary.cost.total_ns);
        EXPECT_EQ(env.summary().steps, whole.summary.steps);
        EXPECT_EQ(env.summary().spills, whole.summary.spills);
        EXPECT_NEAR(env.summary().step_reward_sum, whole.summary.step_reward_sum, 1e-9);
        ++rejoined;
      }
    }
    EXPECT_GT(rejoined, flips);  // the premise: most flips' effects end
    // Checkpoints and plans of another env are refused.
    EnvConfig half = c;
    half.dram_limit_bytes = w.peak_live_bytes() / 2;
    PlacementEnv other(w, half);
    EXPECT_THROW(other.Resume(base.checkpoints[0], base.summary.plan), std::invalid_argument);
    Workload w2 = SixLayers(SyntheticShape::kVggLike);
    w2.Finalize();
    PlacementEnv env2(w2, ThirdOfPeak(w2));
    EXPECT_THROW(env2.Resume(base.checkpoints[0], base.summary.plan), std::invalid_argument);
  }
}

// A corpus's envs take turns (learner/imitation.cc): each frees its decision
// slots between episodes and builds them at its next Reset or Resume. The
// rebuilt env must be the same MDP: the same observations, rewards and plan.
TEST(PlacementEnv, ReleasedDecisionSlotsAreBuiltAgainIntoTheSameEpisodes) {
  auto play = [](PlacementEnv& env, std::vector<float>* observed, std::vector<double>* rewards) {
    Observation o = env.Reset();
    while (!env.done()) {
      observed->insert(observed->end(), o.begin(), o.end());
      StepResult r = env.Step(KeyedAction(env, kNoFlip));
      rewards->push_back(r.reward);
      o = r.observation;
    }
  };
  for (SyntheticShape shape : testing::kSyntheticFamilies) {
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      SCOPED_TRACE(static_cast<int>(shape) * 2 + static_cast<int>(mode));
      Workload w = SixLayers(shape);
      w.Finalize();
      EnvConfig c = ThirdOfPeak(w);
      c.mode = mode;
      PlacementEnv env(w, c);
      ASSERT_TRUE(env.decision_slots_built());
      const uint64_t slot_bytes = env.decision_slot_bytes();
      const uint32_t max_steps = env.max_steps();
      ASSERT_GT(max_steps, 0u);
      EXPECT_GE(slot_bytes, uint64_t{max_steps} * 8);  // two 4-byte arrays per slot
      std::vector<float> observed, observed_again;
      std::vector<double> rewards, rewards_again;
      const PlayedEpisode base = Play(env, kNoFlip);
      play(env, &observed, &rewards);
      const EpisodeSummary first = env.summary();
      EXPECT_TRUE(first.plan == base.summary.plan);

      env.ReleaseDecisionSlots();
      EXPECT_FALSE(env.decision_slots_built());
      EXPECT_EQ(env.decision_slot_bytes(), 0u);
      EXPECT_TRUE(env.done());
      EXPECT_TRUE(env.summary().plan == first.plan);  // the last episode's stays readable
      play(env, &observed_again, &rewards_again);
      EXPECT_TRUE(env.decision_slots_built());
      EXPECT_EQ(env.decision_slot_bytes(), slot_bytes);
      EXPECT_EQ(env.max_steps(), max_steps);
      EXPECT_EQ(observed_again, observed);
      EXPECT_EQ(rewards_again, rewards);
      EXPECT_TRUE(env.summary().plan == first.plan);
      EXPECT_EQ(env.summary().cost.total_ns, first.cost.total_ns);

      // A checkpoint taken before the release resumes on the rebuilt slots.
      env.ReleaseDecisionSlots();
      ASSERT_GE(base.checkpoints.size(), 2u);
      env.Resume(base.checkpoints[1], base.summary.plan);
      EXPECT_TRUE(env.decision_slots_built());
      EXPECT_EQ(env.fingerprint(), base.fingerprints[base.kernel_start_steps[1]]);
      // Not while an episode is in progress: its state would be lost.
      EXPECT_THROW(env.ReleaseDecisionSlots(), std::logic_error);
      while (!env.done()) env.Step(KeyedAction(env, kNoFlip));
      EXPECT_TRUE(env.summary().plan == base.summary.plan);
    }
  }
}

}  // namespace
}  // namespace tensortier
