// Double DQN over the placement MDP (DeepTM IV-C): a Q-network of a flatten
// and three dense layers, a target network, Huber loss, gradient clipping and
// an epsilon schedule. LibTorch stays behind this header.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/agent.h"

namespace tensortier {

// Defaults are the tuned settings `tensortier train` runs with (measured in
// docs/results/learner-benchmarks.md, "DQN settings sweep"); the CLI binds
// its flags to these fields, so a Learner built in code runs the same
// algorithm.
struct DqnConfig {
  int observation_size = 19;  // kObservationSize of envs/placement_env.h
  int num_actions = 2;
  std::vector<int> hidden = {128, 128};  // two hidden layers -> three dense layers
  double learning_rate = 1e-3;           // DeepTM Table II has 1e-4; with it `make run`'s plan lost to first-touch
  double gamma = 0.99;
  int batch_size = 32;
  double huber_delta = 1.0;
  double grad_clip_norm = 10.0;
  int target_update_interval = 200;      // gradient updates between target syncs
  // Workers' epsilon falls linearly with the weights version (DeepTM:
  // greedy probability 0.1 -> 1.0 over 150 episodes; 200 here), the
  // schedule of worker/exploration.h.
  double epsilon_start = 0.9;
  double epsilon_end = 0.0;
  int epsilon_decay_episodes = 200;
  int replay_capacity = 100000;          // DeepTM uses 100 episodes' worth
  int learning_starts = 512;             // transitions in replay before the first update
  int updates_per_episode = 64;
  uint64_t seed = 1;
  std::string device = "auto";           // "auto" (CUDA when present), "cpu", "cuda", "cuda:N"
  // Learning from demonstrations (DQfD, Hester et al. 2018), used once
  // SetDemonstrations gave the agent an expert's transitions: this share of
  // every batch is drawn from them, and on those rows a large-margin loss
  // lambda * (max_a [Q(s,a) + margin (a != a_E)] - Q(s,a_E)) pushes the
  // expert's action above the others by `demo_margin`.
  double demo_fraction = 0.25;
  double demo_margin = 0.8;
  double demo_loss_weight = 1.0;
  // Share of demonstration rows drawn class-balanced (an action, then one of
  // its transitions) instead of uniformly: the expert's "slow" choices are a
  // few percent of its decisions, and uniform batches let a network that
  // answers "DRAM" everywhere fit them well (Inception-v3: docs/results/learning.md).
  double demo_class_balance = 0.0;

  std::string ToJson() const;
  static DqnConfig FromJson(const std::string& json);  // throws on malformed input
};

class DqnAgent : public PlacementAgent {
 public:
  explicit DqnAgent(DqnConfig config);
  ~DqnAgent() override;
  DqnAgent(DqnAgent&&) noexcept;
  DqnAgent& operator=(DqnAgent&&) noexcept;

  const DqnConfig& config() const { return config_; }
  std::string name() const override { return "dqn"; }
  std::string config_json() const override { return config_.ToJson(); }
  std::string device_name() const override;
  AgentSchedule schedule() const override;

  // Greedy action; with probability epsilon a uniform one.
  int Act(const float* observation, double epsilon, std::mt19937_64& rng) const override;
  int Greedy(const float* observation) const override;
  std::vector<float> QValues(const float* observation) const;
  // The online Q-network, layer by layer: Greedy is the argmax of its outputs.
  std::vector<DenseLayer> GreedyNetwork() const;
  std::vector<float> ActionScores(const float* observation) const override { return QValues(observation); }

  // One double-DQN gradient step on a batch sampled from `replay`. From
  // prioritised replay (Schaul et al. 2016) each item's Huber loss is
  // scaled by its importance weight, and the sampled items get their |TD
  // error| (before the step) as new priority.
  TrainStats Update(Replay& replay, std::mt19937_64& rng) override;
  // One step on `batch` (exactly batch_size transitions). With importance
  // weights (one per transition; empty = all 1) the loss is
  // mean_i w_i huber(e_i); `abs_td_errors`, when given, receives |e_i|.
  TrainStats Update(const std::vector<const Transition*>& batch, const std::vector<float>& importance_weights,
                    std::vector<double>* abs_td_errors);
  void SyncTarget() override;
  void SetLearningRate(double learning_rate) override;
  uint64_t updates() const override { return updates_; }
  // The online network's weights, averaged (PlacementAgent).
  bool supports_weight_mean() const override { return true; }
  void FoldWeightsIntoMean() override;
  uint64_t weights_folded() const override;
  void LoadWeightMean() override;
  void ClearWeightMean() override;

  // The expert transitions (envs/demonstration.h) every later Update mixes
  // into its batch from uniform replay (config demo_fraction; prioritised
  // batches stay the replay's own, their priorities belong to its items);
  // kept apart from replay, so the agent's own experience never evicts them.
  // Empty: plain double DQN.
  bool supports_demonstrations() const override { return true; }
  void SetDemonstrations(std::vector<Transition> demonstrations) override;
  size_t demonstrations() const;
  // One step on a batch drawn from the demonstrations alone: DQfD's
  // pre-training phase, before the agent has experience of its own.
  TrainStats PretrainStep(std::mt19937_64& rng) override;

  // Policy (online network) parameters only, for workers.
  std::string SerializeWeights() const override;
  void LoadWeights(const std::string& blob) override;  // throws std::runtime_error on a bad blob

  // Online and target networks, optimizer state, counters and the config.
  std::string SaveState() const override;
  void LoadState(const std::string& bytes) override;
  // The settings a state was saved with (its network shape included);
  // throws std::runtime_error when `bytes` are not a DQN agent's state.
  static DqnConfig StateConfig(const std::string& bytes, const std::string& what = "agent state");
  // The settings of a checkpoint file (ReadAgentCheckpoint).
  static DqnConfig ReadCheckpointConfig(const std::string& path);
  // An agent built from a checkpoint's own settings and loaded from it, on
  // `device` ("cpu" for inference on a host).
  static std::unique_ptr<DqnAgent> FromCheckpoint(const std::string& path, const std::string& device = "cpu");

 private:
  struct Impl;
  DqnConfig config_;
  std::unique_ptr<Impl> impl_;
  uint64_t updates_ = 0;
  ReplaySample sample_;               // reused by Update(Replay&)
  std::vector<double> abs_td_errors_;
};

}  // namespace tensortier
