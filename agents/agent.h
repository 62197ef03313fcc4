// What the learner and the workers need of an agent, whichever family it
// is: act, learn from replay, ship weights, checkpoint. DQN and SAC sit
// behind it (agents/dqn_agent.h, agents/sac_agent.h).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "agents/prioritized_replay.h"
#include "agents/replay_buffer.h"

namespace tensortier {

struct TrainStats {
  double loss = 0;      // DQN: Huber loss; SAC: critics' loss
  double mean_q = 0;
  double entropy = 0;   // SAC only: mean policy entropy (nats)
  double alpha = 0;     // SAC only: entropy temperature
  bool skipped = false; // the loss was not finite: the agent took no step
};

// The settings the learner's loop needs, whatever the agent.
struct AgentSchedule {
  int replay_capacity = 100000;
  int learning_starts = 256;
  int updates_per_episode = 32;
};

class PlacementAgent {
 public:
  virtual ~PlacementAgent() = default;
  virtual std::string name() const = 0;          // "dqn", "sac"
  virtual std::string config_json() const = 0;   // rebuilds the same network (MakeAgent)
  virtual std::string device_name() const = 0;
  virtual AgentSchedule schedule() const = 0;
  // A training action: DQN is epsilon-greedy, SAC samples its policy (and
  // ignores epsilon).
  virtual int Act(const float* observation, double epsilon, std::mt19937_64& rng) const = 0;
  // The evaluation action.
  virtual int Greedy(const float* observation) const = 0;
  virtual TrainStats Update(const ReplayBuffer& replay, std::mt19937_64& rng) = 0;
  // One step on a prioritised batch: the loss is weighted by the importance
  // weights and the sampled items get their new |TD error| as priority.
  virtual bool supports_prioritized_replay() const { return false; }
  virtual TrainStats Update(PrioritizedReplay& replay, std::mt19937_64& rng);
  virtual uint64_t updates() const = 0;
  virtual std::string SerializeWeights() const = 0;
  virtual void LoadWeights(const std::string& blob) = 0;
  virtual void SaveCheckpoint(const std::string& path) const = 0;
  virtual void LoadCheckpoint(const std::string& path) = 0;
};

// `name` is "dqn" or "sac"; `config_json` is that agent's config (empty =
// defaults). `device` overrides the config's ("" keeps it). Throws
// std::invalid_argument for an unknown name or a bad config.
std::unique_ptr<PlacementAgent> MakeAgent(const std::string& name, const std::string& config_json,
                                          const std::string& device = "");

// The agent a checkpoint holds (DQN or SAC: its own format tells), built from
// the checkpoint's settings on `device`. Throws std::runtime_error naming
// both formats when the file is neither.
std::unique_ptr<PlacementAgent> LoadAgentCheckpoint(const std::string& path, const std::string& device = "cpu");

}  // namespace tensortier
