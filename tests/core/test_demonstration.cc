// Plans of other policies as demonstrations in the MDP, and the search at
// plan time (envs/demonstration.h, envs/plan_search.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "envs/cost_model.h"
#include "envs/demonstration.h"
#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/synthetic.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {

Workload Resnet(int layers = 6) {
  SyntheticOptions o;
  o.shape = SyntheticShape::kResnetLike;
  o.layers = layers;
  Workload w = GenerateSynthetic(o);
  w.Finalize();
  return w;
}

// The greedy episode and one deviation, no bias, and no replay of any kind:
// a test turns on the phase it looks at.
PlanSearchOptions OnePhase() {
  PlanSearchOptions o;
  o.max_rollouts = 2;
  o.biases = {};
  o.max_replays = 0;
  o.replays_per_improvement = 0;
  o.max_pair_replays = 0;
  o.max_cyclic_replays = 0;
  o.max_blocker_replays = 0;
  o.max_tensor_replays = 0;
  o.max_room_replays = 0;
  o.max_window_replays = 0;
  o.polish_plan = false;  // a phase's plan as it found it
  o.max_polished_restarts = 0;  // one search
  return o;
}

EnvConfig Config(const Workload& w, double fraction, MigrationMode mode = MigrationMode::kSync) {
  EnvConfig c;
  c.dram_limit_bytes = static_cast<uint64_t>(fraction * static_cast<double>(w.peak_live_bytes()));
  c.mode = mode;
  c.beta = 1.0;
  return c;
}

// The room graph's limit (testing::RoomGraph): A and B kept leave Y too little.
EnvConfig RoomConfig() {
  EnvConfig c;
  c.dram_limit_bytes = 1000;
  c.beta = 1.0;
  return c;
}

TEST(Demonstration, ReplayingAPlanReproducesItsCostAndEveryDecisionIsTheExperts) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    Workload w = Resnet();
    EnvConfig c = Config(w, 0.3, mode);
    PlacementEnv env(w, c);
    PlacementPlan expert = FirstTouchPlan(w, c.dram_limit_bytes);
    expert.mode = mode;
    Demonstration d = DemonstratePlan(env, expert);
    ASSERT_FALSE(d.transitions.empty());
    EXPECT_EQ(d.transitions.size(), d.summary.steps);
    EXPECT_EQ(d.clipped, 0u);
    const CostReport want = EvaluatePlan(w, expert);
    EXPECT_NEAR(d.summary.cost.total_ns, want.total_ns, 1e-9 * want.total_ns) << MigrationModeName(mode);
    // The transitions chain: each next observation is the next transition's observation.
    for (size_t i = 0; i + 1 < d.transitions.size(); ++i) {
      ASSERT_FALSE(d.transitions[i].done);
      ASSERT_EQ(d.transitions[i].next_observation, d.transitions[i + 1].observation) << i;
    }
    EXPECT_TRUE(d.transitions.back().done);
  }
}

TEST(Demonstration, APlanTheMdpMadeIsReplayedDecisionForDecision) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    Workload w = Resnet();
    PlacementEnv env(w, Config(w, 0.3, mode));
    std::mt19937_64 rng(5);
    std::vector<int> actions;
    EpisodeSummary played = RunEpisode(env, [&](const Observation&) {
      actions.push_back(static_cast<int>(rng() % 2));
      return actions.back();
    });
    ASSERT_FALSE(played.plan.migrations.empty());  // the plan moves tensors
    Demonstration d = DemonstratePlan(env, played.plan);
    EXPECT_TRUE(d.summary.plan.initial_tiers == played.plan.initial_tiers);
    EXPECT_TRUE(d.summary.plan.migrations == played.plan.migrations) << MigrationModeName(mode);
    EXPECT_EQ(d.summary.cost.total_ns, played.cost.total_ns);
  }
}

// A decision that holds for a whole access gap is labelled "DRAM" only when
// the plan keeps the tensor in DRAM all that time: a plan that evicts P in
// the middle of its gap (after k2) and fetches it back for k5 is replayed
// as an eviction at the gap's first kernel, which costs the same copies.
TEST(Demonstration, AGapDecisionIsLabelledSlowWhenThePlanEvictsWithinTheGap) {
  Workload w = testing::LongGapGraph();
  EnvConfig c;
  c.dram_limit_bytes = 1000;
  ASSERT_EQ(c.scope, DecisionScope::kAccessGaps);
  PlacementEnv env(w, c);
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, c.dram_limit_bytes);
  plan.initial_tiers[testing::kLongGapTensor] = Tier::kDram;
  plan.migrations = {{2, testing::kLongGapTensor, Tier::kSlow}, {4, testing::kLongGapTensor, Tier::kDram}};
  plan.Validate(w);
  Demonstration d = DemonstratePlan(env, plan);
  EXPECT_EQ(d.clipped, 0u);
  const std::vector<Migration> want = {{0, testing::kLongGapTensor, Tier::kSlow},
                                       {4, testing::kLongGapTensor, Tier::kDram}};
  EXPECT_TRUE(d.summary.plan.migrations == want);
  EXPECT_NEAR(d.summary.cost.total_ns, EvaluatePlan(w, plan).total_ns, 1e-9);
  // Under the relevant scope P is asked at every kernel and the plan is replayed as it is.
  c.scope = DecisionScope::kRelevant;
  PlacementEnv every_kernel(w, c);
  EXPECT_TRUE(DemonstratePlan(every_kernel, plan).summary.plan.migrations == plan.migrations);
}

TEST(Demonstration, DemonstratingAllSlowChoosesSlowEverywhere) {
  Workload w = Resnet();
  EnvConfig c = Config(w, 0.3);
  PlacementEnv env(w, c);
  Demonstration d = DemonstratePlan(env, PlacementPlan::Uniform(w, Tier::kSlow, c.dram_limit_bytes));
  for (const Transition& t : d.transitions) ASSERT_EQ(t.action, 1);
  EXPECT_NEAR(d.summary.cost.total_ns, MaxCostNs(w), 1e-9 * MaxCostNs(w));
}

TEST(Demonstration, APlanOfAnotherWorkloadIsRefused) {
  Workload w = Resnet();
  Workload other = Resnet(8);
  PlacementEnv env(w, Config(w, 0.3));
  EXPECT_THROW(DemonstratePlan(env, FirstTouchPlan(other, 1000)), std::invalid_argument);
}

TEST(Demonstration, LabelRolloutLabelsTheStatesAPolicyVisitsWithThePlansTiers) {
  Workload w = Resnet();
  EnvConfig c = Config(w, 0.3);
  PlacementEnv env(w, c);
  PlacementPlan slow = PlacementPlan::Uniform(w, Tier::kSlow, c.dram_limit_bytes);
  // The policy always asks for DRAM; the expert says slow everywhere.
  Demonstration d = LabelRollout(env, slow, [](const Observation&) { return 0; });
  EpisodeSummary driven = RunEpisode(env, [](const Observation&) { return 0; });
  EXPECT_EQ(d.summary.cost.total_ns, driven.cost.total_ns);  // the policy drove the episode
  ASSERT_EQ(d.transitions.size(), driven.steps);
  size_t terminal = 0, agreed = 0, last_gaps = 0;
  for (const Transition& t : d.transitions) {
    // A persistent tensor's last gap (untouched, no access left) is
    // labelled with the tier the rollout started it in: the plan ends every
    // tensor where it starts it. Every other label is the expert's.
    const bool last_gap = t.observation[kObsStartTier] != 0.5f && t.observation[kObsAccessedNow] == 0.0f;
    const int label = last_gap ? (t.observation[kObsStartTier] == 0.0f ? 0 : 1) : 1;
    ASSERT_EQ(t.action, label);
    last_gaps += last_gap;
    // Where the policy disagreed (asked for DRAM), what the label would have
    // led to was never observed, so the row is terminal with no next state.
    if (label == 0) {
      ++agreed;
    } else if (t.done && t.next_observation.empty()) {
      ++terminal;
    }
  }
  EXPECT_GT(last_gaps, 0u);
  EXPECT_GT(agreed, 0u);
  EXPECT_EQ(terminal + agreed, d.transitions.size());
  EXPECT_THROW(LabelRollout(env, slow, {}), std::invalid_argument);
}

// A rollout that keeps A and B through their gap crowds out Y (700 B, 300
// ns from the slow tier) at k5; with the room priced, the labels of the two
// gap decisions turn slow (each costs a 20 ns copy out and a 40 ns copy
// back, together less than Y saves), and X's clipped request at k2 (10 ns)
// is not worth an eviction. With copies dearer than Y saves, nothing turns.
TEST(Demonstration, RoomLabelsChargeTheKeptGapsThatCrowdOutADramLabel) {
  auto gap_labels = [](const Demonstration& d, int action) {
    size_t n = 0;
    for (const Transition& t : d.transitions)
      n += t.observation[kObsAccessedNow] == 0.0f && t.observation[kObsTier] == 0.0f && t.action == action;
    return n;
  };
  for (bool dear_copies : {false, true}) {
    Workload w = testing::RoomGraph();
    if (dear_copies) {
      w.device.dram_to_slow_bytes_per_second = 1e9;  // 400 ns a copy out
      w.device.slow_to_dram_bytes_per_second = 1e9;
    }
    const EnvConfig c = RoomConfig();
    PlacementEnv env(w, c);
    const PlacementPlan dram = PlacementPlan::Uniform(w, Tier::kDram, c.dram_limit_bytes);
    auto always_dram = [](const Observation&) { return 0; };
    const Demonstration plain = LabelRollout(env, dram, always_dram);
    RolloutLabels priced;
    priced.price_room = true;
    const Demonstration d = LabelRollout(env, dram, always_dram, priced);
    SCOPED_TRACE(dear_copies ? "dear copies" : "cheap copies");
    EXPECT_EQ(d.summary.cost.total_ns, plain.summary.cost.total_ns);  // the same episode
    ASSERT_EQ(d.transitions.size(), plain.transitions.size());
    EXPECT_EQ(plain.clipped, 2u);  // X at k2, Y at k5
    EXPECT_EQ(d.clipped, 2u);
    EXPECT_EQ(plain.room_relabelled, 0u);
    EXPECT_EQ(gap_labels(plain, 1), 0u);
    ASSERT_GE(gap_labels(plain, 0), 2u);  // the premise: A and B kept over a gap
    const uint32_t want = dear_copies ? 0 : 2;
    EXPECT_EQ(d.room_relabelled, want);
    EXPECT_EQ(gap_labels(d, 1), want);
    size_t differ = 0;
    for (size_t i = 0; i < d.transitions.size(); ++i) {
      if (d.transitions[i].action == plain.transitions[i].action) continue;
      ++differ;
      EXPECT_EQ(d.transitions[i].action, 1);
      EXPECT_TRUE(d.transitions[i].done);  // the label's outcome was not observed
      EXPECT_TRUE(d.transitions[i].next_observation.empty());
    }
    EXPECT_EQ(differ, want);
  }
}

// The plan evicts A and B over k2-k8 (their gap decisions at k1 are
// labelled slow); a policy that keeps them crowds out X at k2 and Y at k5.
// mark_crowding names the two kept gaps once each, and changes no label.
TEST(Demonstration, CrowdingNamesTheKeptGapsThePlanEvictsWhereADramLabelIsClipped) {
  Workload w = testing::RoomGraph();
  const EnvConfig c = RoomConfig();
  PlacementEnv env(w, c);
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kDram, c.dram_limit_bytes);
  for (int32_t after : {1, 7})
    for (uint32_t t : {testing::kRoomA, testing::kRoomB})
      plan.migrations.push_back({after, t, after == 1 ? Tier::kSlow : Tier::kDram});
  auto always_dram = [](const Observation&) { return 0; };
  const Demonstration plain = LabelRollout(env, plan, always_dram);
  RolloutLabels marked;
  marked.mark_crowding = true;
  const Demonstration d = LabelRollout(env, plan, always_dram, marked);
  EXPECT_TRUE(plain.crowding.empty());
  EXPECT_GE(d.clipped, 1u);  // the premise: the kept gaps clip a DRAM label
  ASSERT_EQ(d.crowding.size(), 2u);
  EXPECT_LT(d.crowding[0], d.crowding[1]);
  for (size_t at : d.crowding) {
    const Transition& t = d.transitions.at(at);
    EXPECT_EQ(t.action, 1);  // the plan's label: evict
    EXPECT_EQ(t.observation[kObsTier], 0.0f);
    EXPECT_EQ(t.observation[kObsAccessedNow], 0.0f);
  }
  EXPECT_EQ(d.room_relabelled, 0u);
  ASSERT_EQ(d.transitions.size(), plain.transitions.size());
  for (size_t i = 0; i < d.transitions.size(); ++i) EXPECT_EQ(d.transitions[i].action, plain.transitions[i].action) << i;
}

// The expert's own replay keeps the plan's tiers even where a rollout's
// labels would not: a plan that ends tensors elsewhere than it starts them
// (made in the MDP: DRAM wherever it fits, each persistent tensor that
// started in DRAM evicted at a decision after its last access) is
// demonstrated as it is, copies back included.
TEST(Demonstration, AnExpertsOwnReplayKeepsItsTiersAtPersistentTensorsLastGaps) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.2));
  auto evict_after_last_access = [](const Observation& o) {
    return o[kObsStartTier] == 0.0f && o[kObsAccessedNow] == 0.0f ? 1 : 0;
  };
  const PlacementPlan plan = RunEpisode(env, evict_after_last_access).plan;
  const size_t ends_elsewhere = EndsElsewhere(w, plan).size();
  ASSERT_GT(ends_elsewhere, 0u);
  Demonstration d = DemonstratePlan(env, plan);
  EXPECT_EQ(EndsElsewhere(w, d.summary.plan).size(), ends_elsewhere);
  size_t last_gaps = 0;
  for (const Transition& t : d.transitions)
    if (t.observation[kObsStartTier] == 0.0f && t.observation[kObsAccessedNow] == 0.0f) {
      EXPECT_EQ(t.action, 1);  // a rollout's label there would be 0, its starting tier
      ++last_gaps;
    }
  EXPECT_GT(last_gaps, 0u);
}

TEST(PlanSearch, OneRolloutIsTheGreedyPlan) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  PlanSearchOptions o;
  o.max_cyclic_replays = 0;  // each test looks at one phase
  o.max_blocker_replays = 0;
  o.max_tensor_replays = 0;
  o.max_room_replays = 0;
  o.max_rollouts = 1;
  PlanSearchResult r = SearchPlan(env, [](const Observation& x) { return std::make_pair(x[kObsHeat], 0.0f); }, o);
  EXPECT_EQ(r.rollouts, 1);
  EXPECT_EQ(r.deviations, 0);
  EXPECT_TRUE(r.best.plan == r.greedy.plan);
}

TEST(PlanSearch, ImprovesOnAPoorPolicysGreedyPlan) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  // A poor policy that prefers DRAM for every tensor, most strongly for the
  // hottest (with clip-to-fit the MDP's hottest-first fill: worse than all-slow here).
  ActionScores prefer_dram = [](const Observation& x) { return std::make_pair(2.0f + x[kObsHeat], 0.0f); };
  PlanSearchOptions o;
  o.max_cyclic_replays = 0;  // each test looks at one phase
  o.max_blocker_replays = 0;
  o.max_tensor_replays = 0;
  o.max_room_replays = 0;
  o.max_rollouts = 3000;
  o.candidates_per_round = 100000;  // every decision may be questioned
  o.max_replays = 0;                // the rollouts alone
  o.max_pair_replays = 0;
  PlanSearchResult r = SearchPlan(env, prefer_dram, o);
  EXPECT_LE(r.rollouts, 3000);
  EXPECT_GE(r.improvements, 1);
  EXPECT_LT(r.best.cost.total_ns, r.greedy.cost.total_ns);
  EXPECT_GE(r.deviations, 1);
  EXPECT_FALSE(r.best.oom);
  // The searched plan is a real plan of the workload that the cost model scores alike.
  EXPECT_NEAR(EvaluatePlan(w, r.best.plan).total_ns, r.best.cost.total_ns, 1e-9 * r.best.cost.total_ns);
}

// A policy that leans to DRAM by 0.05 everywhere: greedy is the hottest-first
// fill; a bias of 0.1 turns it into all-slow. The search keeps the faster.
TEST(PlanSearch, ABiasShiftsThePolicysPreferenceAndTheFasterEpisodeIsKept) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  const EpisodeSummary fill = RunEpisode(env, [](const Observation&) { return 0; });
  const EpisodeSummary slow = RunEpisode(env, [](const Observation&) { return 1; });
  ASSERT_NE(fill.cost.total_ns, slow.cost.total_ns);
  PlanSearchOptions o;
  o.max_cyclic_replays = 0;  // each test looks at one phase
  o.max_blocker_replays = 0;
  o.max_tensor_replays = 0;
  o.max_room_replays = 0;
  o.max_window_replays = 0;
  o.max_rollouts = 2;  // the greedy episode and one biased
  o.max_replays = 0;
  o.max_pair_replays = 0;
  o.biases = {0.1f};
  o.polish_plan = false;
  PlanSearchResult r = SearchPlan(env, [](const Observation&) { return std::make_pair(0.05f, 0.0f); }, o);
  EXPECT_EQ(r.rollouts, 2);
  EXPECT_TRUE(r.greedy.plan == fill.plan);
  const bool slow_wins = slow.cost.total_ns < fill.cost.total_ns;
  EXPECT_TRUE(r.best.plan == (slow_wins ? slow.plan : fill.plan));
  EXPECT_EQ(r.bias, slow_wins ? 0.1f : 0.0f);
  EXPECT_EQ(r.deviations, slow_wins ? static_cast<int>(slow.steps) : 0);
  o.biases = {std::nanf("")};
  EXPECT_THROW(SearchPlan(env, [](const Observation&) { return std::make_pair(0.05f, 0.0f); }, o),
               std::invalid_argument);
}

// The replays after the rollouts flip one decision and keep the incumbent's
// others: they improve on the poor policy above with far fewer network calls
// than rollouts, which re-decide everything after the flip, would need.
TEST(PlanSearch, ReplaysFlipOneDecisionAndKeepTheIncumbentsOthers) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  size_t calls = 0;
  ActionScores prefer_dram = [&](const Observation& x) {
    ++calls;
    return std::make_pair(2.0f + x[kObsHeat], 0.0f);
  };
  PlanSearchOptions o = OnePhase();
  const PlanSearchResult rollouts_only = SearchPlan(env, prefer_dram, o);
  const size_t steps = rollouts_only.greedy.steps;
  o.max_replays = 400;
  calls = 0;
  const PlanSearchResult r = SearchPlan(env, prefer_dram, o);
  EXPECT_EQ(r.rollouts, 2);
  EXPECT_GE(r.replays, 1);
  EXPECT_LE(r.replays, 400);
  EXPECT_GE(r.replay_improvements, 1);
  EXPECT_LT(r.best.cost.total_ns, rollouts_only.best.cost.total_ns);
  EXPECT_FALSE(r.best.oom);
  EXPECT_NEAR(EvaluatePlan(w, r.best.plan).total_ns, r.best.cost.total_ns, 1e-9 * r.best.cost.total_ns);
  // The two rollouts call the network at most 2 x steps times; the replays
  // only where a flip made the kernel ask about a tensor it had not.
  EXPECT_LT(calls, 2 * steps + static_cast<size_t>(r.replays) * steps / 4);
  // 1 rollout is the greedy plan alone: no replays either.
  o.max_rollouts = 1;
  EXPECT_EQ(SearchPlan(env, prefer_dram, o).replays, 0);
}

// Single flips that improve earn more of them: with a small fixed budget
// the search stops flipping while flips still pay; with the budget earned
// per improvement it flips on, within max_replays plus what it earned, and
// ends at a plan at least as fast.
TEST(PlanSearch, SingleFlipsThatImproveEarnMoreOfThem) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  ActionScores prefer_dram = [](const Observation& x) { return std::make_pair(2.0f + x[kObsHeat], 0.0f); };
  PlanSearchOptions o = OnePhase();  // a fixed budget
  o.max_replays = 100000;
  const PlanSearchResult unbounded = SearchPlan(env, prefer_dram, o);
  ASSERT_GE(unbounded.replay_improvements, 3);  // the premise: flips keep paying
  // A fixed budget that runs out before the flips' second improvement.
  // (The same flips in the same order whatever the budget: bisect for it.)
  int lo = 0, hi = unbounded.replays;  // lo: no improvement yet; hi: one at least
  while (hi - lo > 1) {
    o.max_replays = (lo + hi) / 2;
    (SearchPlan(env, prefer_dram, o).replay_improvements >= 1 ? hi : lo) = o.max_replays;
  }
  const int first_improvement = hi;
  o.max_replays = first_improvement;
  const PlanSearchResult fixed = SearchPlan(env, prefer_dram, o);
  EXPECT_EQ(fixed.replays, first_improvement);
  EXPECT_EQ(fixed.replay_improvements, 1);
  o.replays_per_improvement = 100000;
  const PlanSearchResult earned = SearchPlan(env, prefer_dram, o);
  EXPECT_GT(earned.replays, fixed.replays);
  EXPECT_LE(earned.replays, first_improvement + earned.replay_improvements * o.replays_per_improvement);
  EXPECT_EQ(earned.replay_improvements, unbounded.replay_improvements);
  EXPECT_EQ(earned.best.cost.total_ns, unbounded.best.cost.total_ns);
  EXPECT_LT(earned.best.cost.total_ns, fixed.best.cost.total_ns);
  EXPECT_NEAR(EvaluatePlan(w, earned.best.plan).total_ns, earned.best.cost.total_ns, 1e-9 * earned.best.cost.total_ns);
}

// Pair replays start where single flips stopped improving: the same
// search with them ends at a plan at least as fast, scored exactly, within
// their budget.
TEST(PlanSearch, PairReplaysGoOnFromTheSingleFlipsLocalOptimum) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  // DRAM for the hot tensors, the slow tier for the others: both actions
  // among the doubtful decisions, so that there are pairs to try.
  ActionScores by_heat = [](const Observation& x) { return std::make_pair(x[kObsHeat], 0.5f); };
  PlanSearchOptions o = OnePhase();
  o.max_replays = 100000;  // single flips until none improves
  const PlanSearchResult singles = SearchPlan(env, by_heat, o);
  EXPECT_EQ(singles.pair_replays, 0);
  o.max_pair_replays = 300;
  const PlanSearchResult pairs = SearchPlan(env, by_heat, o);
  EXPECT_GE(pairs.pair_replays, 1);
  EXPECT_LE(pairs.pair_replays, 300);
  EXPECT_GE(pairs.replays, singles.replays);
  EXPECT_LE(pairs.best.cost.total_ns, singles.best.cost.total_ns);
  EXPECT_EQ(pairs.pair_improvements > 0, pairs.best.cost.total_ns < singles.best.cost.total_ns);
  EXPECT_FALSE(pairs.best.oom);
  EXPECT_NEAR(EvaluatePlan(w, pairs.best.plan).total_ns, pairs.best.cost.total_ns, 1e-9 * pairs.best.cost.total_ns);
}

// A policy that asks DRAM for everything at a quarter of the peak has its
// later choices clipped; evicting the least sure choice holding their room
// is tried first, within its budget, and the plan found is scored exactly.
TEST(PlanSearch, BlockerReplaysEvictTheDoubtfulChoicesThatTookAClippedChoicesRoom) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  // Surest of the cold tensors: the hot ones' DRAM choices are questioned first.
  ActionScores prefer_dram = [](const Observation& x) { return std::make_pair(2.0f - x[kObsHeat], 0.0f); };
  PlanSearchOptions o = OnePhase();
  const PlanSearchResult without = SearchPlan(env, prefer_dram, o);
  ASSERT_GT(without.greedy.spills, 0u);  // the premise: clipped DRAM choices
  EXPECT_EQ(without.blocker_replays, 0);
  o.max_blocker_replays = 200;
  const PlanSearchResult with = SearchPlan(env, prefer_dram, o);
  EXPECT_GE(with.blocker_replays, 1);
  EXPECT_LE(with.blocker_replays, 200);
  EXPECT_GE(with.blocker_improvements, 1);
  EXPECT_LT(with.best.cost.total_ns, without.best.cost.total_ns);
  EXPECT_FALSE(with.best.oom);
  EXPECT_NEAR(EvaluatePlan(w, with.best.plan).total_ns, with.best.cost.total_ns, 1e-9 * with.best.cost.total_ns);
}

// Persistent tensors a plan ends in another tier than it starts are copied
// back after the last kernel; the cyclic replays keep such a tensor in one
// tier all the iteration, and keep what the cost model scores faster.
TEST(PlanSearch, CyclicReplaysQuestionPersistentTensorsThatEndElsewhereThanTheyStart) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  // Late in the iteration (the optimizer's updates) DRAM, early on the slow
  // tier: parameters start slow and end in DRAM.
  ActionScores late_dram = [](const Observation& x) { return std::make_pair(x[kObsPosition], 0.5f); };
  PlanSearchOptions o = OnePhase();
  const PlanSearchResult without = SearchPlan(env, late_dram, o);
  std::vector<Tier> end = without.greedy.plan.initial_tiers;
  for (const Migration& m : without.greedy.plan.migrations) end[m.tensor] = m.to;
  size_t elsewhere = 0;
  for (size_t t = 0; t < end.size(); ++t)
    elsewhere += w.tensors[t].persistent && end[t] != without.greedy.plan.initial_tiers[t];
  ASSERT_GT(elsewhere, 0u);  // the premise
  o.max_cyclic_replays = 40;
  const PlanSearchResult with = SearchPlan(env, late_dram, o);
  EXPECT_GE(with.cyclic_replays, 1);
  EXPECT_LE(with.cyclic_replays, 40);
  EXPECT_LE(with.best.cost.total_ns, without.best.cost.total_ns);
  EXPECT_EQ(with.cyclic_improvements > 0, with.best.cost.total_ns < without.best.cost.total_ns);
  EXPECT_FALSE(with.best.oom);
  EXPECT_NEAR(EvaluatePlan(w, with.best.plan).total_ns, with.best.cost.total_ns, 1e-9 * with.best.cost.total_ns);
}

// Shortened replays (resumed at the incumbent's checkpoint before the flip,
// ended where their state is the incumbent's again) find exactly what whole
// replays find: the same search either way, every phase on, in both modes,
// with and without a decision priority.
TEST(PlanSearch, ShortenedReplaysFindWhatWholeReplaysFind) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    for (bool prioritised : {false, true}) {
      SCOPED_TRACE(std::string(mode == MigrationMode::kSync ? "sync" : "async") + (prioritised ? ", prioritised" : ""));
      Workload w = Resnet(8);
      PlacementEnv env(w, Config(w, 0.25, mode));
      ActionScores scores = [](const Observation& x) {
        return std::make_pair(x[kObsHeat] + 0.4f * x[kObsPosition], 0.5f + 0.3f * x[kObsSizeOfLimit]);
      };
      if (prioritised)
        env.SetDecisionPriority([scores](const std::vector<Observation>& obs, std::vector<float>& priority) {
          for (size_t i = 0; i < obs.size(); ++i) priority[i] = scores(obs[i]).first - scores(obs[i]).second;
        });
      PlanSearchOptions o = OnePhase();
      o.max_replays = 300;
      o.max_pair_replays = 60;
      o.max_cyclic_replays = 30;
      o.max_blocker_replays = 60;
      o.max_tensor_replays = 60;
      o.max_window_replays = 200;
      o.shortened_replays = false;
      const PlanSearchResult whole = SearchPlan(env, scores, o);
      o.shortened_replays = true;
      const PlanSearchResult shortened = SearchPlan(env, scores, o);
      EXPECT_GE(whole.improvements, 2);  // the premise: incumbents change
      EXPECT_GT(whole.replays + whole.blocker_replays + whole.cyclic_replays, 0);
      EXPECT_TRUE(shortened.best.plan == whole.best.plan);
      EXPECT_EQ(shortened.best.cost.total_ns, whole.best.cost.total_ns);
      EXPECT_EQ(shortened.best.steps, whole.best.steps);
      EXPECT_EQ(shortened.best.spills, whole.best.spills);
      EXPECT_NEAR(shortened.best.step_reward_sum, whole.best.step_reward_sum, 1e-9);
      EXPECT_EQ(shortened.improvements, whole.improvements);
      EXPECT_EQ(shortened.replays, whole.replays);
      EXPECT_EQ(shortened.pair_replays, whole.pair_replays);
      EXPECT_EQ(shortened.blocker_replays, whole.blocker_replays);
      EXPECT_EQ(shortened.cyclic_replays, whole.cyclic_replays);
      EXPECT_EQ(shortened.tensor_replays, whole.tensor_replays);
      EXPECT_GT(whole.window_replays, 0);
      EXPECT_EQ(shortened.window_replays, whole.window_replays);
      EXPECT_EQ(shortened.window_improvements, whole.window_improvements);
      EXPECT_EQ(shortened.deviations, whole.deviations);
      // Whole replays walk every step of their episodes; shortened ones fewer.
      EXPECT_EQ(whole.replay_steps, whole.replay_episode_steps);
      EXPECT_EQ(shortened.replay_episode_steps, whole.replay_episode_steps);
      EXPECT_LT(shortened.replay_steps, whole.replay_steps);
      EXPECT_EQ(shortened.shortening_mismatches, 0);
    }
  }
}

// When single flips improve nothing, a tensor's every decision is put in one
// tier: the search ends at a plan at least as fast, faster exactly when a
// tensor move improved, within the budget, scored exactly.
TEST(PlanSearch, TensorReplaysPutEveryDecisionOfATensorInOneTier) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    SCOPED_TRACE(mode == MigrationMode::kSync ? "sync" : "async");
    Workload w = Resnet(8);
    PlacementEnv env(w, Config(w, 0.25, mode));
    ActionScores by_heat = [](const Observation& x) { return std::make_pair(x[kObsHeat], 0.5f); };
    PlanSearchOptions o = OnePhase();
    o.max_replays = 100000;  // single flips until none improves
    const PlanSearchResult without = SearchPlan(env, by_heat, o);
    EXPECT_EQ(without.tensor_replays, 0);
    o.max_tensor_replays = 400;
    const PlanSearchResult with = SearchPlan(env, by_heat, o);
    EXPECT_GE(with.tensor_replays, 1);
    EXPECT_LE(with.tensor_replays, 400);
    EXPECT_GE(with.tensor_improvements, 1);  // the premise: a local optimum of single flips a tensor move improves
    EXPECT_LT(with.best.cost.total_ns, without.best.cost.total_ns);
    EXPECT_GE(with.replays, without.replays);
    EXPECT_FALSE(with.best.oom);
    EXPECT_NEAR(EvaluatePlan(w, with.best.plan).total_ns, with.best.cost.total_ns, 1e-9 * with.best.cost.total_ns);
  }
}

// A large tensor read from the slow tier because two tensors kept through
// their gap hold the room: evicting one frees too little (a blocker replay
// is worse), and a pair of flips is one eviction too. A room replay evicts
// both and gives it DRAM.
TEST(PlanSearch, RoomReplaysEvictSeveralTensorsToMakeRoomForALargeOne) {
  Workload w = testing::RoomGraph();
  const EnvConfig c = RoomConfig();
  PlacementEnv env(w, c);
  ActionScores prefer_dram = [](const Observation&) { return std::make_pair(1.0f, 0.0f); };
  PlanSearchOptions o = OnePhase();
  o.max_replays = 100000;
  o.max_pair_replays = 100000;
  o.max_blocker_replays = 500;
  o.max_tensor_replays = 1000;
  const PlanSearchResult without = SearchPlan(env, prefer_dram, o);
  EXPECT_EQ(without.room_replays, 0);
  o.max_room_replays = 100;
  const PlanSearchResult with = SearchPlan(env, prefer_dram, o);
  EXPECT_GE(with.room_improvements, 1);
  EXPECT_LE(with.room_replays, 100);
  EXPECT_LT(with.best.cost.total_ns, without.best.cost.total_ns);  // the premise: the other moves stop short
  const auto tiers = with.best.plan.TierTimeline(w);
  EXPECT_EQ(tiers[5][testing::kRoomY], Tier::kDram);
  for (uint32_t t : {testing::kRoomA, testing::kRoomB}) {
    EXPECT_EQ(tiers[0][t], Tier::kDram) << t;
    EXPECT_EQ(tiers[5][t], Tier::kSlow) << t;
    EXPECT_EQ(tiers[9][t], Tier::kDram) << t;
  }
  EXPECT_NEAR(EvaluatePlan(w, with.best.plan).total_ns, with.best.cost.total_ns, 1e-9 * with.best.cost.total_ns);
}

// A policy that keeps testing::WindowGraph's weights W in the slow tier and
// every other tensor in DRAM.
ActionScores KeepsTheWindowWeightsSlow(const PlacementEnv& env) {
  return [&env](const Observation&) {
    return env.current_tensor() == testing::kWindowWeights ? std::make_pair(0.0f, 1.0f) : std::make_pair(1.0f, 0.0f);
  };
}

// A policy that keeps the weights W in the slow tier (testing::WindowGraph):
// every flip, pin, pair and room move of W costs copies that one use does
// not pay back; the window that evicts W over the backward pass only does.
TEST(PlanSearch, WindowReplaysEvictATensorOverAStretchOfItsUsesOnly) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    SCOPED_TRACE(mode == MigrationMode::kSync ? "sync" : "async");
    Workload w = testing::WindowGraph();
    EnvConfig c = RoomConfig();
    c.mode = mode;
    PlacementEnv env(w, c);
    const ActionScores weights_slow = KeepsTheWindowWeightsSlow(env);
    PlanSearchOptions o = OnePhase();
    o.max_replays = 100000;
    o.max_pair_replays = 100000;
    o.max_blocker_replays = 500;
    o.max_cyclic_replays = 100;
    o.max_tensor_replays = 1000;
    o.max_room_replays = 100;
    o.schedule_async_copies = false;
    const PlanSearchResult without = SearchPlan(env, weights_slow, o);
    EXPECT_EQ(without.window_replays, 0);
    o.max_window_replays = 1000;
    const PlanSearchResult with = SearchPlan(env, weights_slow, o);
    EXPECT_GE(with.window_improvements, 1);
    EXPECT_LE(with.window_replays, 1000);
    EXPECT_LT(with.best.cost.total_ns, without.best.cost.total_ns - 100);  // the premise: the other moves stop short
    const auto tiers = with.best.plan.TierTimeline(w);
    // (Async, the eviction may start under k5: W is read there from the copy still in DRAM.)
    for (uint32_t k : {1, 3, 14}) EXPECT_EQ(tiers[k][testing::kWindowWeights], Tier::kDram) << k;
    for (uint32_t k : {10, 11, 12}) EXPECT_EQ(tiers[k][testing::kWindowWeights], Tier::kSlow) << k;
    EXPECT_NEAR(EvaluatePlan(w, with.best.plan).total_ns, with.best.cost.total_ns, 1e-9 * with.best.cost.total_ns);
    // A window replay resumes at the first decision it changes and may rejoin
    // the incumbent after its last: the same search as whole replays.
    o.shortened_replays = false;
    const PlanSearchResult whole = SearchPlan(env, weights_slow, o);
    EXPECT_TRUE(whole.best.plan == with.best.plan);
    EXPECT_EQ(whole.window_replays, with.window_replays);
    EXPECT_LT(with.replay_steps, whole.replay_steps);
    EXPECT_EQ(with.shortening_mismatches, 0);
  }
}

// Windows priced before they are played (PlanSearchOptions::price_windows):
// those that can neither save the tensor's own reads and copies nor free
// DRAM where a request was clipped are not played, and the window that
// evicts W over the backward pass is still found. (Sync mode: the hand
// graph's device hides an async copy under a kernel entirely, so a window's
// added copies are priced at nothing there.)
TEST(PlanSearch, WindowsPricedAtNoGainAreNotPlayedAndTheGainingOneStillIs) {
  Workload w = testing::WindowGraph();
  PlacementEnv env(w, RoomConfig());
  const ActionScores weights_slow = KeepsTheWindowWeightsSlow(env);
  PlanSearchOptions o = OnePhase();
  o.max_replays = 100000;
  o.max_tensor_replays = 1000;
  o.max_room_replays = 100;
  o.max_window_replays = 1000;
  o.price_windows = false;
  const PlanSearchResult every = SearchPlan(env, weights_slow, o);
  o.price_windows = true;
  const PlanSearchResult priced = SearchPlan(env, weights_slow, o);
  EXPECT_EQ(every.windows_priced_out, 0);
  EXPECT_GT(priced.windows_priced_out, 0);
  EXPECT_LT(priced.window_replays, every.window_replays);
  EXPECT_GE(priced.window_improvements, 1);
  EXPECT_LE(priced.best.cost.total_ns, every.best.cost.total_ns);
  const auto tiers = priced.best.plan.TierTimeline(w);
  for (uint32_t k : {10, 11, 12}) EXPECT_EQ(tiers[k][testing::kWindowWeights], Tier::kSlow) << k;
}

// Turns shorter than one replay (PlanSearchOptions::move_turn_share): each
// turn plays one candidate and the next goes on after it, so the search
// still reaches the window and ends by itself, not at its time limit.
TEST(PlanSearch, TurnsShorterThanOneReplayStillSearchToTheEnd) {
  Workload w = testing::WindowGraph();
  PlacementEnv env(w, RoomConfig());
  const ActionScores weights_slow = KeepsTheWindowWeightsSlow(env);
  PlanSearchOptions o = OnePhase();
  o.max_replays = 100000;
  o.max_tensor_replays = 1000;
  o.max_room_replays = 100;
  o.max_window_replays = 1000;
  o.max_seconds = 60;
  o.move_turn_share = 0;
  const PlanSearchResult whole_passes = SearchPlan(env, weights_slow, o);
  o.move_turn_share = 1e-12;
  const PlanSearchResult turns = SearchPlan(env, weights_slow, o);
  // Ended by itself: not at its time limit, nor at a move's budget (a turn
  // that began its pass again each time would replay the same candidates to it).
  EXPECT_LT(turns.seconds, 30);
  EXPECT_LT(turns.replays, o.max_replays);
  EXPECT_LT(turns.tensor_replays, o.max_tensor_replays);
  EXPECT_LT(turns.window_replays, o.max_window_replays);
  EXPECT_GE(turns.window_improvements, 1);
  EXPECT_GT(turns.replays, 0);
  EXPECT_GT(turns.tensor_replays, 0);
  EXPECT_NEAR(turns.best.cost.total_ns, whole_passes.best.cost.total_ns, 1e-9 * whole_passes.best.cost.total_ns);
  const auto tiers = turns.best.plan.TierTimeline(w);
  for (uint32_t k : {10, 11, 12}) EXPECT_EQ(tiers[k][testing::kWindowWeights], Tier::kSlow) << k;
}

TEST(PlanSearch, ANonFiniteScoreIsAnError) {
  Workload w = Resnet();
  PlacementEnv env(w, Config(w, 0.25));
  EXPECT_THROW(SearchPlan(env, [](const Observation&) { return std::make_pair(std::nanf(""), 0.0f); }, {}),
               std::runtime_error);
  EXPECT_THROW(SearchPlan(env, {}, {}), std::invalid_argument);
}

// FollowPlan takes the plan's tier at every decision, as sure as the
// network where they agree and barely where they do not.
TEST(PlanSearch, FollowingAPlanTakesItsTiersWithTheNetworksDoubt) {
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    Workload w = Resnet();
    EnvConfig c = Config(w, 0.3, mode);
    PlacementEnv env(w, c);
    PlacementPlan expert = FirstTouchPlan(w, c.dram_limit_bytes);
    expert.mode = mode;
    const Demonstration d = DemonstratePlan(env, expert);
    ActionScores net = [](const Observation& x) { return std::make_pair(x[kObsHeat], 0.1f); };
    const ActionScores follow = FollowPlan(env, expert, net);
    size_t agreeing = 0, disagreeing = 0, step = 0;
    const EpisodeSummary played = RunEpisode(env, [&](const Observation& x) {
      const auto [dram, slow] = follow(x);
      const auto [net_dram, net_slow] = net(x);
      const int action = dram >= slow ? 0 : 1;
      EXPECT_EQ(action, d.transitions.at(step++).action);
      if ((net_dram >= net_slow ? 0 : 1) == action) {
        EXPECT_FLOAT_EQ(std::abs(dram - slow), std::abs(net_dram - net_slow));
        ++agreeing;
      } else {
        EXPECT_LT(std::abs(dram - slow), 1e-3f);
        ++disagreeing;
      }
      return action;
    });
    EXPECT_TRUE(played.plan == d.summary.plan);
    EXPECT_GT(agreeing, 0u);
    EXPECT_GT(disagreeing, 0u);
  }
}

// A starting plan faster than the policy's own episodes is where the search
// goes on from; a slower one changes nothing. The greedy plan stays the
// policy's own.
TEST(PlanSearch, AFasterStartingPlanIsWhereTheSearchGoesOn) {
  Workload w = Resnet();
  EnvConfig c = Config(w, 0.25);
  PlacementEnv env(w, c);
  // Worse than all-slow here (ImprovesOnAPoorPolicysGreedyPlan).
  ActionScores prefer_dram = [](const Observation& x) { return std::make_pair(2.0f + x[kObsHeat], 0.0f); };
  const PlacementPlan first_touch = FirstTouchPlan(w, c.dram_limit_bytes);
  const double started_ns = DemonstratePlan(env, first_touch).summary.cost.total_ns;
  PlanSearchOptions o = OnePhase();
  o.max_rollouts = 1;
  const PlanSearchResult alone = SearchPlan(env, prefer_dram, o);
  ASSERT_LT(started_ns, alone.best.cost.total_ns);  // the premise
  const PlanSearchResult started = SearchPlan(env, prefer_dram, o, {first_touch});
  EXPECT_EQ(started.starting_plan, 0);
  EXPECT_EQ(started.best.cost.total_ns, started_ns);
  EXPECT_TRUE(started.greedy.plan == alone.greedy.plan);
  // The replays go on from it; with no time limit the search from the
  // policy's own episodes runs after it, and the faster of the two is kept.
  o.max_rollouts = 64;
  o.max_replays = 500;
  const PlanSearchResult searched = SearchPlan(env, prefer_dram, o, {first_touch});
  const PlanSearchResult own = SearchPlan(env, prefer_dram, o);
  EXPECT_TRUE(searched.restarted);
  EXPECT_FALSE(own.restarted);
  EXPECT_GE(searched.replay_improvements, 1);
  EXPECT_LT(searched.best.cost.total_ns, started_ns);
  EXPECT_LE(searched.best.cost.total_ns, own.best.cost.total_ns);
  EXPECT_EQ(searched.starting_plan, searched.best.cost.total_ns < own.best.cost.total_ns ? 0 : -1);
  EXPECT_NEAR(EvaluatePlan(w, searched.best.plan).total_ns, searched.best.cost.total_ns,
              1e-9 * searched.best.cost.total_ns);
  // A slower starting plan: the poor policy's greedy plan for a policy that keeps everything slow.
  ActionScores prefer_slow = [](const Observation&) { return std::make_pair(0.0f, 1.0f); };
  const PlanSearchResult slow_alone = SearchPlan(env, prefer_slow, OnePhase());
  ASSERT_GT(alone.best.cost.total_ns, slow_alone.best.cost.total_ns);  // the premise
  const PlanSearchResult slow_started = SearchPlan(env, prefer_slow, OnePhase(), {alone.greedy.plan});
  EXPECT_EQ(slow_started.starting_plan, -1);
  EXPECT_TRUE(slow_started.best.plan == slow_alone.best.plan);
}

TEST(PlanSearch, AStartingPlanOfAnotherWorkloadIsRefused) {
  Workload w = Resnet(), other = Resnet(8);
  PlacementEnv env(w, Config(w, 0.25));
  const PlacementPlan theirs = FirstTouchPlan(other, other.peak_live_bytes() / 4);
  EXPECT_THROW(SearchPlan(env, [](const Observation& x) { return std::make_pair(x[kObsHeat], 0.0f); }, {}, {theirs}),
               std::invalid_argument);
}

}  // namespace
}  // namespace tensortier
