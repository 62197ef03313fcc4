// Continuous soft actor-critic (Haarnoja et al. 2018, as CleanRL's
// sac_continuous_action) that learns heat weights and a threshold per
// kernel on HeatWeightEnv (envs/heat_weight_env.h): the learned form of
// DeepTM's Algorithm 1. The actor is a tanh-squashed Gaussian (mean and
// log std heads, log std squashed into [log_std_min, log_std_max]); twin
// critics Q(s, a) with Polyak-averaged targets; automatic entropy tuning
// towards -|A|. Actions are in [-1, 1]^5; the env maps them to weight and
// threshold ranges. LibTorch stays behind this header (heat_weight_agent.cc;
// the networks are SacCore's, as the discrete SAC agent's).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "envs/heat_weight_env.h"

namespace tensortier {

struct HeatSacConfig {
  int observation_size = kHeatObservationSize;
  int action_size = kHeatActionSize;
  std::vector<int> hidden = {64, 64};
  double actor_learning_rate = 3e-4;   // CleanRL policy_lr
  double critic_learning_rate = 1e-3;  // CleanRL q_lr
  double alpha_learning_rate = 1e-3;
  double gamma = 0.99;
  double tau = 0.005;
  int batch_size = 64;
  int actor_update_interval = 2;       // CleanRL policy_frequency
  bool autotune_alpha = true;
  double initial_alpha = 0.2;
  double target_entropy = 0;           // 0 = -action_size (CleanRL)
  double log_std_min = -5.0;
  double log_std_max = 2.0;
  uint64_t seed = 1;
  std::string device = "auto";

  std::string ToJson() const;
  static HeatSacConfig FromJson(const std::string& json);  // throws std::invalid_argument
};

struct ContinuousTransition {
  std::vector<float> observation;
  std::vector<float> action;  // in [-1, 1]
  float reward = 0;
  std::vector<float> next_observation;
  bool done = false;
};

// A ring of continuous-action transitions with uniform sampling.
class ContinuousReplay {
 public:
  explicit ContinuousReplay(size_t capacity);
  void Add(ContinuousTransition t);
  size_t size() const { return items_.size(); }
  size_t capacity() const { return capacity_; }
  std::vector<const ContinuousTransition*> Sample(size_t batch, std::mt19937_64& rng) const;

 private:
  size_t capacity_;
  size_t next_ = 0;
  std::vector<ContinuousTransition> items_;
};

class HeatWeightAgent {
 public:
  explicit HeatWeightAgent(HeatSacConfig config);  // throws std::invalid_argument
  ~HeatWeightAgent();
  HeatWeightAgent(HeatWeightAgent&&) noexcept;
  HeatWeightAgent& operator=(HeatWeightAgent&&) noexcept;

  const HeatSacConfig& config() const { return config_; }
  std::string device_name() const;

  // tanh(mean) when deterministic, else tanh(mean + std * N(0, 1)) drawn with `rng`.
  std::vector<float> Act(const float* observation, bool deterministic, std::mt19937_64& rng) const;
  double alpha() const;

  // TrainStats.loss is the critics' loss.
  TrainStats Update(const ContinuousReplay& replay, std::mt19937_64& rng);
  TrainStats Update(const std::vector<const ContinuousTransition*>& batch);
  uint64_t updates() const { return updates_; }

  std::string SerializeWeights() const;        // actor only
  void LoadWeights(const std::string& blob);   // throws std::runtime_error; then changes nothing
  // Networks, optimisers, log alpha, the update noise's generator, the
  // counters and the config; LoadState throws std::runtime_error and then
  // changes nothing.
  std::string SaveState() const;
  void LoadState(const std::string& bytes);
  // The state in an agent checkpoint file (WriteAgentCheckpoint).
  void SaveCheckpoint(const std::string& path) const;
  void LoadCheckpoint(const std::string& path);

 private:
  struct Impl;
  HeatSacConfig config_;
  std::unique_ptr<Impl> impl_;
  uint64_t updates_ = 0;
};

struct HeatTrainingOptions {
  int episodes = 200;
  int random_episodes = 10;      // uniform random actions first (CleanRL learning_starts)
  int updates_per_step = 1;      // gradient updates per env step once learning starts
  size_t learning_starts = 128;  // transitions in replay before the first update
  size_t replay_capacity = 100000;
};

struct HeatTrainingResult {
  std::vector<double> returns;     // per training episode (stochastic actions)
  double best_return = 0;          // over training and a final greedy episode
  EpisodeSummary best;             // the plan of best_return
  EpisodeSummary greedy;           // a deterministic episode after training
  double greedy_return = 0;
  uint64_t updates = 0;
  double seconds = 0;
};

// Trains `agent` on `env` for options.episodes episodes.
HeatTrainingResult TrainHeatWeightAgent(HeatWeightEnv& env, HeatWeightAgent& agent,
                                        const HeatTrainingOptions& options, std::mt19937_64& rng);

// One step of `env` from `obs` with the action `a`, its transition added to
// `replay` (training does this, and tests that fill a replay as it does);
// returns the next observation.
HeatObservation StepIntoReplay(HeatWeightEnv& env, const HeatObservation& obs, const std::vector<float>& a,
                               ContinuousReplay& replay);

// Runs the agent's deterministic policy through one episode.
EpisodeSummary RunHeatWeightAgent(HeatWeightEnv& env, const HeatWeightAgent& agent,
                                  double* episode_return = nullptr);

struct HeatComparison {
  EpisodeSummary agent;       // the agent's deterministic plan
  EpisodeSummary algorithm1;  // DeepTM Algorithm 1 on the same env
  double agent_return = 0;
  double algorithm1_return = 0;
  // Algorithm 1's modelled iteration time over the agent's (> 1: the agent is faster).
  double speedup = 0;
  std::string ToJson() const;
};

// The agent's deterministic plan against Algorithm 1's on the same workload
// and DRAM limit (both through `env`, both scored by EvaluatePlan).
HeatComparison CompareWithAlgorithm1(HeatWeightEnv& env, const HeatWeightAgent& agent);

}  // namespace tensortier
