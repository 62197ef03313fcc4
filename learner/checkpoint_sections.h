// The learner checkpoint's own sections (learner/checkpoint.capnp,
// docs/file-formats.md): the agent, the counters and the episode records,
// and finding the newest checkpoint a resume can use. The other parts
// (fleet registry, ingest, trainer, scoreboard, measurement cache) save and
// load their own sections; learner/payload.cc composes them all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "learner/checkpoint.capnp.h"
#include "learner/checkpoint_store.h"
#include "learner/learner.h"

namespace tensortier {

// The agent section: the agent and what it was trained on.
struct AgentSection {
  std::string agent;             // name
  std::string agent_config_json;
  std::string agent_checkpoint;  // PlacementAgent::SaveState
  uint64_t workload_signature = 0;
  uint64_t dram_limit_bytes = 0;
};

// Saves the agent's own checkpoint file where `tensortier export` looks
// (checkpoint_dir/<agent>.ckpt) and embeds its state.
void SaveAgentSection(schema::AgentSection::Builder out, const PlacementAgent& agent,
                      const std::string& checkpoint_dir, uint64_t workload_signature, uint64_t dram_limit_bytes);
AgentSection LoadAgentSection(schema::AgentSection::Reader in);
// The agent section of a payload; throws CheckpointError when the payload
// is not a learner checkpoint with one.
AgentSection ReadAgentSection(const std::string& payload);
// The section's agent, built from the checkpoint's own settings on the
// config's device, with its networks and optimisers loaded; the config
// takes the checkpoint's network and training settings. Throws
// std::invalid_argument when the checkpoint belongs to another run (agent,
// workload, DRAM limit).
std::unique_ptr<PlacementAgent> RestoreAgent(const AgentSection& section, LearnerConfig& config,
                                             const std::string& checkpoint_dir);

void SaveCounters(const CheckpointedCounters& counters, schema::Counters::Builder out);
CheckpointedCounters LoadCounters(schema::Counters::Reader in);

void SaveRecords(const std::vector<EpisodeRecord>& records, capnp::List<schema::EpisodeRecord>::Builder out);
std::vector<EpisodeRecord> LoadRecords(capnp::List<schema::EpisodeRecord>::Reader in);

// The newest checkpoint in checkpoint_dir whose file verifies and whose
// agent loads for `config`. Throws when there is none (saying why, if a
// good checkpoint belonged to another run or the newest one is of a format
// this build does not read).
struct FoundCheckpoint {
  std::string path;
  std::string payload;
  uint64_t rejected = 0;  // newer ones skipped: corrupt, unreadable or another run's
};
FoundCheckpoint FindCheckpoint(const LearnerConfig& config, const std::string& checkpoint_dir);

}  // namespace tensortier
