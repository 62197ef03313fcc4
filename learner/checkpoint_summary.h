// `tensortier inspect` for checkpoints: what an agent checkpoint (.ckpt,
// "TTAGNT01") and a learner checkpoint (.ttckpt, "TTCKPT02") hold. The file
// is verified first (common/framed_file.h); a torn, corrupt or foreign file
// throws CheckpointError (or std::runtime_error) naming it and the problem.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/placement_plan.h"
#include "learner/learner.h"

namespace tensortier {

// What `inspect` shows of a learner checkpoint: its agent, run, counters
// and best plan sections (the replay, ledgers and the rest are not read).
struct LearnerCheckpointHead {
  std::string agent;               // "dqn", "sac"
  std::string agent_config_json;
  std::string agent_state;         // the agent's own checkpoint, whole
  uint64_t workload_signature = 0;
  uint64_t dram_limit_bytes = 0;
  uint64_t episodes = 0;
  uint64_t weights_version = 0;
  uint64_t evaluations = 0;
  double seconds = 0;              // the run's wall time at the checkpoint
  CheckpointedCounters counters;
  bool has_best_plan = false;
  PlacementPlan best_plan;
  double best_runtime_ns = 0;      // on the cost model
  std::vector<EpisodeRecord> records;
};

// Throws CheckpointError when the payload is not a learner checkpoint's
// or lacks one of those sections.
LearnerCheckpointHead ReadLearnerCheckpointHead(const std::string& payload);

// Whether `head` (a file's first bytes) starts as an agent or a learner
// checkpoint does.
bool LooksLikeAgentCheckpoint(const std::string& head);
bool LooksLikeLearnerCheckpoint(const std::string& head);

// The summaries `inspect` prints: the agent (family, updates, settings);
// for a learner checkpoint also the run's counters, episodes and best plan.
std::string DescribeAgentCheckpoint(const std::string& path);
std::string DescribeLearnerCheckpoint(const std::string& path);

}  // namespace tensortier
