// DQfD in the DQN agent: demonstrations mixed into batches, the large-margin
// loss, pre-training steps (agents/dqn_agent.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "agents/dqfd.h"
#include "agents/dqn_agent.h"
#include "envs/demonstration.h"
#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/synthetic.h"

namespace tensortier {
namespace {

DqnConfig SmallConfig() {
  DqnConfig c;
  c.hidden = {64, 64};
  c.learning_rate = 1e-3;
  c.device = "cpu";
  c.seed = 3;
  return c;
}

double Agreement(const DqnAgent& agent, const std::vector<Transition>& shown) {
  std::mt19937_64 rng(1);
  size_t agree = 0;
  for (const Transition& t : shown) agree += agent.Act(t.observation.data(), 0.0, rng) == t.action;
  return static_cast<double>(agree) / static_cast<double>(shown.size());
}

TEST(DqnDemonstrations, PretrainingOnAnExpertsEpisodeMakesTheGreedyPolicyAgreeWithIt) {
  SyntheticOptions so;
  so.shape = SyntheticShape::kVggLike;
  so.layers = 6;
  Workload w = GenerateSynthetic(so);
  w.Finalize();
  EnvConfig ec;
  ec.dram_limit_bytes = w.peak_live_bytes() / 4;
  ec.beta = 1.0;
  PlacementEnv env(w, ec);
  // First-touch decides differently from any constant: DRAM for early
  // tensors while they fit, slow for the rest.
  Demonstration d = DemonstratePlan(env, FirstTouchPlan(w, ec.dram_limit_bytes));
  size_t dram = 0;
  for (const Transition& t : d.transitions) dram += t.action == 0;
  ASSERT_GT(dram, 0u);
  ASSERT_LT(dram, d.transitions.size());

  DqnAgent agent(SmallConfig());
  const double before = Agreement(agent, d.transitions);
  agent.SetDemonstrations(d.transitions);
  EXPECT_EQ(agent.demonstrations(), d.transitions.size());
  std::mt19937_64 rng(7);
  double first_loss = 0, last_loss = 0;
  for (int u = 0; u < 1500; ++u) {
    TrainStats s = agent.PretrainStep(rng);
    ASSERT_TRUE(std::isfinite(s.loss));
    if (u < 50) first_loss += s.loss;
    if (u >= 1450) last_loss += s.loss;
  }
  EXPECT_LT(last_loss, first_loss);
  const double after = Agreement(agent, d.transitions);
  EXPECT_GE(after, 0.95) << "agreement before pre-training " << before;
  EXPECT_GT(after, before);
}

TEST(DqnDemonstrations, TheMarginLossIsZeroOnceTheExpertsActionLeadsByTheMargin) {
  DqnConfig c = SmallConfig();
  c.batch_size = 4;
  c.demo_margin = 0.5;
  c.gamma = 0.0;          // Q(s, a) -> r: the TD part alone is easy to reach
  DqnAgent agent(c);
  // One state; the expert takes action 1 with a reward of 1.
  Transition t{std::vector<float>(kObservationSize, 0.25f), 1, 1.0f, {}, true};
  agent.SetDemonstrations({t});
  std::mt19937_64 rng(1);
  for (int u = 0; u < 3000; ++u) agent.PretrainStep(rng);
  std::vector<float> q = agent.QValues(t.observation.data());
  // TD drives Q(s,1) to 1; the margin loss drives Q(s,0) below Q(s,1) - 0.5
  // and stops there (it has no gradient once the margin holds).
  EXPECT_NEAR(q[1], 1.0, 0.05);
  EXPECT_LT(q[0], q[1] - 0.45);
}

// The expert's rare action gets its share of rows only when asked for.
TEST(DqnDemonstrations, ClassBalancedDrawsGiveEachActionItsShare) {
  std::vector<Transition> set(100, Transition{std::vector<float>(kObservationSize, 0.f), 0, 0.f, {}, true});
  set[7].action = 1;
  Demonstrations d;
  d.Set(set, kObservationSize, 2, "test");
  std::mt19937_64 rng(4);
  auto share_of_slow = [&](double balance) {
    std::vector<const Transition*> batch(20000);
    d.Draw(batch.size(), batch, rng, balance);
    size_t slow = 0;
    for (const Transition* t : batch) slow += t->action == 1;
    return static_cast<double>(slow) / static_cast<double>(batch.size());
  };
  EXPECT_NEAR(share_of_slow(0.0), 0.01, 0.005);
  EXPECT_NEAR(share_of_slow(1.0), 0.5, 0.02);
  EXPECT_NEAR(share_of_slow(0.5), 0.5 * 0.5 + 0.5 * 0.01, 0.02);
  // One action only: balancing draws from it.
  d.Set(std::vector<Transition>(3, set[0]), kObservationSize, 2, "test");
  EXPECT_DOUBLE_EQ(share_of_slow(1.0), 0.0);
}

TEST(DqnDemonstrations, BadDemonstrationsAreRefusedAndPretrainingNeedsSome) {
  DqnAgent agent(SmallConfig());
  std::mt19937_64 rng(1);
  EXPECT_THROW(agent.PretrainStep(rng), std::logic_error);
  EXPECT_THROW(agent.SetDemonstrations({Transition{std::vector<float>(3, 0.f), 0, 0.f, {}, true}}),
               std::invalid_argument);
  EXPECT_THROW(agent.SetDemonstrations({Transition{std::vector<float>(kObservationSize, 0.f), 7, 0.f, {}, true}}),
               std::invalid_argument);
  std::vector<float> inf(kObservationSize, 0.f);
  inf[2] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(agent.SetDemonstrations({Transition{inf, 0, 0.f, {}, true}}), std::invalid_argument);
  EXPECT_THROW(agent.SetDemonstrations({Transition{std::vector<float>(kObservationSize, 0.f), 0, std::nanf(""), {}, true}}),
               std::invalid_argument);
  EXPECT_EQ(agent.demonstrations(), 0u);
}

TEST(DqnDemonstrations, ConfigRoundTripsAndRejectsBadValues) {
  DqnConfig c;
  c.demo_fraction = 0.5;
  c.demo_margin = 0.3;
  c.demo_loss_weight = 2.0;
  DqnConfig back = DqnConfig::FromJson(c.ToJson());
  EXPECT_EQ(back.demo_fraction, 0.5);
  EXPECT_EQ(back.demo_margin, 0.3);
  EXPECT_EQ(back.demo_loss_weight, 2.0);
  EXPECT_THROW(DqnConfig::FromJson(R"({"demo_fraction": 1.5})"), std::invalid_argument);
  EXPECT_THROW(DqnConfig::FromJson(R"({"demo_margin": -1})"), std::invalid_argument);
}

}  // namespace
}  // namespace tensortier
