// What the learner and the workers need of an agent, whichever family it
// is: act, learn from replay, ship weights, checkpoint. DqnAgent
// (agents/dqn_agent.h) and SacAgent (agents/sac_agent.h) implement it.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "envs/plan_search.h"
#include "replay/replay.h"

namespace tensortier {

struct TrainStats {
  double loss = 0;            // DQN: Huber loss; SAC: the sum of the critics' (weighted) MSE
  double mean_q = 0;          // DQN: Q at the taken actions; SAC: min(Q1, Q2) there
  double grad_norm = 0;       // DQN only: before clipping
  double entropy = 0;         // SAC only: mean policy entropy (nats)
  double alpha = 0;           // SAC only: entropy temperature after this update
  double actor_loss = 0;      // SAC only: of the last actor update
  double alpha_loss = 0;      // SAC only
  bool actor_updated = false; // SAC only: whether this update stepped the actor
  bool skipped = false;       // the loss was not finite: no step taken, priorities untouched
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
  // One gradient step on a batch drawn from `replay`. From prioritised
  // replay the loss is weighted by the importance weights and the sampled
  // items get their new |TD error| as priority. Throws std::logic_error
  // when replay is empty.
  virtual TrainStats Update(Replay& replay, std::mt19937_64& rng) = 0;
  virtual bool supports_prioritized_replay() const { return true; }
  virtual uint64_t updates() const = 0;
  // Policy parameters only, for workers.
  virtual std::string SerializeWeights() const = 0;
  virtual void LoadWeights(const std::string& blob) = 0;  // throws std::runtime_error on a bad blob

  // The whole training state (networks, optimisers, counters and the
  // settings that rebuild the agent) as bytes, for the learner's checkpoint
  // to embed. LoadState throws std::runtime_error on bytes that are not
  // this agent's (another family, another network shape, corrupt) and then
  // changes nothing.
  virtual std::string SaveState() const = 0;
  virtual void LoadState(const std::string& bytes) = 0;

  // The state in an agent checkpoint file (WriteAgentCheckpoint below):
  // written atomically, versioned and checksummed.
  void SaveCheckpoint(const std::string& path) const;
  void LoadCheckpoint(const std::string& path);  // ReadAgentCheckpoint, then LoadState

  // The agent's preference for each action at an observation, higher is
  // better (DQN: Q-values; SAC: its policy's probabilities): what a search at
  // plan time (envs/plan_search.h) questions first where they are close.
  virtual std::vector<float> ActionScores(const float* observation) const = 0;

  // Learning from demonstrations (DQfD, learner/imitation.h). Agents without
  // it return false here and throw std::logic_error from the two calls below.
  virtual bool supports_demonstrations() const { return false; }
  // The expert transitions every later Update mixes into its batches.
  virtual void SetDemonstrations(std::vector<Transition> demonstrations);
  // One gradient step on demonstrations alone.
  virtual TrainStats PretrainStep(std::mt19937_64& rng);
  // After LoadWeights on an agent that goes on training: the target network
  // (where there is one) starts from the loaded weights too.
  virtual void SyncTarget() {}
  // The step size of later updates (and of the settings SaveState records).
  // Agents that learn from demonstrations implement it: after imitation a
  // smaller step keeps TD updates from pulling the policy off the expert.
  // Throws std::invalid_argument for a step that is not positive and finite,
  // std::logic_error where the agent has no such setting.
  virtual void SetLearningRate(double learning_rate);
  // Stochastic weight averaging (Izmailov et al., UAI 2018): a running mean
  // of the policy's weights over the snapshots folded in, which corpus
  // imitation offers as one more candidate policy: its greedy plan swings
  // less from snapshot to snapshot than any one snapshot's. The mean is not
  // part of SaveState. Agents without it return false and throw
  // std::logic_error from the calls below.
  virtual bool supports_weight_mean() const { return false; }
  // mean += (weights - mean) / (folded + 1); the first fold copies.
  virtual void FoldWeightsIntoMean();
  virtual uint64_t weights_folded() const { return 0; }
  // The policy's weights become the mean (the target network is left as it
  // is: SyncTarget). Throws std::logic_error when nothing was folded.
  virtual void LoadWeightMean();
  virtual void ClearWeightMean();
};

// One fully connected layer of the network behind an agent's greedy action:
// weight [out][in] row-major, bias [out]; ReLU after every layer but the
// last, whose argmax (the lowest on a tie) is the greedy action. What
// `tensortier export` writes for hosts (docs/lookup-format.md).
struct DenseLayer {
  int64_t in = 0, out = 0;
  std::vector<float> weight;
  std::vector<float> bias;
};

// The agent's ActionScores as the plan-time search wants them (two actions).
// `agent` must outlive the function.
ActionScores ScoresOf(const PlacementAgent& agent);

// `name` is "dqn" or "sac"; `config_json` is that agent's config (empty =
// defaults). `device` overrides the config's ("" keeps it). Throws
// std::invalid_argument for an unknown name or a bad config.
std::unique_ptr<PlacementAgent> MakeAgent(const std::string& name, const std::string& config_json,
                                          const std::string& device = "");

// Agent checkpoint files (.ckpt):
//   "TTAGNT" | format version (2 digits) | state length (u64 LE) | FNV-1a 64 of the state (u64 LE) | state
// (common/framed_file.h, as the learner's .ttckpt). Files from before the
// frame (TensorTier 0.1: the bare state, a LibTorch archive) still load,
// unverified. Reading throws std::runtime_error naming the path and the
// problem: not an agent checkpoint, another format version, truncated,
// bytes appended, checksum mismatch.
void WriteAgentCheckpoint(const std::string& path, const std::string& state);
std::string ReadAgentCheckpoint(const std::string& path);

// The agent a checkpoint file holds (DQN or SAC: its own state tells),
// built from the checkpoint's settings on `device`. Throws
// std::runtime_error naming both families when the state is neither.
std::unique_ptr<PlacementAgent> LoadAgentCheckpoint(const std::string& path, const std::string& device = "cpu");
// The same from state bytes (SaveState's).
std::unique_ptr<PlacementAgent> LoadAgentState(const std::string& state, const std::string& device,
                                               const std::string& what);

}  // namespace tensortier
