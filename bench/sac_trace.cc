// Prints the statistics of a fixed sequence of discrete-SAC updates (and the
// resulting policy and Q-values on fixed observations) with full precision:
// run it before and after changing agents/sac_agent.cc and diff the output
// to check that a performance change kept the update's math. Differences
// in the last digits are rounding from a changed order of operations.
#include <cstdio>
#include <random>

#include "replay/replay_buffer.h"
#include "agents/sac_agent.h"
#include "envs/placement_env.h"

int main(int argc, char** argv) {
  using namespace tensortier;
  const int updates = argc > 1 ? std::atoi(argv[1]) : 300;
  for (int variant = 0; variant < 3; ++variant) {
    SacConfig c;
    c.device = "cpu";
    // The sequence as first traced (CleanRL's settings), whatever the
    // library's defaults: the trace is compared across versions.
    c.alpha_learning_rate = 3e-4;
    c.tau = 0.005;
    c.target_entropy_scale = 0.89;
    c.reward_scale = 1.0;
    c.batch_size = variant == 1 ? 256 : 32;
    if (variant == 2) {  // the non-default paths: clipping, delayed actor and targets
      c.grad_clip_norm = 0.5;
      c.actor_update_interval = 2;
      c.target_update_interval = 3;
      c.reward_scale = 2.0;
    }
    SacAgent agent(c);
    ReplayBuffer replay(5000);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int i = 0; i < 5000; ++i) {
      Transition t;
      t.observation.resize(kObservationSize);
      for (float& x : t.observation) x = u(rng);
      t.action = static_cast<uint8_t>(rng() & 1);
      t.reward = u(rng) * t.observation[0] - 0.3f * t.action;
      t.done = (rng() % 10) == 0;
      t.next_observation.resize(kObservationSize);
      for (float& x : t.next_observation) x = t.done ? 0.0f : u(rng);
      replay.Add(std::move(t));
    }
    std::mt19937_64 sample_rng(5);
    for (int i = 0; i < updates; ++i) {
      TrainStats s = agent.Update(replay, sample_rng);
      if (i % 25 == 0 || i + 1 == updates)
        std::printf("v%d u%d critic %.9g actor %.9g alpha %.9g alpha_loss %.9g entropy %.9g mean_q %.9g %d\n",
                    variant, i, s.loss, s.actor_loss, s.alpha, s.alpha_loss, s.entropy, s.mean_q,
                    s.actor_updated ? 1 : 0);
    }
    // Prioritised-style update with importance weights and TD errors.
    std::vector<const Transition*> batch = replay.Sample(16, sample_rng);
    std::vector<float> weights(16);
    for (int i = 0; i < 16; ++i) weights[i] = 0.1f * (i + 1);
    std::vector<double> td;
    TrainStats s = agent.Update(batch, weights, &td);
    std::printf("v%d weighted critic %.9g td0 %.9g td15 %.9g\n", variant, s.loss, td[0], td[15]);
    for (int i = 0; i < 3; ++i) {
      const float* obs = replay.items()[i].observation.data();
      std::vector<float> p = agent.ActionProbabilities(obs);
      std::vector<float> q = agent.QValues(obs);
      std::printf("v%d obs%d p %.9g %.9g q %.9g %.9g\n", variant, i, p[0], p[1], q[0], q[1]);
    }
  }
  return 0;
}
