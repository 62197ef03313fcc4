// Training without a fleet: epsilon-greedy episodes of an agent on one env,
// each episode's transitions into a replay, then a few updates. For tests,
// benchmarks and examples that need a trained network quickly; the product
// trains through the learner and its workers (learner/, worker/).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "agents/agent.h"
#include "envs/placement_env.h"

namespace tensortier {

struct LocalTraining {
  int episodes = 40;
  int updates_per_episode = 32;
  size_t learning_starts = 512;   // replay size before the first update
  // Epsilon falls linearly from 1 to `epsilon_floor` over the first
  // `decay_share` of the episodes.
  double epsilon_floor = 0.05;
  double decay_share = 0.6;
};

// `replay` is a ReplayBuffer or a PrioritizedReplay (anything with
// Add(Transition) and size() that Update samples). `before_episode(e)` runs
// before episode e (e.g. to anneal a prioritised replay's beta).
template <typename ReplayT>
void TrainLocally(PlacementAgent& agent, PlacementEnv& env, ReplayT& replay, const LocalTraining& s,
                  std::mt19937_64& rng, const std::function<void(int)>& before_episode = {}) {
  for (int e = 0; e < s.episodes; ++e) {
    const double epsilon =
        std::max(s.epsilon_floor, 1.0 - static_cast<double>(e) / (s.decay_share * s.episodes));
    if (before_episode) before_episode(e);
    Observation obs = env.Reset();
    while (!env.done()) {
      const int a = agent.Act(obs.data(), epsilon, rng);
      StepResult r = env.Step(a);
      replay.Add(TransitionOf(obs, a, r));
      obs = r.observation;
    }
    if (replay.size() >= s.learning_starts)
      for (int u = 0; u < s.updates_per_episode; ++u) agent.Update(replay, rng);
  }
}

}  // namespace tensortier
