// The learner checkpoint's payload (docs/file-formats.md): a LearnerCheckpoint
// message (learner/checkpoint.capnp) composed of every part's section. Each
// part saves and loads its own section; this is the only place that knows
// them all.
#pragma once

#include <string>

#include "agents/agent.h"
#include "learner/fleet_registry.h"
#include "learner/ingest.h"
#include "learner/learner.h"
#include "learner/measurement_cache.h"
#include "learner/scoreboard.h"
#include "learner/trainer.h"
#include "learner/weights_publisher.h"

namespace tensortier {

// The learner's state as a checkpoint holds it. From `result`: episodes,
// evaluations, counters, records and the workers seen.
struct LearnerParts {
  const PlacementAgent& agent;
  WeightsPublisher& weights;
  FleetRegistry& fleet;
  Trainer& trainer;
  Ingest& ingest;
  Scoreboard& scores;
  MeasurementCache& measurements;
  LearnerResult& result;
};

// Under the training lock (or with the trainer stopped), with what the
// trainer inserted already booked by ingest. Saves the agent's own
// checkpoint file into checkpoint_dir as well (checkpoint_sections.h).
std::string SavePayload(const LearnerParts& parts, const LearnerConfig& config, double elapsed_seconds,
                        const std::string& checkpoint_dir);
// Every section but the agent's (the agent is restored from the same
// payload first: ReadAgentSection, RestoreAgent). Returns the seconds the
// run had taken. Throws CheckpointError for a payload that is not a whole
// learner checkpoint, std::invalid_argument for one of another run.
double LoadPayload(const std::string& payload, LearnerParts& parts);

}  // namespace tensortier
