// A worker: connects to the learner, registers, receives a task and the
// policy's weights, and runs episodes with the current policy, streaming
// each episode's transitions and an episode report back. Paranoid Pirate
// liveness: it heartbeats while connected, and when the learner has been
// silent for `liveness` intervals it reconnects with exponential backoff
// and registers again. Each episode is kept until the learner acknowledges
// it, and resent after a timeout or a re-registration: the learner ingests
// each (worker incarnation, episode) once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "transport/security.h"
#include "worker/plan_evaluator.h"

namespace tensortier {

struct WorkerConfig {
  std::string learner_endpoint = "tcp://127.0.0.1:5555";
  std::string name;                        // defaults to host:pid
  uint64_t max_episodes = 0;               // 0 = until the learner says stop
  uint32_t reconnect_initial_ms = 250;
  uint32_t reconnect_max_ms = 8000;
  double give_up_seconds = 0;              // 0 = keep trying to reach a learner forever
  // Makes the evaluator for tasks whose workload names a model (real
  // iterations); null = the cost model for every task.
  std::function<std::unique_ptr<PlanEvaluator>()> make_real_evaluator;
  std::string registered_backend;          // what the worker tells the learner it has
  std::string metrics_address;             // Prometheus endpoint, e.g. 127.0.0.1:0; "" = none (metrics/)
  std::string metrics_sd_dir;              // write a file_sd target file there; "" = none
  TransportSecurity security;              // CURVE keys, or plain text (docs/security.md)
};

struct WorkerStats {
  uint64_t episodes = 0;
  uint64_t transitions_sent = 0;
  uint64_t reconnects = 0;
  uint64_t weights_loaded = 0;
  uint64_t errors_from_learner = 0;
  uint64_t bad_frames = 0;
  uint64_t heartbeats_sent = 0;
  uint64_t heartbeats_received = 0;
  uint64_t episodes_failed = 0;
  uint64_t tasks_refused = 0;
  uint64_t episodes_acked = 0;     // acknowledged by the learner
  uint64_t episodes_resent = 0;    // sent again: unacknowledged after a timeout or a re-registration
  uint64_t registrations = 0;      // RegisterAcks received (1 + re-registrations)
  uint64_t measurements_cached = 0;    // real measurements taken from the learner's cache
  uint64_t measurements_executed = 0;  // real measurements run here
  bool shutdown_by_learner = false;
};

class Worker {
 public:
  // `evaluator` scores plans until a task says otherwise (see make_real_evaluator).
  Worker(WorkerConfig config, std::unique_ptr<PlanEvaluator> evaluator);
  ~Worker();

  WorkerStats Run();
  void Stop() { stop_.store(true); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace tensortier
