// In-process fleets for the learner's integration tests: a learner serving
// on a thread and workers on threads, scored by the cost model.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "envs/workload_spec.h"
#include "learner/learner.h"
#include "protocol/codec.h"
#include "tests/common/receive.h"
#include "transport/channel.h"
#include "worker/plan_evaluator.h"
#include "worker/worker.h"

namespace tensortier::testing {

// A learner on loopback for `episodes` episodes of the tiny workload, with a
// small DQN; the rest is the library's.
inline LearnerConfig LoopbackLearner(uint64_t episodes) {
  LearnerConfig c;
  c.bind_endpoint = "tcp://127.0.0.1:*";
  c.workload = LoadWorkloadSpec("synthetic:tiny:3:65536");
  c.env.dram_limit_bytes = c.workload.peak_live_bytes() / 3;
  c.episodes = episodes;
  c.heartbeat_interval_ms = 100;
  c.dqn.hidden = {32, 32};
  return c;
}

// For tests of what the learner serves and refuses rather than of what it
// learns: it starts updating after a few transitions, and updates little.
inline LearnerConfig QuickLearner(uint64_t episodes) {
  LearnerConfig c = LoopbackLearner(episodes);
  c.dqn.learning_starts = 16;
  c.dqn.updates_per_episode = 4;
  return c;
}

inline LearnerConfig TinyLearner(uint64_t episodes) {
  LearnerConfig c = LoopbackLearner(episodes);
  c.dqn.learning_starts = 64;
  c.dqn.batch_size = 16;
  c.dqn.updates_per_episode = 8;
  c.dqn.device = "cpu";
  c.sac.hidden = {32, 32};
  c.sac.learning_starts = 64;
  c.sac.batch_size = 16;
  c.sac.updates_per_episode = 8;
  c.sac.device = "cpu";
  c.eval_interval_episodes = 5;
  return c;
}

// Workers on threads against `endpoint`; Stop() them once the learner is done
// (its Shutdown may be lost on a faulty link).
class WorkerThreads {
 public:
  WorkerThreads(const std::string& endpoint, int count) {
    for (int i = 0; i < count; ++i) {
      WorkerConfig wc;
      wc.learner_endpoint = endpoint;
      wc.name = "w" + std::to_string(i + 1);
      wc.give_up_seconds = 60;
      wc.reconnect_initial_ms = 50;
      wc.reconnect_max_ms = 400;
      workers_.push_back(std::make_unique<Worker>(wc, std::make_unique<CostModelEvaluator>()));
      stats_.emplace_back();
    }
    for (size_t i = 0; i < workers_.size(); ++i)
      threads_.emplace_back([this, i] { stats_[i] = workers_[i]->Run(); });
  }
  ~WorkerThreads() { StopAndJoin(); }
  const std::vector<WorkerStats>& StopAndJoin() {
    for (auto& w : workers_) w->Stop();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    return stats_;
  }

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<WorkerStats> stats_;
  std::vector<std::thread> threads_;
};

// For tests that speak the protocol by hand: registers `client` as worker
// `name` (host "h", pid 1, the cost model as its slow tier); its worker id,
// 0 when the learner did not answer within `timeout`.
inline uint32_t RegisterByHand(FleetClient& client, const std::string& name, uint64_t incarnation = 0,
                               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  RegisterMsg reg{"h", 1, name, {}, "cost-model"};
  reg.incarnation = incarnation;
  client.Send(EncodeMessage(reg));
  const auto ack = ReceiveA<RegisterAckMsg>(client, timeout);
  return ack ? ack->worker_id : 0;
}

// The report that ends episode `episode_id` of a hand-driven worker, as out
// of memory: the learner takes the episode in without a plan to score.
inline std::string OomReport(uint32_t worker_id, uint64_t episode_id) {
  EpisodeReportMsg r;
  r.worker_id = worker_id;
  r.episode_id = episode_id;
  r.oom = true;
  return EncodeMessage(r);
}

// A learner serving on a thread of its own, for tests that play the fleet
// by hand. `result` is what Run() returned once Wait() has; a test that ends
// before (a failed ASSERT) stops the learner rather than leave the thread
// running.
class ServingLearner {
 public:
  explicit ServingLearner(const LearnerConfig& config) : learner(config), serve_([this] { result = learner.Run(); }) {}
  ~ServingLearner() {
    if (!serve_.joinable()) return;
    learner.Stop();
    serve_.join();
  }
  ServingLearner(const ServingLearner&) = delete;
  ServingLearner& operator=(const ServingLearner&) = delete;

  const LearnerResult& Wait() {
    serve_.join();
    return result;
  }

  Learner learner;
  LearnerResult result;

 private:
  std::thread serve_;
};

// Runs `learner` to the end with `workers` worker threads.
inline LearnerResult RunFleet(Learner& learner, int workers, std::vector<WorkerStats>* stats = nullptr) {
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });
  WorkerThreads fleet(learner.endpoint(), workers);
  serve.join();
  const auto& s = fleet.StopAndJoin();
  if (stats) *stats = s;
  return result;
}

}  // namespace tensortier::testing
