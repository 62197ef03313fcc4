// Replay of random transitions for agent tests: an update's arithmetic does
// not depend on what the observations hold. The same seed gives the same
// transitions.
#pragma once

#include <cstdint>
#include <random>
#include <utility>

#include "envs/placement_env.h"
#include "replay/replay_buffer.h"

namespace tensortier {

inline ReplayBuffer RandomNormalReplay(size_t n, uint64_t seed, int obs = kObservationSize) {
  ReplayBuffer replay(n);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    Transition t;
    for (int k = 0; k < obs; ++k) t.observation.push_back(normal(rng));
    for (int k = 0; k < obs; ++k) t.next_observation.push_back(normal(rng));
    t.action = static_cast<uint8_t>(i % 2);
    t.reward = normal(rng);
    t.done = i % 10 == 9;
    replay.Add(std::move(t));
  }
  return replay;
}

}  // namespace tensortier
