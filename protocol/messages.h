// The messages of the learner <-> worker protocol as plain C++ values. The
// wire form is protocol/tensortier.capnp; codec.h converts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/transition.h"
#include "envs/workload.h"

namespace tensortier {

constexpr uint16_t kProtocolVersion = 1;

struct TierCapacity {
  Tier tier = Tier::kDram;
  uint64_t capacity_bytes = 0;
};

struct RegisterMsg {
  std::string host;
  uint32_t pid = 0;
  std::string worker_name;
  std::vector<TierCapacity> tiers;
  std::string slow_tier_backend;
  uint64_t incarnation = 0;  // random per worker process, kept across reconnects; 0 = unknown
};

struct RegisterAckMsg {
  uint32_t worker_id = 0;
  uint32_t heartbeat_interval_ms = 1000;
  uint32_t heartbeat_liveness = 3;
};

struct HeartbeatMsg {
  uint32_t worker_id = 0;
  uint64_t episodes_done = 0;
  std::vector<uint64_t> acked_episodes;  // learner -> worker: episodes fully ingested
};

struct ExplorationSettings {
  double epsilon = 0.1;
  double epsilon_start = 0.9;
  double epsilon_end = 0.0;
  uint32_t schedule_episodes = 0;  // 0: fixed epsilon
  uint64_t seed = 1;
};

struct TaskMsg {
  uint64_t task_id = 0;
  Workload workload;
  EnvConfig env;
  ExplorationSettings exploration;
  std::string agent = "dqn";
  std::string agent_config_json;
};

struct WeightsMsg {
  uint64_t version = 0;
  std::string agent;
  std::string blob;
};

struct TransitionBatchMsg {
  uint32_t worker_id = 0;
  uint64_t task_id = 0;
  uint64_t episode_id = 0;
  uint64_t policy_version = 0;
  std::vector<Transition> transitions;
  std::vector<float> priorities;  // one per transition or empty
  // An episode longer than kMaxTransitionsPerBatch is sent as several
  // batches (tensortier.capnp); chunk_count 0 or 1 = the whole episode.
  uint32_t chunk_index = 0;
  uint32_t chunk_count = 1;
};

// Transitions per TransitionBatch frame: about 10 MB of frame, well under
// the transport's 64 MiB limit (an episode of a large model under a
// DRAM-first policy has up to millions of decisions).
constexpr size_t kMaxTransitionsPerBatch = 65536;
// Chunks one episode may span (kMaxTransitionsPerBatch * this transitions).
constexpr uint32_t kMaxBatchChunks = 4096;

// The episode's transitions as batches of at most `per_batch` transitions
// (one batch, possibly empty, for a short episode), numbered as chunks.
std::vector<TransitionBatchMsg> SplitIntoChunks(TransitionBatchMsg batch, size_t per_batch = kMaxTransitionsPerBatch);

struct MemoryCounters {
  uint64_t dram_peak_bytes = 0;
  uint64_t slow_peak_bytes = 0;
  uint64_t bytes_to_slow = 0;
  uint64_t bytes_to_dram = 0;
  uint32_t migrations_to_slow = 0;
  uint32_t migrations_to_dram = 0;
  uint32_t oom_events = 0;
  // Measured on real iterations only.
  bool measured = false;
  double runtime_spread = 0;
  uint32_t repeats = 0;
  int64_t minor_faults = 0;
  int64_t major_faults = 0;
  double exposed_migration_ns = 0;
  double emulated_delay_ns = 0;
  bool hardware_counters = false;  // false: the three below are unavailable, not zero
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  uint64_t llc_misses = 0;
};

struct EpisodeReportMsg {
  uint32_t worker_id = 0;
  uint64_t task_id = 0;
  uint64_t episode_id = 0;
  uint64_t policy_version = 0;
  uint32_t steps = 0;
  double step_reward_sum = 0;
  double episodic_reward = 0;
  double runtime_ns = 0;
  double normalised_cost = 0;
  bool oom = false;
  double epsilon = 0;
  MemoryCounters counters;
  std::string backend;
  PlacementPlan plan;
  bool greedy = false;
  bool measurement_cached = false;  // taken from the learner's measurement cache, not executed
  double min_runtime_ns = 0;        // the reference runtimes the reward was normalised with
  double max_runtime_ns = 0;
};

enum class ErrorCode : uint16_t {
  kMalformed = 1,
  kOversized = 2,
  kWrongVersion = 3,
  kUnknownWorker = 4,
  kUnexpected = 5,
  kInternal = 6,
  kTaskRefused = 7,  // worker -> learner: it cannot run the task (the reason says why)
};

struct ErrorMsg {
  ErrorCode code = ErrorCode::kMalformed;
  std::string reason;
};

struct ShutdownMsg {
  std::string reason;
};

struct CachedMeasurement {
  uint64_t plan_hash = 0;
  std::string backend;
  double runtime_ns = 0;
  double min_runtime_ns = 0;
  double max_runtime_ns = 0;
  bool oom = false;
  MemoryCounters counters;
};

// Learner -> workers: measured runtimes keyed by (workload, DRAM limit,
// plan hash, backend), so that no plan is executed twice on one backend.
struct MeasurementCacheMsg {
  uint64_t workload_signature = 0;
  uint64_t dram_limit_bytes = 0;
  std::vector<CachedMeasurement> entries;
};

using Message = std::variant<RegisterMsg, RegisterAckMsg, HeartbeatMsg, TaskMsg, WeightsMsg,
                             TransitionBatchMsg, EpisodeReportMsg, ErrorMsg, ShutdownMsg, MeasurementCacheMsg>;

const char* MessageName(const Message& m);

}  // namespace tensortier
