// Learning from other policies' plans before training (learner/imitation.h)
// and how a run names and compares its final plan (learner/run_report.h).
// No sockets: these parts are tested alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <regex>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "envs/cost_model.h"
#include "envs/demonstration.h"
#include "envs/first_touch.h"
#include "envs/plan_polish.h"
#include "envs/synthetic.h"
#include "learner/imitation.h"
#include "learner/run_report.h"
#include "policies/autotm.h"
#include "policies/policy.h"
#include "tests/common/imitation_steps.h"

namespace tensortier {
namespace {

using testing::ImitationSteps;

struct Task {
  Workload w;
  EnvConfig env;
};

Task ResnetTask() {
  SyntheticOptions so;
  so.shape = SyntheticShape::kResnetLike;
  so.layers = 6;
  Task t{GenerateSynthetic(so), {}};
  t.w.Finalize();
  t.env.dram_limit_bytes = t.w.peak_live_bytes() / 4;
  t.env.beta = 1.0;
  return t;
}

// A second model for the corpus tests, with `env`'s settings and its own limit.
Task VggTask(const EnvConfig& env) {
  SyntheticOptions so;
  so.shape = SyntheticShape::kVggLike;
  so.layers = 5;
  Task t{GenerateSynthetic(so), env};
  t.w.Finalize();
  t.env.dram_limit_bytes = t.w.peak_live_bytes() / 4;
  return t;
}

std::unique_ptr<PlacementAgent> SmallDqn() {
  DqnConfig c;
  c.hidden = {64, 64};
  c.learning_rate = 1e-3;
  c.device = "cpu";
  return MakeAgent("dqn", c.ToJson());
}

EpisodeSummary Greedy(PlacementEnv& env, const PlacementAgent& agent) {
  return RunEpisode(env, [&](const Observation& o) { return agent.Greedy(o.data()); });
}

TEST(Imitation, TheAgentEndsAtTheBestRoundAndNearTheExpert) {
  Task t = ResnetTask();
  PlacementEnv env(t.w, t.env);
  auto agent = SmallDqn();
  const double untrained = Greedy(env, *agent).cost.total_ns;
  // Two experts: the cheaper one (first-touch here) is the one imitated.
  PlacementPlan slow = PlacementPlan::Uniform(t.w, Tier::kSlow, t.env.dram_limit_bytes);
  slow.produced_by = "all-slow";
  PlacementPlan first_touch = FirstTouchPlan(t.w, t.env.dram_limit_bytes);
  first_touch.produced_by = "first-touch";
  const double expert_ns = EvaluatePlan(t.w, first_touch).total_ns;
  ASSERT_LT(expert_ns, EvaluatePlan(t.w, slow).total_ns);
  ImitationConfig c = ImitationSteps(800, 4, 400);
  c.focus_on_mistakes = true;
  c.polish_updates = 0;  // PolishingOnTheExpertsStatesEndsOnItsPlan
  std::mt19937_64 rng(3);
  ImitationResult r = LearnFromPlans(*agent, env, {slow, first_touch}, c, rng);
  EXPECT_EQ(r.expert, "first-touch");
  EXPECT_NEAR(r.expert_cost_ns, expert_ns, 1e-9 * expert_ns);
  ASSERT_EQ(r.rounds.size(), 5u);  // after pre-training, then one per DAgger round
  EXPECT_EQ(r.updates, 800u + 4u * 400u);
  // The agent holds the weights of the best round: its greedy plan is that round's.
  const double best = Greedy(env, *agent).cost.total_ns;
  EXPECT_DOUBLE_EQ(best, r.best_cost_ns);
  for (const ImitationRound& round : r.rounds) EXPECT_LE(r.best_cost_ns, round.greedy_cost_ns);
  EXPECT_LT(best, untrained);
  EXPECT_LE(best, expert_ns * 1.05) << "untrained " << untrained;
  // The aggregate stays with the agent for its later updates (DQfD), capped.
  EXPECT_LE(r.rounds.back().demonstrations, c.max_demonstrations);
  EXPECT_GT(r.rounds.back().demonstrations, r.rounds.front().demonstrations);
  // DAgger rounds saw the policy's mistakes (counted twice in their training set).
  size_t mistakes = 0;
  for (size_t i = 0; i + 1 < r.rounds.size(); ++i) mistakes += r.rounds[i].mistakes;
  EXPECT_GT(mistakes, 0u);
  EXPECT_EQ(r.rounds.back().mistakes, 0u);  // the last rollout is an evaluation only
}

// After the DAgger rounds the agent trains on the expert's own states alone
// until it gets every one right: its greedy plan is then the expert's, so the
// kept plan is at least as fast (an earlier round may beat a weak expert).
TEST(Imitation, PolishingOnTheExpertsStatesEndsOnItsPlan) {
  Task t = ResnetTask();
  PlacementEnv env(t.w, t.env);
  auto agent = SmallDqn();
  const PlacementPlan expert = FirstTouchPlan(t.w, t.env.dram_limit_bytes);
  ImitationConfig c = ImitationSteps(100, 1, 100);
  c.polish_updates = 40000;
  c.polish_chunk = 500;
  std::mt19937_64 rng(3);
  ImitationResult r = LearnFromPlans(*agent, env, {expert}, c, rng);
  ASSERT_GT(r.rounds.size(), 2u);
  EXPECT_FALSE(r.rounds[1].polish);
  ASSERT_TRUE(r.rounds[2].polish);
  EXPECT_GT(r.rounds[2].mistakes, 0u) << "200 steps should not fit the expert yet";
  // It stopped early, once no expert state was wrong.
  EXPECT_LT(r.updates, 100u + 100u + 40000u);
  EXPECT_EQ(r.updates, 200u + 500u * (r.rounds.size() - 2));
  const EpisodeSummary greedy = Greedy(env, *agent);
  EXPECT_LE(greedy.cost.total_ns, r.expert_cost_ns * (1 + 1e-9));
  EXPECT_DOUBLE_EQ(greedy.cost.total_ns, r.best_cost_ns);
  c.polish_chunk = 0;
  EXPECT_THROW(LearnFromPlans(*agent, env, {expert}, c, rng), std::invalid_argument);
}

// With no expert plan at all, the agent improves on its own searched plans,
// and ends with the fastest weights it held, its starting ones included.
TEST(Imitation, OwnSearchesImproveAPolicyWithNoExpertPlan) {
  Task t = ResnetTask();
  PlacementEnv env(t.w, t.env);
  auto agent = SmallDqn();
  const double untrained = Greedy(env, *agent).cost.total_ns;
  SelfImitationConfig c;
  c.rounds = 3;
  c.search = {32, 8, 0};
  c.imitation = ImitationSteps(200, 1, 200);
  c.imitation.polish_updates = 1000;
  c.imitation.polish_chunk = 500;
  std::mt19937_64 rng(5);
  SelfImitationResult r = LearnFromOwnSearches(*agent, env, c, rng);
  ASSERT_EQ(r.rounds.size(), 3u);
  EXPECT_DOUBLE_EQ(r.start_cost_ns, untrained);
  const double now = Greedy(env, *agent).cost.total_ns;
  EXPECT_DOUBLE_EQ(now, r.best_greedy.cost.total_ns);
  EXPECT_LT(now, untrained);
  for (const SelfImitationRound& round : r.rounds) EXPECT_LE(now, round.greedy_cost_ns);
  // The first search starts from the untrained policy's plan and cannot be worse.
  EXPECT_LE(r.rounds[0].searched_cost_ns, untrained);

  c.rounds = -1;
  EXPECT_THROW(LearnFromOwnSearches(*agent, env, c, rng), std::invalid_argument);
  SacConfig sc;
  sc.device = "cpu";
  c.rounds = 1;
  EXPECT_THROW(LearnFromOwnSearches(*MakeAgent("sac", sc.ToJson()), env, c, rng), std::invalid_argument);
}

TEST(Imitation, TheAggregateIsCapped) {
  Task t = ResnetTask();
  PlacementEnv env(t.w, t.env);
  auto agent = SmallDqn();
  ImitationConfig c = ImitationSteps(10, 3, 10);
  c.max_demonstrations = 100;
  std::mt19937_64 rng(3);
  ImitationResult r = LearnFromPlans(*agent, env, {FirstTouchPlan(t.w, t.env.dram_limit_bytes)}, c, rng);
  for (const ImitationRound& round : r.rounds) EXPECT_LE(round.demonstrations, 100u);
}

// After imitation the agent trains on with the configured step: its settings
// say so (they rebuild it from a checkpoint) and a bad step is refused.
TEST(Imitation, TheLearningRateAfterImitationIsTheAgentsFromThenOn) {
  Task t = ResnetTask();
  PlacementEnv env(t.w, t.env);
  auto agent = SmallDqn();
  ImitationConfig c = ImitationSteps(10, 1, 10);
  c.learning_rate_after = 2.5e-5;
  std::mt19937_64 rng(3);
  LearnFromPlans(*agent, env, {FirstTouchPlan(t.w, t.env.dram_limit_bytes)}, c, rng);
  EXPECT_DOUBLE_EQ(DqnConfig::FromJson(agent->config_json()).learning_rate, 2.5e-5);
  c.learning_rate_after = 0;  // keeps the agent's own
  auto other = SmallDqn();
  LearnFromPlans(*other, env, {FirstTouchPlan(t.w, t.env.dram_limit_bytes)}, c, rng);
  EXPECT_DOUBLE_EQ(DqnConfig::FromJson(other->config_json()).learning_rate, 1e-3);
  c.learning_rate_after = -1;
  EXPECT_THROW(LearnFromPlans(*other, env, {FirstTouchPlan(t.w, t.env.dram_limit_bytes)}, c, rng),
               std::invalid_argument);
  EXPECT_THROW(other->SetLearningRate(std::nan("")), std::invalid_argument);
  SacConfig sc;
  sc.device = "cpu";
  EXPECT_THROW(MakeAgent("sac", sc.ToJson())->SetLearningRate(1e-4), std::logic_error);
}

TEST(Imitation, RefusesAnAgentWithoutDemonstrationsAndAnEmptyExpertList) {
  Task t = ResnetTask();
  PlacementEnv env(t.w, t.env);
  SacConfig sc;
  sc.device = "cpu";
  auto sac = MakeAgent("sac", sc.ToJson());
  std::mt19937_64 rng(3);
  EXPECT_THROW(LearnFromPlans(*sac, env, {FirstTouchPlan(t.w, t.env.dram_limit_bytes)}, {}, rng),
               std::invalid_argument);
  auto dqn = SmallDqn();
  EXPECT_THROW(LearnFromPlans(*dqn, env, {}, {}, rng), std::invalid_argument);
}

// A learner result whose greedy plan is all-slow, with faster plans elsewhere.
// One network for two models: each model imitates its own expert, every
// round is rolled out on both, and the weights kept are those of the round
// with the best mean greedy plan, so the agent's greedy plans are that
// round's on both models.
TEST(Imitation, ACorpusNetworkImitatesEveryModelsExpertAndKeepsTheBestMeanRound) {
  Task resnet = ResnetTask();
  Task vgg = VggTask(resnet.env);
  PlacementEnv resnet_env(resnet.w, resnet.env), vgg_env(vgg.w, vgg.env);
  auto agent = SmallDqn();
  const double untrained_mean = (MinCostNs(resnet.w) / Greedy(resnet_env, *agent).cost.total_ns +
                                 MinCostNs(vgg.w) / Greedy(vgg_env, *agent).cost.total_ns) / 2;
  PlacementPlan slow = PlacementPlan::Uniform(vgg.w, Tier::kSlow, vgg.env.dram_limit_bytes);
  slow.produced_by = "all-slow";
  PlacementPlan vgg_first_touch = FirstTouchPlan(vgg.w, vgg.env.dram_limit_bytes);
  vgg_first_touch.produced_by = "first-touch";
  ASSERT_LT(EvaluatePlan(vgg.w, vgg_first_touch).total_ns, EvaluatePlan(vgg.w, slow).total_ns);
  ImitationConfig c = ImitationSteps(800, 3, 400);
  c.polish_updates = 1000;
  c.polish_chunk = 500;
  std::mt19937_64 rng(5);
  const CorpusImitationResult r = LearnFromCorpus(
      *agent, {{&resnet_env, {FirstTouchPlan(resnet.w, resnet.env.dram_limit_bytes)}, "resnet"},
               {&vgg_env, {slow, vgg_first_touch}, "vgg"}},
      c, rng);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[1].expert, "first-touch");  // the faster of the two plans
  ASSERT_EQ(r.tasks[0].rounds.size(), r.tasks[1].rounds.size());
  EXPECT_GE(r.tasks[0].rounds.size(), 4u);  // after pre-training, 3 DAgger rounds, then polish chunks
  EXPECT_EQ(r.tasks[0].best_round, r.best_round);
  // The agent holds the best round's weights: its greedy plan on each model is that round's.
  PlacementEnv* envs[] = {&resnet_env, &vgg_env};
  const Workload* ws[] = {&resnet.w, &vgg.w};
  double best_mean = 0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(Greedy(*envs[i], *agent).cost.total_ns, r.tasks[i].best_cost_ns) << i;
    best_mean += MinCostNs(*ws[i]) / r.tasks[i].best_cost_ns / 2;
  }
  // No round's mean beats the kept one.
  for (size_t k = 0; k < r.tasks[0].rounds.size(); ++k) {
    double mean = 0;
    for (size_t i = 0; i < 2; ++i) mean += MinCostNs(*ws[i]) / r.tasks[i].rounds[k].greedy_cost_ns / 2;
    EXPECT_LE(mean, best_mean * (1 + 1e-12)) << "round " << k;
  }
  EXPECT_GT(best_mean, untrained_mean);
  // Refused: no task, a task with no expert (named), a task with no environment.
  EXPECT_THROW(LearnFromCorpus(*agent, {}, c, rng), std::invalid_argument);
  try {
    LearnFromCorpus(*agent, {{&vgg_env, {}, "vgg"}}, c, rng);
    ADD_FAILURE() << "no expert was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no expert plan for vgg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LearnFromCorpus(*agent, {{nullptr, {slow}, "none"}}, c, rng), std::invalid_argument);
}

// With weight_mean_from_round, the mean of the weights every round from that
// one on evaluated is rolled out as one last round, which competes with the
// snapshots: its plans are those of the network averaged from exactly those
// snapshots, and the agent ends with the best of all of them.
TEST(Imitation, TheMeanOfTheRoundsWeightsIsOneMoreRoundThatCompetes) {
  Task resnet = ResnetTask();
  Task vgg = VggTask(resnet.env);
  PlacementEnv resnet_env(resnet.w, resnet.env), vgg_env(vgg.w, vgg.env);
  auto agent = SmallDqn();
  ImitationConfig c = ImitationSteps(200, 3, 150);
  c.polish_updates = 300;
  c.polish_chunk = 150;
  c.weight_mean_from_round = 2;
  std::vector<std::string> evaluated;  // the weights of rounds 2, 3, ... as they were rolled out
  int mean_rounds = 0;
  std::mt19937_64 rng(3);
  const CorpusImitationResult r = LearnFromCorpus(
      *agent, {{&resnet_env, {FirstTouchPlan(resnet.w, resnet.env.dram_limit_bytes)}, "resnet"},
               {&vgg_env, {FirstTouchPlan(vgg.w, vgg.env.dram_limit_bytes)}, "vgg"}},
      c, rng, [&](const ImitationRound& round, double, double) {
        if (round.weight_mean) ++mean_rounds;
        else if (round.round >= 2) evaluated.push_back(agent->SerializeWeights());
      });
  ASSERT_EQ(mean_rounds, 1);
  const std::vector<ImitationRound>& rounds = r.tasks[0].rounds;
  ASSERT_GE(rounds.size(), 6u);  // pre-training, 3 DAgger rounds, polish, the mean
  const ImitationRound& mean = rounds.back();
  EXPECT_TRUE(mean.weight_mean);
  EXPECT_EQ(mean.round, static_cast<int>(rounds.size()) - 1);
  EXPECT_EQ(mean.weights_folded, evaluated.size());
  EXPECT_EQ(evaluated.size(), rounds.size() - 3);  // rounds 2 .. the last before the mean
  for (size_t k = 0; k + 1 < rounds.size(); ++k) EXPECT_FALSE(rounds[k].weight_mean);
  // The mean round's plans are those of the average of exactly those snapshots.
  auto averaged = SmallDqn();
  for (const std::string& w : evaluated) {
    averaged->LoadWeights(w);
    averaged->FoldWeightsIntoMean();
  }
  averaged->LoadWeightMean();
  EXPECT_DOUBLE_EQ(Greedy(resnet_env, *averaged).cost.total_ns, r.tasks[0].rounds.back().greedy_cost_ns);
  EXPECT_DOUBLE_EQ(Greedy(vgg_env, *averaged).cost.total_ns, r.tasks[1].rounds.back().greedy_cost_ns);
  // The kept weights are the best of every round, the mean included.
  const Workload* ws[] = {&resnet.w, &vgg.w};
  auto mean_of = [&](size_t k) {
    double m = 0;
    for (size_t i = 0; i < 2; ++i) m += MinCostNs(*ws[i]) / r.tasks[i].rounds[k].greedy_cost_ns / 2;
    return m;
  };
  for (size_t k = 0; k < rounds.size(); ++k) EXPECT_LE(mean_of(k), mean_of(r.best_round) * (1 + 1e-12)) << k;
  EXPECT_DOUBLE_EQ(Greedy(resnet_env, *agent).cost.total_ns, r.tasks[0].best_cost_ns);
  EXPECT_EQ(agent->weights_folded(), 0u);  // the mean is not kept past the phase
  c.weight_mean_from_round = -2;
  EXPECT_THROW(LearnFromCorpus(*agent, {{&vgg_env, {FirstTouchPlan(vgg.w, vgg.env.dram_limit_bytes)}, "vgg"}}, c, rng),
               std::invalid_argument);
}

// A task whose environment comes with its decision slots released takes
// turns: built for each episode, released after (a corpus's memory bounded,
// CorpusPretrainingOptions::resident_slot_bytes). Nothing the network learns
// or is scored on changes, and the others keep theirs.
TEST(Imitation, ATaskWhoseSlotsAreReleasedTakesTurnsAndLearnsTheSame) {
  Task resnet = ResnetTask();
  Task vgg = VggTask(resnet.env);
  ImitationConfig c = ImitationSteps(60, 2, 80);
  c.polish_updates = 200;
  c.polish_chunk = 100;
  auto learn = [&](bool release_vgg) {
    auto resnet_env = std::make_unique<PlacementEnv>(resnet.w, resnet.env);
    auto vgg_env = std::make_unique<PlacementEnv>(vgg.w, vgg.env);
    if (release_vgg) vgg_env->ReleaseDecisionSlots();
    auto agent = SmallDqn();
    std::mt19937_64 rng(9);
    const CorpusImitationResult r = LearnFromCorpus(
        *agent, {{resnet_env.get(), {FirstTouchPlan(resnet.w, resnet.env.dram_limit_bytes)}, "resnet"},
                 {vgg_env.get(), {FirstTouchPlan(vgg.w, vgg.env.dram_limit_bytes)}, "vgg"}},
        c, rng);
    EXPECT_TRUE(resnet_env->decision_slots_built());
    EXPECT_EQ(vgg_env->decision_slots_built(), !release_vgg);
    std::vector<double> costs;
    for (const ImitationResult& t : r.tasks)
      for (const ImitationRound& round : t.rounds) costs.push_back(round.greedy_cost_ns);
    return std::make_pair(agent->SerializeWeights(), costs);
  };
  const auto held = learn(false), turns = learn(true);
  ASSERT_FALSE(held.second.empty());
  EXPECT_EQ(turns.second, held.second);
  EXPECT_TRUE(turns.first == held.first) << "the network differs when a task takes turns";
}

// A validation task is not learned from (no expert, none of its states in
// the aggregate) and, alone, chooses the round kept: the agent ends with the
// weights of the round whose greedy plan on it was the fastest, whatever the
// learned task's plans were.
TEST(Imitation, AValidationTaskChoosesTheRoundKeptAndIsNotLearnedFrom) {
  Task resnet = ResnetTask();
  Task vgg = VggTask(resnet.env);
  PlacementEnv resnet_env(resnet.w, resnet.env), vgg_env(vgg.w, vgg.env);
  auto agent = SmallDqn();
  // Short rounds, so that the rounds' plans differ on both tasks.
  ImitationConfig c = ImitationSteps(50, 6, 60);
  c.polish_updates = 1000;
  c.polish_chunk = 500;
  std::mt19937_64 rng(1);
  ImitationTask learned{&resnet_env, {FirstTouchPlan(resnet.w, resnet.env.dram_limit_bytes)}, "resnet"};
  ImitationTask held_out{&vgg_env, {}, "vgg"};
  held_out.validation = true;
  std::vector<double> told_validation;
  const CorpusImitationResult r =
      LearnFromCorpus(*agent, {learned, held_out}, c, rng, [&](const ImitationRound&, double, double validation) {
        told_validation.push_back(validation);
      });
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[1].expert, "");  // a validation task has no expert
  EXPECT_EQ(r.tasks[1].expert_cost_ns, 0);
  EXPECT_GT(r.tasks[0].expert_cost_ns, 0);
  ASSERT_EQ(r.tasks[1].rounds.size(), r.tasks[0].rounds.size());
  ASSERT_EQ(told_validation.size(), r.tasks[1].rounds.size());
  // The kept weights are the round fastest on the validation task, and the
  // progress told each round's validation figure.
  double fastest = 1e300;
  size_t fastest_round = 0;
  for (size_t k = 0; k < r.tasks[1].rounds.size(); ++k) {
    const ImitationRound& round = r.tasks[1].rounds[k];
    ASSERT_FALSE(round.greedy_oom) << k;
    EXPECT_NEAR(told_validation[k], MinCostNs(vgg.w) / round.greedy_cost_ns, 1e-9) << k;
    if (round.greedy_cost_ns < fastest * (1 - 1e-12)) {
      fastest = round.greedy_cost_ns;
      fastest_round = k;
    }
  }
  EXPECT_EQ(static_cast<size_t>(r.best_round), fastest_round);
  // The round fastest on the learned task is another one (here), so the
  // corpus's own mean would have kept other weights.
  size_t learned_fastest_round = 0;
  for (size_t k = 0; k < r.tasks[0].rounds.size(); ++k)
    if (r.tasks[0].rounds[k].greedy_cost_ns <
        r.tasks[0].rounds[learned_fastest_round].greedy_cost_ns * (1 - 1e-12))
      learned_fastest_round = k;
  EXPECT_NE(learned_fastest_round, fastest_round);
  EXPECT_DOUBLE_EQ(Greedy(vgg_env, *agent).cost.total_ns, fastest);
  EXPECT_DOUBLE_EQ(r.tasks[1].best_cost_ns, fastest);
  // Every task a validation task: refused.
  EXPECT_THROW(LearnFromCorpus(*agent, {held_out}, c, rng), std::invalid_argument);
}

// The portfolio is the rounds with the best validation scores, best first
// (ties: the earlier round first), each with the weights that round rolled
// out; its first member is the round kept. A portfolio of one is the kept
// round alone, and a portfolio of none is refused.
TEST(Imitation, ThePortfolioKeepsTheBestScoredRoundsWeightsBestFirst) {
  Task resnet = ResnetTask();
  Task vgg = VggTask(resnet.env);
  PlacementEnv resnet_env(resnet.w, resnet.env), vgg_env(vgg.w, vgg.env);
  ImitationConfig c = ImitationSteps(50, 6, 60);
  c.polish_updates = 1000;
  c.polish_chunk = 500;
  c.portfolio_size = 4;
  ImitationTask learned{&resnet_env, {FirstTouchPlan(resnet.w, resnet.env.dram_limit_bytes)}, "resnet"};
  ImitationTask held_out{&vgg_env, {}, "vgg"};
  held_out.validation = true;
  auto agent = SmallDqn();
  std::vector<std::string> rolled_out;  // each round's weights, in round order
  std::mt19937_64 rng(1);
  const CorpusImitationResult r = LearnFromCorpus(
      *agent, {learned, held_out}, c, rng,
      [&](const ImitationRound&, double, double) { rolled_out.push_back(agent->SerializeWeights()); });
  const std::vector<ImitationRound>& rounds = r.tasks[1].rounds;
  ASSERT_GE(rounds.size(), 5u);
  ASSERT_EQ(r.portfolio.size(), 4u);
  EXPECT_EQ(r.portfolio[0].round, r.best_round);
  EXPECT_EQ(r.portfolio[0].weights, agent->SerializeWeights());
  // The rounds in the order the portfolio ranks them: validation score, then round.
  std::vector<int> ranked(rounds.size());
  for (size_t k = 0; k < ranked.size(); ++k) ranked[k] = static_cast<int>(k);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](int a, int b) { return rounds[a].greedy_cost_ns < rounds[b].greedy_cost_ns * (1 - 1e-12); });
  for (size_t m = 0; m < r.portfolio.size(); ++m) {
    const auto& member = r.portfolio[m];
    EXPECT_EQ(member.round, ranked[m]) << m;
    EXPECT_EQ(member.weights, rolled_out[member.round]) << m;
    EXPECT_NEAR(member.validation_relative, MinCostNs(vgg.w) / rounds[member.round].greedy_cost_ns, 1e-9) << m;
    EXPECT_NEAR(member.mean_relative, MinCostNs(resnet.w) / r.tasks[0].rounds[member.round].greedy_cost_ns, 1e-9) << m;
    auto replayed = SmallDqn();
    replayed->LoadWeights(member.weights);
    EXPECT_DOUBLE_EQ(Greedy(vgg_env, *replayed).cost.total_ns, rounds[member.round].greedy_cost_ns) << m;
  }
  c.portfolio_size = 1;
  auto alone = SmallDqn();
  std::mt19937_64 rng_alone(1);
  const CorpusImitationResult one = LearnFromCorpus(*alone, {learned, held_out}, c, rng_alone);
  ASSERT_EQ(one.portfolio.size(), 1u);
  EXPECT_EQ(one.portfolio[0].round, one.best_round);
  c.portfolio_size = 0;
  EXPECT_THROW(LearnFromCorpus(*alone, {learned, held_out}, c, rng_alone), std::invalid_argument);
}

// The environments carry nothing from one imitation to the next: the same
// agent seed and rng on the same tasks learn the same weights a second time
// (pretrain --seeds runs one imitation per seed on the same tasks).
TEST(Imitation, ASecondImitationOnTheSameTasksLearnsTheSame) {
  Task resnet = ResnetTask();
  Task vgg = VggTask(resnet.env);
  PlacementEnv resnet_env(resnet.w, resnet.env), vgg_env(vgg.w, vgg.env);
  vgg_env.ReleaseDecisionSlots();  // one task taking turns, as past pretrain's slot budget
  ImitationConfig c = ImitationSteps(50, 3, 60);
  c.polish_updates = 300;
  c.polish_chunk = 150;
  ImitationTask learned{&resnet_env, {FirstTouchPlan(resnet.w, resnet.env.dram_limit_bytes)}, "resnet"};
  ImitationTask held_out{&vgg_env, {}, "vgg"};
  held_out.validation = true;
  auto learn = [&] {
    auto agent = SmallDqn();
    std::mt19937_64 rng(5);
    const CorpusImitationResult r = LearnFromCorpus(*agent, {learned, held_out}, c, rng);
    std::vector<double> costs;
    for (const ImitationResult& t : r.tasks)
      for (const ImitationRound& round : t.rounds) costs.push_back(round.greedy_cost_ns);
    return std::make_pair(agent->SerializeWeights(), costs);
  };
  const auto first = learn();
  const auto second = learn();
  EXPECT_EQ(first.second, second.second);
  EXPECT_EQ(first.first, second.first);
}

// ExpertChoice::kFinished: the expert imitated is the one whose MDP replay
// the plan-time finish (async copies scheduled, the polish) takes furthest,
// and the rounds kept are ranked by their greedy plans finished so; the
// agent ends with the first.
TEST(Imitation, TheFinishedChoiceImitatesTheExpertTheFinishTakesFurthestAndRanksTheRoundsSo) {
  Task t = ResnetTask();
  t.env.mode = MigrationMode::kAsync;
  PlacementEnv env(t.w, t.env);
  // Two baselines' plans (produced_by names them).
  PolicyContext ctx;
  ctx.dram_limit_bytes = t.env.dram_limit_bytes;
  ctx.mode = t.env.mode;
  const PlacementPlan relaxation = MakePolicy("relaxation")->Plan(t.w, ctx);
  const PlacementPlan ca_lm = MakePolicy("ca-lm")->Plan(t.w, ctx);
  const PlanPolishOptions polish;
  auto finished_ns = [&](const PlacementPlan& episode) {
    return FinishEpisodePlan(t.w, episode, true, &polish).cost.total_ns;
  };
  const EpisodeSummary rx = DemonstratePlan(env, relaxation).summary, ca = DemonstratePlan(env, ca_lm).summary;
  // The premise: the replays rank the experts one way and their finished
  // plans the other (22.5 against 26.7 ms replayed, 22.4 against 20.8 finished).
  ASSERT_LT(rx.cost.total_ns, ca.cost.total_ns);
  ASSERT_LT(finished_ns(ca.plan), finished_ns(rx.plan));

  ImitationConfig c = ImitationSteps(200, 4, 200);
  c.polish_updates = 600;
  c.polish_chunk = 200;
  c.portfolio_size = 4;
  ImitationTask task{&env, {relaxation, ca_lm}, "resnet"};
  for (ExpertChoice choice : {ExpertChoice::kEpisode, ExpertChoice::kFinished}) {
    SCOPED_TRACE(ExpertChoiceName(choice));
    c.expert_choice = choice;
    auto agent = SmallDqn();
    std::mt19937_64 rng(2);
    const CorpusImitationResult r = LearnFromCorpus(*agent, {task}, c, rng);
    if (choice == ExpertChoice::kEpisode) {
      EXPECT_EQ(r.tasks[0].expert, relaxation.produced_by);
      EXPECT_EQ(r.tasks[0].expert_finished_cost_ns, 0);
      continue;
    }
    EXPECT_EQ(r.tasks[0].expert, ca_lm.produced_by);
    EXPECT_DOUBLE_EQ(r.tasks[0].expert_finished_cost_ns, finished_ns(ca.plan));
    ASSERT_GE(r.portfolio.size(), 2u);
    EXPECT_EQ(r.portfolio[0].round, r.best_round);
    EXPECT_EQ(r.portfolio[0].weights, agent->SerializeWeights());
    EXPECT_DOUBLE_EQ(r.tasks[0].best_cost_ns, Greedy(env, *agent).cost.total_ns);
    for (size_t m = 0; m < r.portfolio.size(); ++m) {
      auto member = SmallDqn();
      member->LoadWeights(r.portfolio[m].weights);
      EXPECT_NEAR(r.portfolio[m].finished_relative, MinCostNs(t.w) / finished_ns(Greedy(env, *member).plan), 1e-12) << m;
      if (m > 0) {
        EXPECT_LE(r.portfolio[m].finished_relative, r.portfolio[m - 1].finished_relative) << m;
      }
    }
  }
  c.expert_finish_seconds = -1;
  auto agent = SmallDqn();
  std::mt19937_64 rng(2);
  EXPECT_THROW(LearnFromCorpus(*agent, {task}, c, rng), std::invalid_argument);
}

TEST(RunReport, TheFinalPlanNamesItsSourceAndTheVerdictNamesWhatBeatsIt) {
  Task t = ResnetTask();
  const PlacementPlan slow = PlacementPlan::Uniform(t.w, Tier::kSlow, t.env.dram_limit_bytes);
  const PlacementPlan first_touch = FirstTouchPlan(t.w, t.env.dram_limit_bytes);
  ASSERT_LT(EvaluatePlan(t.w, first_touch).total_ns, EvaluatePlan(t.w, slow).total_ns);
  LearnerResult r;
  r.agent = "dqn";
  r.greedy_plan = slow;
  r.greedy_plan.produced_by = "dqn-greedy v9";
  r.greedy_summary.cost = EvaluatePlan(t.w, r.greedy_plan);
  FinalPlanChoice final_plan = ChooseFinalPlan(t.w, r);
  EXPECT_EQ(final_plan.source, "greedy policy");

  // A faster plan seen in training becomes the final plan, named as what it is.
  r.best_plan = first_touch;
  r.has_best_plan = true;
  final_plan = ChooseFinalPlan(t.w, r);
  EXPECT_EQ(final_plan.source, "best episode seen in training");
  EXPECT_TRUE(final_plan.plan == first_touch || final_plan.plan.migrations == first_touch.migrations);

  BaselinePlan oracle{"oracle", first_touch, 1.5, "optimal"};
  std::vector<PolicyScore> scores = ComparePlans(t.w, t.env, r, final_plan, {oracle});
  bool marked = false;
  for (const PolicyScore& s : scores) marked |= s.source == "best episode seen in training (final plan)";
  EXPECT_TRUE(marked);
  // A training episode is not a policy: the verdict compares the greedy
  // policy with the baselines and references, and they beat it.
  const std::string verdict = ComparisonVerdict(scores);
  EXPECT_NE(verdict.find("NOT the best"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("first-touch"), std::string::npos) << verdict;
  // The gap in hundredths, so that a rival ahead by less than 0.05 does not read "0.0 points".
  EXPECT_TRUE(std::regex_search(verdict, std::regex(R"(\(\d+\.\d\d points\)$)"))) << verdict;
  const std::string table = ComparisonMarkdown(scores);
  EXPECT_NE(table.find("| oracle (optimal) | baseline |"), std::string::npos) << table;
  EXPECT_NE(table.find("| dqn-greedy v9 | greedy policy |"), std::string::npos) << table;

  // A greedy policy as fast as the best rival ties it: it is not called
  // the fastest.
  r.greedy_plan = first_touch;
  r.greedy_plan.produced_by = "dqn-greedy v10";
  r.greedy_summary.cost = EvaluatePlan(t.w, r.greedy_plan);
  r.has_best_plan = false;
  final_plan = ChooseFinalPlan(t.w, r);
  scores = ComparePlans(t.w, t.env, r, final_plan, {oracle});
  EXPECT_NE(ComparisonVerdict(scores).find(") ties first-touch (reference)"), std::string::npos)
      << ComparisonVerdict(scores);
  EXPECT_EQ(ComparisonVerdict(scores).find("is the fastest"), std::string::npos) << ComparisonVerdict(scores);
  // Faster than every rival: the fastest.
  scores = ComparePlans(t.w, t.env, r, final_plan, {});
  for (PolicyScore& s : scores)
    if (s.policy == "first-touch") s.relative_performance -= 1e-3;
  EXPECT_NE(ComparisonVerdict(scores).find("is the fastest of this comparison, 0.10 points above first-touch (reference)"),
            std::string::npos)
      << ComparisonVerdict(scores);

  // The ILP the network guides, faster than every other plan: the final
  // plan, named as a plan-time ILP, and a learned plan in the verdict.
  r.greedy_plan = slow;
  r.greedy_plan.produced_by = "dqn-greedy v11";
  r.greedy_summary.cost = EvaluatePlan(t.w, r.greedy_plan);
  AutoTmIlpOptions whole;
  whole.dram_limit_bytes = t.env.dram_limit_bytes;
  r.ilp.plan = SolveAutoTmIlp(t.w, whole).plan;
  r.ilp.plan.produced_by = "dqn-greedy v11+ilp";
  ASSERT_LT(EvaluatePlan(t.w, r.ilp.plan).total_ns, EvaluatePlan(t.w, first_touch).total_ns);
  r.ran_ilp = true;
  final_plan = ChooseFinalPlan(t.w, r);
  EXPECT_EQ(final_plan.source, "plan-time ILP");
  scores = ComparePlans(t.w, t.env, r, final_plan, {oracle});
  EXPECT_NE(ComparisonMarkdown(scores).find("| dqn-greedy v11+ilp | plan-time ILP (final plan) |"), std::string::npos)
      << ComparisonMarkdown(scores);
  EXPECT_NE(ComparisonVerdict(scores).find("the learned plan (plan-time ILP (final plan)"), std::string::npos)
      << ComparisonVerdict(scores);

  // The search that went on from a baseline's plan says so.
  r.searched = true;
  r.search.greedy.plan = r.greedy_plan;
  r.search.best.plan = r.ilp.plan;
  r.search.best.plan.produced_by = "dqn-greedy v11+search";
  r.ran_ilp = false;
  r.search_started_from = "oracle";
  final_plan = ChooseFinalPlan(t.w, r);
  EXPECT_EQ(final_plan.source, "plan-time search from oracle's plan");
  scores = ComparePlans(t.w, t.env, r, final_plan, {oracle});
  EXPECT_NE(ComparisonMarkdown(scores).find("| dqn-greedy v11+search | plan-time search from oracle's plan (final plan) |"),
            std::string::npos)
      << ComparisonMarkdown(scores);
  EXPECT_NE(ComparisonVerdict(scores).find("the learned plan (plan-time search from oracle's plan (final plan)"),
            std::string::npos)
      << ComparisonVerdict(scores);
  // One that ended below that plan and kept it as given says that too.
  r.search_kept_start = true;
  EXPECT_EQ(ChooseFinalPlan(t.w, r).source, "plan-time search from oracle's plan, kept as given");
}

// The final search's extra start: the fastest baseline plan within the DRAM
// limit, whatever the list's order.
TEST(RunReport, TheFastestBaselineIsTheFastestPlanThatFits) {
  Task t = ResnetTask();
  const PlacementPlan slow = PlacementPlan::Uniform(t.w, Tier::kSlow, t.env.dram_limit_bytes);
  const PlacementPlan first_touch = FirstTouchPlan(t.w, t.env.dram_limit_bytes);
  const PlacementPlan dram = PlacementPlan::Uniform(t.w, Tier::kDram, t.env.dram_limit_bytes);
  ASSERT_TRUE(EvaluatePlan(t.w, dram).oom);  // faster than any, and over the limit
  const std::vector<BaselinePlan> baselines = {
      {"all-slow", slow, 0, ""}, {"all-dram", dram, 0, ""}, {"first-touch", first_touch, 0, ""}};
  const BaselinePlan* fastest = FastestBaseline(t.w, baselines);
  ASSERT_NE(fastest, nullptr);
  EXPECT_EQ(fastest->policy, "first-touch");
  EXPECT_EQ(FastestBaseline(t.w, {baselines[1]}), nullptr);
  EXPECT_EQ(FastestBaseline(t.w, {}), nullptr);
}

}  // namespace
}  // namespace tensortier
