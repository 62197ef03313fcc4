// The evaluation thread on its own: it rolls out exactly the weights it was
// handed, keeps only the newest waiting request, reports failures as
// outcomes, and calls back only on a new best reward.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "learner/evaluator.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallAgent;
using testing::SmallEnv;
using testing::SmallWorkload;

std::vector<Evaluator::Outcome> Drain(Evaluator& e) {
  while (!e.WaitWhileBusy(std::chrono::milliseconds(10))) {
  }
  return e.TakeFinished();
}

double Reward(const EpisodeSummary& s) { return s.step_reward_sum + s.episodic_reward; }

TEST(LearnerEvaluator, RollsOutTheWeightsItWasHanded) {
  const Workload w = SmallWorkload();
  const EnvConfig env = SmallEnv(w);
  std::unique_ptr<PlacementAgent> source = SmallAgent(7);
  std::unique_ptr<PlacementAgent> other = SmallAgent(8);  // the evaluator's own agent starts from other weights
  PlacementEnv reference_env(w, env);
  const EpisodeSummary expected =
      RunEpisode(reference_env, [&](const Observation& o) { return source->Greedy(o.data()); });

  Evaluator e(w, env, other->name(), other->config_json(), std::nullopt, {});
  e.Start();
  EXPECT_FALSE(e.Submit({source->SerializeWeights(), /*weights_version=*/5, /*updates=*/3, /*episode=*/10}));
  std::vector<Evaluator::Outcome> done = Drain(e);
  ASSERT_EQ(done.size(), 1u);
  const Evaluator::Outcome& o = done[0];
  EXPECT_TRUE(o.ok);
  EXPECT_EQ(o.weights_version, 5u);
  EXPECT_EQ(o.updates, 3u);
  EXPECT_EQ(o.episode, 10u);
  EXPECT_EQ(o.summary.steps, expected.steps);
  EXPECT_DOUBLE_EQ(Reward(o.summary), Reward(expected));
  EXPECT_EQ(o.summary.plan.Hash(), expected.plan.Hash());
  EXPECT_EQ(o.summary.plan.produced_by, "dqn-greedy v5");
  EXPECT_LE(o.started, o.finished);
}

TEST(LearnerEvaluator, ANewerRequestReplacesTheOneStillWaiting) {
  const Workload w = SmallWorkload();
  std::unique_ptr<PlacementAgent> a = SmallAgent(1);
  Evaluator e(w, SmallEnv(w), a->name(), a->config_json(), std::nullopt, {});
  // Not started yet: both requests wait, the second replaces the first.
  EXPECT_FALSE(e.Submit({a->SerializeWeights(), 1, 0, 10}).has_value());
  std::optional<uint64_t> replaced = e.Submit({a->SerializeWeights(), 2, 0, 20});
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(*replaced, 10u);
  e.Start();
  std::vector<Evaluator::Outcome> done = Drain(e);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].episode, 20u);
  EXPECT_EQ(done[0].weights_version, 2u);
}

TEST(LearnerEvaluator, WeightsThatDoNotLoadAreAFailedOutcome) {
  const Workload w = SmallWorkload();
  std::unique_ptr<PlacementAgent> a = SmallAgent(1);
  int new_bests = 0;
  Evaluator e(w, SmallEnv(w), a->name(), a->config_json(), std::nullopt,
              [&](const PlacementAgent&, const EpisodeSummary&) { ++new_bests; });
  e.Start();
  e.Submit({"not weights", 1, 0, 10});
  std::vector<Evaluator::Outcome> done = Drain(e);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].ok);
  EXPECT_EQ(new_bests, 0);
  // The thread goes on after a failure.
  e.Submit({a->SerializeWeights(), 2, 0, 20});
  done = Drain(e);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok);
  EXPECT_EQ(new_bests, 1);
}

TEST(LearnerEvaluator, CallsBackOnlyWhenARewardBeatsTheBest) {
  const Workload w = SmallWorkload();
  std::unique_ptr<PlacementAgent> a = SmallAgent(1);
  std::vector<double> bests;
  {
    Evaluator e(w, SmallEnv(w), a->name(), a->config_json(), std::nullopt,
                [&](const PlacementAgent& agent, const EpisodeSummary& s) {
                  EXPECT_EQ(agent.SerializeWeights(), a->SerializeWeights());  // the evaluated weights
                  bests.push_back(Reward(s));
                });
    e.Start();
    e.Submit({a->SerializeWeights(), 1, 0, 10});
    Drain(e);
    e.Submit({a->SerializeWeights(), 2, 0, 20});  // the same reward again: not better
    ASSERT_EQ(Drain(e).size(), 1u);
  }
  ASSERT_EQ(bests.size(), 1u);
  // A resumed run's best stands: a reward below it calls nothing back.
  int calls = 0;
  Evaluator resumed(w, SmallEnv(w), a->name(), a->config_json(), bests[0] + 1,
                    [&](const PlacementAgent&, const EpisodeSummary&) { ++calls; });
  resumed.Start();
  resumed.Submit({a->SerializeWeights(), 3, 0, 30});
  ASSERT_EQ(Drain(resumed).size(), 1u);
  EXPECT_EQ(calls, 0);
}

TEST(LearnerEvaluator, StopAbandonsAWaitingRequest) {
  const Workload w = SmallWorkload();
  std::unique_ptr<PlacementAgent> a = SmallAgent(1);
  Evaluator e(w, SmallEnv(w), a->name(), a->config_json(), std::nullopt, {});
  e.Submit({a->SerializeWeights(), 1, 0, 10});
  e.Start();
  e.Stop();
  EXPECT_FALSE(e.running());
  e.Stop();  // twice is fine
}

}  // namespace
}  // namespace tensortier
