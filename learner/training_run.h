// `tensortier train`: an in-process learner with N worker processes on
// loopback, ending with the run directory and the comparison of the final
// plan (and the greedy policy's) against the baselines, first-touch and all-DRAM.
#pragma once

#include <atomic>
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
  // Scored beside the learned plans in the comparison (ComputeBaselines).
  std::vector<BaselinePlan> baselines;
  // Start a Prometheus beside the run (RUN_DIR/prometheus/), scraping the
  // file_sd targets in learner.metrics_sd_dir (metrics/prometheus_server.h).
  bool prometheus = false;
  std::string prometheus_binary = "/usr/bin/prometheus";
  // Called once the learner listens (and Prometheus is ready), with the URL
  // of the learner's metrics and Prometheus's ("" when there is none).
  std::function<void(const std::string& metrics_url, const std::string& prometheus_url)> on_started;
  // Set (to a signal number) by a signal handler: the run stops, stops its
  // workers and writes what it has (cli/interrupt.h). Null: not watched.
  const std::atomic<int>* interrupt = nullptr;
  // Runs the final plan on real iterations once the workers have exited,
  // beside all-DRAM and all-slow (train sets it when its workers run real
  // iterations: the learner layer has no executor). Skipped for a run that was
  // interrupted or failed; unset or throwing, the measurement cache's entry
  // for the final plan stands in (FinalPlanMeasuredInTraining).
  std::function<FinalPlanMeasurement(const Workload&, const PlacementPlan&)> measure_final_plan;
};

struct TrainingRunOutcome {
  LearnerResult result;
  FinalPlanChoice final_plan;
  std::vector<PolicyScore> comparison;
  FinalPlanMeasurement measured;
  int workers_exited_cleanly = 0;
  int interrupted_by = 0;  // the signal that stopped the run early; 0 if none
};

// The plans of `policies` (policies/policy.h names) for the task of
// `workload` under `env`, each solver limited to `solver_seconds`. Throws
// std::invalid_argument for an unknown policy name. `on_policy` is told
// before each (a solve can take a minute).
std::vector<BaselinePlan> ComputeBaselines(const Workload& workload, const EnvConfig& env,
                                           const std::vector<std::string>& policies, double solver_seconds,
                                           const std::function<void(const std::string&)>& on_policy = {});

// Ends when the learner does: its episodes done, converged, out of time,
// interrupted (options.interrupt), or every worker exited with an error
// (result.failure then says how each ended and the last error line of its
// log). The run directory is written however it ended.
TrainingRunOutcome RunTraining(const TrainingRunOptions& options,
                               const std::function<void(const EpisodeRecord&)>& on_episode = {});

}  // namespace tensortier
