// Shared pieces of the learner parts' unit tests (no sockets, no threads of
// the learner's own): a small workload and a small agent on the CPU.
#pragma once

#include <memory>
#include <string>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "envs/workload_spec.h"

namespace tensortier::testing {

inline Workload SmallWorkload() { return LoadWorkloadSpec("synthetic:vgg:3"); }

inline EnvConfig SmallEnv(const Workload& w) {
  EnvConfig env;
  env.dram_limit_bytes = w.peak_live_bytes() / 3;
  return env;
}

inline DqnConfig SmallDqn(uint64_t seed) {
  DqnConfig c;
  c.observation_size = kObservationSize;
  c.num_actions = 2;
  c.hidden = {16, 16};
  c.batch_size = 8;
  c.learning_starts = 16;
  c.updates_per_episode = 4;
  c.device = "cpu";
  c.seed = seed;
  return c;
}

// A transition of the right shape: every observation float `value`.
inline Transition Row(float value, uint8_t action, float reward = 0, bool done = false) {
  Transition t;
  t.observation.assign(kObservationSize, value);
  t.next_observation = t.observation;
  t.action = action;
  t.reward = reward;
  t.done = done;
  return t;
}

inline std::unique_ptr<PlacementAgent> SmallAgent(uint64_t seed) {
  return MakeAgent("dqn", SmallDqn(seed).ToJson());
}

}  // namespace tensortier::testing
