// `tensortier train`: an in-process learner with N worker processes on
// loopback, ending with the run directory and the comparison of the final
// plan against first-touch and all-DRAM.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "learner/learner.h"
#include "learner/run_report.h"

namespace tensortier {

struct TrainingRunOptions {
  LearnerConfig learner;                 // bind endpoint should be loopback with port 0 or a free port
  int workers = 2;
  std::string worker_executable;         // the tensortier binary
  std::vector<std::string> worker_args;  // extra flags for each worker
  std::string config_toml;               // stored in the run directory
};

struct TrainingRunOutcome {
  LearnerResult result;
  PlacementPlan final_plan;
  std::vector<PolicyScore> comparison;
  int workers_exited_cleanly = 0;
};

TrainingRunOutcome RunTraining(const TrainingRunOptions& options,
                               const std::function<void(const EpisodeRecord&)>& on_episode = {});

}  // namespace tensortier
