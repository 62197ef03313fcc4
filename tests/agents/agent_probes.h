// What agent tests ask of an agent's networks before and after an update:
// the Q-values at a few random observations, and an update on a batch the
// test has spoilt.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "agents/agent.h"
#include "envs/placement_env.h"
#include "replay/replay_buffer.h"

namespace tensortier {

// `n` observations of normal noise, the same for the same seed.
inline std::vector<std::vector<float>> RandomProbes(int n, uint64_t seed, int obs = kObservationSize) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> out(n, std::vector<float>(obs));
  for (auto& o : out)
    for (auto& x : o) x = normal(rng);
  return out;
}

template <typename Agent>
std::vector<std::vector<float>> AllQ(const Agent& agent, const std::vector<std::vector<float>>& probes) {
  std::vector<std::vector<float>> out;
  for (const auto& p : probes) out.push_back(agent.QValues(p.data()));
  return out;
}

// A batch for Update(batch, ...): pointers into `rows`, which must outlive it.
inline std::vector<const Transition*> BatchOf(const std::vector<Transition>& rows) {
  std::vector<const Transition*> batch;
  for (const Transition& t : rows) batch.push_back(&t);
  return batch;
}

// Issue 17: one non-finite loss made every weight NaN for the rest of the
// run. A batch of 16 rows of `replay` that `spoil` gives non-finite rewards
// must take no step and leave the Q-values as they were; the next update
// from `replay` steps again, to finite Q-values.
template <typename Agent>
void ExpectNonFiniteLossSkipsTheStep(Agent& agent, const std::vector<std::vector<float>>& probes, ReplayBuffer& replay,
                                     std::mt19937_64& rng, const std::function<void(std::vector<Transition>&)>& spoil) {
  const auto before = AllQ(agent, probes);
  std::vector<Transition> rows;
  for (const Transition* t : replay.Sample(16, rng)) rows.push_back(*t);
  spoil(rows);
  TrainStats s = agent.Update(BatchOf(rows), {}, nullptr);
  EXPECT_TRUE(s.skipped);
  EXPECT_EQ(agent.updates(), 0u);
  EXPECT_EQ(AllQ(agent, probes), before);
  s = agent.Update(replay, rng);
  EXPECT_FALSE(s.skipped);
  EXPECT_TRUE(std::isfinite(s.loss));
  for (const auto& q : AllQ(agent, probes))
    for (float v : q) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace tensortier
