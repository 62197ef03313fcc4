#include "learner/evaluator.h"

#include <exception>
#include <utility>

#include "common/log.h"

namespace tensortier {
namespace {
struct EvaluationCancelled {};
}  // namespace

Evaluator::Evaluator(const Workload& workload, const EnvConfig& env, std::string agent_name,
                     std::string agent_json, std::optional<double> best_reward, OnNewBest on_new_best)
    : workload_(workload),
      env_config_(env),
      agent_name_(std::move(agent_name)),
      agent_json_(std::move(agent_json)),
      on_new_best_(std::move(on_new_best)),
      best_reward_(best_reward) {}

Evaluator::~Evaluator() { Stop(); }

void Evaluator::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Evaluator::Stop() {
  if (!thread_.joinable()) return;
  cancel_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  request_cv_.notify_all();
  thread_.join();
}

std::optional<uint64_t> Evaluator::Submit(Request req) {
  std::optional<uint64_t> replaced;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_) replaced = queued_->episode;
    queued_ = std::move(req);
  }
  request_cv_.notify_one();
  return replaced;
}

std::vector<Evaluator::Outcome> Evaluator::TakeFinished() {
  std::vector<Outcome> done;
  std::lock_guard<std::mutex> lock(mu_);
  done.swap(done_);
  return done;
}

bool Evaluator::WaitWhileBusy(std::chrono::milliseconds tick) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool idle = !queued_ && !busy_;
  if (!idle && done_.empty()) done_cv_.wait_for(lock, tick);
  return idle;
}

void Evaluator::Loop() {
  for (;;) {
    Request req;
    {
      std::unique_lock<std::mutex> lock(mu_);
      request_cv_.wait(lock, [&] { return stop_ || queued_.has_value(); });
      if (stop_) return;
      req = std::move(*queued_);
      queued_.reset();
      busy_ = true;
    }
    Outcome out;
    out.weights_version = req.weights_version;
    out.updates = req.updates;
    out.episode = req.episode;
    out.weights = req.weights;
    out.started = std::chrono::steady_clock::now();
    try {
      if (!agent_) agent_ = MakeAgent(agent_name_, agent_json_);
      if (!env_) env_ = std::make_unique<PlacementEnv>(workload_, env_config_);
      agent_->LoadWeights(req.weights);
      if (before_each_) before_each_();
      out.summary = RunEpisode(*env_, [&](const Observation& o) {
        if (cancel_.load(std::memory_order_relaxed)) throw EvaluationCancelled{};
        return agent_->Greedy(o.data());
      });
      out.summary.plan.produced_by = agent_->name() + "-greedy v" + std::to_string(req.weights_version);
      out.ok = true;
      const double reward = out.summary.step_reward_sum + out.summary.episodic_reward;
      if (!best_reward_ || reward > *best_reward_) {
        best_reward_ = reward;
        if (on_new_best_) on_new_best_(*agent_, out.summary);
      }
    } catch (const EvaluationCancelled&) {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      return;
    } catch (const std::exception& e) {
      LogError("evaluation_failed").kv("episode", req.episode).kv("weights_version", req.weights_version)
          .kv("detail", e.what());
    } catch (...) {
      LogError("evaluation_failed").kv("episode", req.episode).kv("weights_version", req.weights_version)
          .kv("detail", "unknown exception");
    }
    out.finished = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(out));
      busy_ = false;
    }
    done_cv_.notify_all();
  }
}

}  // namespace tensortier
