// Double DQN over the placement MDP (DeepTM IV-C): a Q-network of a flatten
// and three dense layers, a target network, Huber loss, gradient clipping and
// an epsilon schedule. LibTorch stays behind this header.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/prioritized_replay.h"
#include "agents/replay_buffer.h"

namespace tensortier {

// Defaults are the tuned settings `tensortier train` runs with (measured in
// docs/results/learner-benchmarks.md, "DQN settings sweep"); the CLI binds
// its flags to these fields, so a Learner built in code runs the same
// algorithm.
struct DqnConfig {
  int observation_size = 15;  // kObservationSize of envs/placement_env.h
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

  std::string ToJson() const;
  static DqnConfig FromJson(const std::string& json);  // throws on malformed input
};

struct UpdateStats {
  double loss = 0;
  double mean_q = 0;
  double grad_norm = 0;
};

class DqnAgent {
 public:
  explicit DqnAgent(DqnConfig config);
  ~DqnAgent();
  DqnAgent(DqnAgent&&) noexcept;
  DqnAgent& operator=(DqnAgent&&) noexcept;

  const DqnConfig& config() const { return config_; }
  std::string device_name() const;

  // Greedy action; with probability epsilon a uniform one.
  int Act(const float* observation, double epsilon, std::mt19937_64& rng) const;
  std::vector<float> QValues(const float* observation) const;

  // One double-DQN gradient step on a batch sampled from `replay`.
  UpdateStats Update(const ReplayBuffer& replay, std::mt19937_64& rng);
  // One step on a prioritised batch (Schaul et al. 2016): each item's Huber
  // loss is scaled by its importance weight, and the sampled items get
  // their |TD error| (before the step) as new priority.
  UpdateStats Update(PrioritizedReplay& replay, std::mt19937_64& rng);
  // One step on `batch` (exactly batch_size transitions). With importance
  // weights (one per transition; empty = all 1) the loss is
  // mean_i w_i huber(e_i); `abs_td_errors`, when given, receives |e_i|.
  UpdateStats Update(const std::vector<const Transition*>& batch, const std::vector<float>& importance_weights,
                     std::vector<double>* abs_td_errors);
  void SyncTarget();
  uint64_t updates() const { return updates_; }

  // Policy (online network) parameters only, for workers.
  std::string SerializeWeights() const;
  void LoadWeights(const std::string& blob);  // throws std::runtime_error on a bad blob

  // Online and target networks, optimizer state and counters; written to a
  // temporary file and renamed.
  void SaveCheckpoint(const std::string& path) const;
  void LoadCheckpoint(const std::string& path);
  // The settings a checkpoint was saved with (its network shape included).
  static DqnConfig ReadCheckpointConfig(const std::string& path);
  // An agent built from a checkpoint's own settings and loaded from it, on
  // `device` ("cpu" for inference on a host).
  static std::unique_ptr<DqnAgent> FromCheckpoint(const std::string& path, const std::string& device = "cpu");

 private:
  struct Impl;
  DqnConfig config_;
  std::unique_ptr<Impl> impl_;
  uint64_t updates_ = 0;
};

}  // namespace tensortier
