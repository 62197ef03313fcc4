// The learner: accepts any number of workers on a ROUTER socket, hands each
// a task, ingests their transitions into replay, trains the agent, and
// publishes the policy's weights by version. One thread for now; the
// network, ingest and training loops are separate functions so that they
// can move onto their own threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "agents/sac_agent.h"
#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "protocol/messages.h"

namespace tensortier {

struct LearnerConfig {
  std::string bind_endpoint = "tcp://127.0.0.1:5555";
  Workload workload;
  EnvConfig env;
  std::string agent = "dqn";             // "dqn" or "sac"
  DqnConfig dqn;                         // DQN's network and training settings; its seed and
                                         // epsilon schedule also drive the workers' exploration
  SacConfig sac;
  uint64_t episodes = 300;               // stop after this many episode reports
  uint32_t heartbeat_interval_ms = 1000;
  uint32_t heartbeat_liveness = 3;       // missed heartbeats before a worker is dead
  std::string run_dir;                   // where checkpoints and metrics go; "" = nowhere
  uint32_t checkpoint_interval_episodes = 50;
  double max_seconds = 0;                // 0 = no wall-clock limit
  uint32_t eval_interval_episodes = 10;  // greedy evaluation on the cost model; 0 = only at the end
  uint32_t min_workers = 1;              // hand out tasks once this many workers registered
  std::string metrics_address;           // Prometheus endpoint, e.g. 127.0.0.1:0; "" = none (metrics/)
  std::string metrics_sd_dir;            // write a file_sd target file there; "" = none
};

// One row of metrics.csv.
struct EpisodeRecord {
  uint64_t episode = 0;        // order of arrival at the learner
  uint32_t worker_id = 0;
  uint64_t worker_episode = 0;
  uint64_t policy_version = 0;
  uint32_t steps = 0;
  double step_reward_sum = 0;
  double episodic_reward = 0;
  double normalised_cost = 0;
  double runtime_ns = 0;
  bool oom = false;
  double epsilon = 0;
  double loss = 0;             // mean over this episode's updates (0 before learning starts)
  double mean_q = 0;
  double best_runtime_ns = 0;  // best non-OOM plan so far
  double wall_seconds = 0;
  std::string backend;
};

struct LearnerCounters {
  uint64_t frames_received = 0;
  uint64_t malformed_frames = 0;
  uint64_t oversized_frames = 0;
  uint64_t wrong_version_frames = 0;
  uint64_t unknown_worker_frames = 0;
  uint64_t duplicate_batches = 0;
  uint64_t transitions_ingested = 0;
  uint64_t workers_registered = 0;
  uint64_t workers_expired = 0;
  uint64_t heartbeats_received = 0;
  uint64_t unexpected_messages = 0;
  uint64_t worker_errors = 0;           // ErrorMsg frames from workers
};

struct LearnerResult {
  std::string agent;                // "dqn", "sac"
  uint64_t episodes = 0;
  uint64_t updates = 0;
  uint64_t weights_version = 0;
  uint64_t evaluations = 0;
  std::vector<EpisodeRecord> records;
  PlacementPlan best_plan;          // lowest cost-model runtime among reported and evaluated plans
  double best_runtime_ns = 0;
  bool has_best_plan = false;
  PlacementPlan greedy_plan;        // the trained policy, rolled out greedily at the end
  EpisodeSummary greedy_summary;
  LearnerCounters counters;
  double wall_seconds = 0;
  std::vector<uint32_t> workers_seen;
};

class Learner {
 public:
  explicit Learner(LearnerConfig config);
  ~Learner();

  // The endpoint bound (resolves a wildcard port).
  std::string endpoint() const;
  // Where Prometheus scrapes the learner (host:port as bound); "" without metrics.
  std::string metrics_address() const;
  // Serves until config.episodes reports arrived, Stop() is called, or
  // max_seconds pass; then tells workers to shut down and evaluates the
  // greedy policy. `on_episode` is called for every episode report.
  LearnerResult Run(const std::function<void(const EpisodeRecord&)>& on_episode = {});
  void Stop() { stop_.store(true); }

  const PlacementAgent& agent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace tensortier
