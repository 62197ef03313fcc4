// The learner's Prometheus metrics. Every child with known labels is made
// at start-up so that series exist (at 0) before the first event; labels are
// low-cardinality only (workload, agent, policy, backend, kind, reason):
// never a worker or a tensor.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "envs/placement_env.h"
#include "envs/workload.h"
#include "learner/learner.h"
#include "metrics/served_metrics.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace tensortier {

class LearnerMetrics : public ServedMetrics {
 public:
  // Serves the metrics on `address` (see metrics_server.h) and, when
  // `sd_dir` is set, writes a file_sd target file learner-<pid>.json there.
  // nullptr when `address` switches metrics off.
  static std::unique_ptr<LearnerMetrics> Start(const std::string& address, const std::string& sd_dir,
                                               const Workload& w, const EnvConfig& env, const std::string& agent,
                                               const std::string& device, uint64_t replay_capacity);
  ~LearnerMetrics();

  // An episode report, after training on it (rec.loss, rec.best_runtime_ns set).
  void OnEpisode(const EpisodeRecord& rec);
  // A greedy rollout of the policy on the cost model.
  void OnEvaluation(const EpisodeSummary& s);
  // Counters and levels, as differences against the previous call. Cheap:
  // call it once per pass of the learner's loop.
  void Sync(const LearnerCounters& c, size_t workers_connected, size_t replay_size, uint64_t policy_version,
            uint64_t updates);

 private:
  LearnerMetrics() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortier
