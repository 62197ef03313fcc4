// The learner checkpoint's own sections (format: docs/file-formats.md): the
// header with the agent, the episode records, and finding the newest
// checkpoint a resume can use. The other parts (fleet registry, ingest,
// trainer, measurement cache) save and load their own sections; the learner
// writes them all in the payload's order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "learner/checkpoint_store.h"
#include "learner/learner.h"

namespace tensortier {

// 2: the rate limiter's credit, ratio and recent episode lengths follow
// its counters. 3: episodes partly in replay (Ingest::partly_in_replay) at the end.
// Versions 1 and 2 are still read.
constexpr uint64_t kCheckpointPayloadVersion = 3;

// The payload's first section: its version, the agent and what it was trained on.
struct AgentSection {
  uint64_t payload_version = kCheckpointPayloadVersion;
  std::string agent;             // name
  std::string agent_config_json;
  std::string agent_checkpoint;  // the agent's own checkpoint file, whole
  uint64_t workload_signature = 0;
  uint64_t dram_limit_bytes = 0;
};

// Saves the agent's own checkpoint file where `tensortier export` looks
// (checkpoint_dir/<agent>.ckpt) and embeds its bytes.
void SaveAgentSection(ByteWriter& w, const PlacementAgent& agent, const std::string& checkpoint_dir,
                      uint64_t workload_signature, uint64_t dram_limit_bytes);
// Throws CheckpointError for a payload version this learner does not read.
AgentSection LoadAgentSection(ByteReader& r);
// The section's agent, built from the checkpoint's own settings on the
// config's device, with its networks and optimisers loaded; the config
// takes the checkpoint's network and training settings. Throws
// std::invalid_argument when the checkpoint belongs to another run (agent,
// workload, DRAM limit).
std::unique_ptr<PlacementAgent> RestoreAgent(const AgentSection& section, LearnerConfig& config,
                                             const std::string& checkpoint_dir);

void SaveRecords(ByteWriter& w, const std::vector<EpisodeRecord>& records);
std::vector<EpisodeRecord> LoadRecords(ByteReader& r);

// The newest checkpoint in checkpoint_dir whose file verifies and whose
// agent loads for `config`. Throws when there is none (saying why, if a
// good checkpoint belonged to another run).
struct FoundCheckpoint {
  std::string path;
  std::string payload;
  uint64_t rejected = 0;  // newer ones skipped: corrupt, unreadable or another run's
};
FoundCheckpoint FindCheckpoint(const LearnerConfig& config, const std::string& checkpoint_dir);

}  // namespace tensortier
