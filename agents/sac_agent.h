// Discrete soft actor-critic (Christodoulou 2019, as CleanRL's sac_atari)
// over the placement MDP: twin Q-networks with target networks kept by
// Polyak averaging, a categorical actor, and automatic entropy tuning. With
// only two actions the expectations over the next action in the critic
// target and over the action in the actor and temperature losses are exact
// sums, so no action is sampled during an update. LibTorch stays behind
// this header.
//
// Losses (B = batch, A = actions, pi = actor probabilities):
//   target  y   = r + gamma (1 - done) sum_a' pi(a'|s') [min_j Qt_j(s',a') - alpha log pi(a'|s')]
//   critic      = sum_j mean_b w_b (Q_j(s,a) - y)^2          (w = importance weights, 1 if none)
//   actor       = mean_b sum_a pi(a|s) [alpha log pi(a|s) - min_j Q_j(s,a)]   (Q detached)
//   temperature = mean_b sum_a pi(a|s) [-log_alpha (log pi(a|s) + H_target)]  (pi detached)
// with H_target = target_entropy_scale * log(A) (CleanRL: -0.89 log(1/|A|)).
// CleanRL averages the actor and temperature terms over B x A; here they
// are summed over actions (the expectation) and averaged over the batch,
// which is the same objective with the learning rate scaled by A.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/agent.h"

namespace tensortier {

// Defaults are the tuned settings `tensortier train` runs with (CleanRL's
// where the MDP's rewards did not call for others: docs/results/); the CLI
// binds its flags to these fields. Settings SAC shares with DQN (network,
// batch, replay schedule, seed, device) have the same defaults as DqnConfig.
struct SacConfig {
  int observation_size = 19;  // kObservationSize of envs/placement_env.h
  int num_actions = 2;
  std::vector<int> hidden = {128, 128};  // actor and each critic: Linear-ReLU-...-Linear
  double actor_learning_rate = 3e-4;     // CleanRL policy_lr
  double critic_learning_rate = 3e-4;    // CleanRL q_lr
  double alpha_learning_rate = 3e-3;     // CleanRL tunes alpha with q_lr (3e-4)
  double gamma = 0.99;
  double tau = 0.02;                     // Polyak factor of the target networks (CleanRL 0.005)
  int target_update_interval = 1;        // gradient updates between Polyak steps
  int actor_update_interval = 1;         // critic updates per actor (and alpha) update
  int batch_size = 32;
  bool autotune_alpha = true;
  double initial_alpha = 1.0;            // log alpha starts at log(initial_alpha)
  double target_entropy_scale = 0.1;     // target entropy = scale * log(num_actions) (CleanRL 0.89)
  double grad_clip_norm = 0.0;           // 0 = no clipping (CleanRL clips nothing)
  double reward_scale = 0.05;            // rewards are multiplied by this in the critic target
  int replay_capacity = 100000;
  int learning_starts = 512;
  int updates_per_episode = 64;
  uint64_t seed = 1;
  std::string device = "auto";           // "auto" (CUDA when present), "cpu", "cuda", "cuda:N"

  std::string ToJson() const;
  static SacConfig FromJson(const std::string& json);  // throws std::invalid_argument
  double TargetEntropy() const;
};

enum class SacActMode : uint8_t {
  kSample = 0,  // draw from the policy (training episodes)
  kGreedy = 1,  // the most probable action (evaluation episodes)
};

class SacAgent : public PlacementAgent {
 public:
  explicit SacAgent(SacConfig config);  // throws std::invalid_argument on a bad config
  ~SacAgent() override;
  SacAgent(SacAgent&&) noexcept;
  SacAgent& operator=(SacAgent&&) noexcept;

  const SacConfig& config() const { return config_; }
  std::string name() const override { return "sac"; }
  std::string config_json() const override { return config_.ToJson(); }
  std::string device_name() const override;
  AgentSchedule schedule() const override;

  // An action from the actor. SAC explores through its own policy, so
  // `epsilon` is ignored and the action is sampled; Greedy (or
  // SacActMode::kGreedy) takes the most probable one, for evaluation.
  int Act(const float* observation, double epsilon, std::mt19937_64& rng) const override;
  int Act(const float* observation, SacActMode mode, std::mt19937_64& rng) const;
  int Greedy(const float* observation) const override;
  std::vector<float> ActionProbabilities(const float* observation) const;
  std::vector<float> ActionScores(const float* observation) const override { return ActionProbabilities(observation); }
  // min(Q1, Q2) of one observation (diagnostics).
  std::vector<float> QValues(const float* observation) const;
  // The actor, layer by layer: the greedy action is the argmax of its logits.
  std::vector<DenseLayer> GreedyNetwork() const;
  double alpha() const;

  // One gradient step on a batch drawn from `replay`. From prioritised
  // replay the critic loss is weighted by the importance weights and the
  // sampled items' priorities are set to their new |TD error| (the mean
  // over the two critics).
  TrainStats Update(Replay& replay, std::mt19937_64& rng) override;
  // One gradient step on a given batch. `importance_weights` (one per item,
  // or empty) weight the critic loss; `td_errors`, when not null, receives
  // |y - Q| per item (the mean over the two critics) for priorities.
  TrainStats Update(const std::vector<const Transition*>& batch, const std::vector<float>& importance_weights = {},
                    std::vector<double>* td_errors = nullptr);
  uint64_t updates() const override { return updates_; }

  // Actor parameters only, for workers (which only act).
  std::string SerializeWeights() const override;
  // Throws std::runtime_error on a bad blob and then changes nothing.
  void LoadWeights(const std::string& blob) override;

  // Actor, critics, target critics, the three optimisers, log alpha, the
  // counters and the config. LoadState throws std::runtime_error (and
  // changes nothing) on bytes that are unreadable or hold networks of
  // another shape.
  std::string SaveState() const override;
  void LoadState(const std::string& bytes) override;
  // The settings a state was saved with (throws std::runtime_error).
  static SacConfig StateConfig(const std::string& bytes, const std::string& what = "agent state");
  // The settings of a checkpoint file (ReadAgentCheckpoint).
  static SacConfig ReadCheckpointConfig(const std::string& path);
  // An agent built from a checkpoint's own settings and loaded from it, on
  // `device` ("cpu" for inference on a host).
  static std::unique_ptr<SacAgent> FromCheckpoint(const std::string& path, const std::string& device = "cpu");

 private:
  struct Impl;
  SacConfig config_;
  std::unique_ptr<Impl> impl_;
  uint64_t updates_ = 0;
  ReplaySample sample_;  // reused by Update(Replay&)
  std::vector<double> td_errors_;
};

}  // namespace tensortier
