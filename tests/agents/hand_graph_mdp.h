// The placement MDP on which the DQN tests check a trained greedy policy
// against the brute-force optimum (DqnPlacement, DqnPrioritized): the hand
// graph of tests/core/hand_graph.h, small enough for testing::BestReturn to
// enumerate every action sequence.
#pragma once

#include <cstdint>
#include <random>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "envs/placement_env.h"

namespace tensortier::testing {

inline EnvConfig HandGraphEnv() {
  EnvConfig c;
  c.dram_limit_bytes = 1000;
  c.scope = DecisionScope::kAllLive;
  c.beta = 1.0;  // performance only: the step rewards carry the whole objective
  return c;
}

// A DQN that reaches the optimum in 1500 episodes from `seed`.
inline DqnConfig HandGraphDqn(uint64_t seed) {
  DqnConfig c;
  c.observation_size = kObservationSize;
  c.hidden = {64, 64};
  c.learning_rate = 1e-3;
  c.gamma = 1.0;  // finite episodes: optimise the return itself
  c.batch_size = 32;
  c.target_update_interval = 100;
  c.learning_starts = 64;
  c.seed = seed;
  return c;
}

// The undiscounted return of one greedy episode.
inline double GreedyReturn(PlacementEnv& env, const PlacementAgent& agent, std::mt19937_64& rng) {
  double total = 0;
  Observation obs = env.Reset();
  while (!env.done()) {
    StepResult r = env.Step(agent.Act(obs.data(), 0.0, rng));
    total += r.reward;
    obs = r.observation;
  }
  return total;
}

}  // namespace tensortier::testing
