// A worker's Prometheus metrics: its evaluations (iteration times measured
// on real tiers, bytes per tier, migrations, OOM and limit events, page
// faults), its connection to the learner, and flow control. Which worker it
// is comes from the scrape target (instance, and the file_sd `worker`
// label); labels on the series are low-cardinality only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "envs/placement_env.h"
#include "metrics/served_metrics.h"
#include "worker/plan_evaluator.h"
#include "worker/worker.h"

namespace tensortier {

class WorkerMetrics : public ServedMetrics {
 public:
  // Serves the metrics on `address` (see metrics_server.h) and, when
  // `sd_dir` is set, writes a file_sd target file worker-<name>-<pid>.json
  // there. nullptr when `address` switches metrics off. `backend` is the
  // slow tier the worker registers with (tensortier_worker_info).
  static std::unique_ptr<WorkerMetrics> Start(const std::string& address, const std::string& sd_dir,
                                              const std::string& name, const std::string& backend);
  ~WorkerMetrics();

  // A task was accepted and its evaluator prepared.
  void OnTask(const std::string& workload, const std::string& agent, const std::string& backend,
              uint64_t dram_limit_bytes);
  // An episode ran: `s` from the environment, `m` from the evaluator, which
  // took `evaluation_seconds` of wall time.
  void OnEpisode(const EpisodeSummary& s, const PlanMeasurement& m, double evaluation_seconds);
  // Once per pass of the worker's loop: whether flow control holds the
  // worker back (ready, but too many episodes unacknowledged).
  void FlowControl(bool blocked);
  // Counters and levels, as differences against the previous call.
  void Sync(const WorkerStats& s, bool registered, uint64_t weights_version);

 private:
  WorkerMetrics() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortier
