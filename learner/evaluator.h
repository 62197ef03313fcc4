// The learner's evaluation thread: greedy rollouts of weight snapshots on
// the cost model, beside the network thread. A rollout of a big workload
// takes seconds (10^5-10^6 decisions), so it runs on a second agent of the
// same kind and config, with no lock held; the network thread only hands
// over serialised weights (Submit) and books what finished (TakeFinished),
// so every LearnerResult field stays the network thread's. At most one
// request waits: a newer one replaces it, since the newest weights are the
// ones worth evaluating when rollouts are slower than the reports.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agents/agent.h"
#include "envs/placement_env.h"
#include "envs/workload.h"

namespace tensortier {

class Evaluator {
 public:
  struct Request {
    std::string weights;            // SerializeWeights()
    uint64_t weights_version = 0;
    uint64_t updates = 0;           // the agent's updates() of those weights
    uint64_t episode = 0;           // the learner's episode count when it was asked for
  };
  struct Outcome {
    uint64_t weights_version = 0, updates = 0, episode = 0;
    bool ok = false;                // false: the evaluation threw (logged)
    EpisodeSummary summary;
    std::string weights;            // the evaluated weights (learner/fastest_policy.h)
    std::chrono::steady_clock::time_point started, finished;
  };
  // Called on the evaluation thread with its own agent when a rollout's
  // reward beats every one before it (the learner saves <agent>-best.ckpt
  // from exactly the evaluated weights).
  using OnNewBest = std::function<void(const PlacementAgent&, const EpisodeSummary&)>;

  // `workload` must outlive the evaluator. `best_reward`: the best so far
  // (a resumed run's checkpoint), or none.
  Evaluator(const Workload& workload, const EnvConfig& env, std::string agent_name, std::string agent_json,
            std::optional<double> best_reward, OnNewBest on_new_best);
  ~Evaluator();  // Stop()
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Runs on the evaluation thread before each rollout, inside its span
  // (LearnerConfig::before_periodic_evaluation). Set before Start().
  void set_before_each(std::function<void()> hook) { before_each_ = std::move(hook); }

  void Start();
  // Abandons what is queued or running and joins. Safe to call twice.
  void Stop();
  bool running() const { return thread_.joinable(); }

  // Queues a request; returns the episode of the one it replaced, if one
  // still waited (a skipped evaluation).
  std::optional<uint64_t> Submit(Request req);
  // The outcomes finished since the last call, in the order asked for.
  std::vector<Outcome> TakeFinished();
  // True when nothing is queued or running; otherwise waits up to `tick`
  // for an outcome (unless one is already there) and returns false.
  bool WaitWhileBusy(std::chrono::milliseconds tick);

 private:
  std::function<void()> before_each_;
  void Loop();

  const Workload& workload_;
  const EnvConfig env_config_;
  const std::string agent_name_, agent_json_;
  OnNewBest on_new_best_;
  // The evaluation thread's own.
  std::unique_ptr<PlacementAgent> agent_;
  std::unique_ptr<PlacementEnv> env_;
  std::optional<double> best_reward_;

  std::thread thread_;
  std::mutex mu_;                         // guards queued_, busy_, stop_, done_
  std::condition_variable request_cv_;    // to the evaluation thread: a request, or stop
  std::condition_variable done_cv_;       // to the network thread: an outcome
  std::optional<Request> queued_;
  bool busy_ = false;                     // a rollout is running
  bool stop_ = false;
  std::vector<Outcome> done_;
  std::atomic<bool> cancel_{false};       // abandon the running rollout
};

}  // namespace tensortier
