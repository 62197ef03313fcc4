#include "worker/worker.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "agents/agent.h"
#include "common/log.h"
#include "worker/worker_metrics.h"
#include "protocol/codec.h"
#include "transport/channel.h"
#include "worker/exploration.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

// Random per process and never 0: the learner's key for this worker's
// episodes across reconnects and learner restarts.
uint64_t NewIncarnation() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
  return v;
}

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Runs jobs one after another on one thread. Evaluations run here so that
// the worker's loop keeps heartbeating while a long one (profiling, real
// iterations) is under way, and so that every evaluation of a task runs on
// the same thread (LibTorch's profiler callbacks are thread-local).
class EvalThread {
 public:
  EvalThread() : thread_([this] { Loop(); }) {}
  ~EvalThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::future<void> Submit(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(task));
    }
    cv_.notify_one();
    return done;
  }

 private:
  void Loop() {
    for (;;) {
      std::packaged_task<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

struct Worker::Impl {
  Impl(WorkerConfig c, std::unique_ptr<PlanEvaluator> e)
      : config(std::move(c)), evaluator(std::move(e)), client(config.learner_endpoint, config.security) {
    if (config.name.empty()) config.name = HostName() + ":" + std::to_string(::getpid());
    metrics = WorkerMetrics::Start(config.metrics_address, config.metrics_sd_dir, config.name,
                                   config.registered_backend.empty() ? evaluator->backend() : config.registered_backend);
  }

  WorkerConfig config;
  std::unique_ptr<PlanEvaluator> evaluator;
  FleetClient client;
  WorkerStats stats;

  uint32_t worker_id = 0;
  uint32_t heartbeat_interval_ms = 1000;
  uint32_t heartbeat_liveness = 3;
  std::unique_ptr<TaskMsg> task;
  std::unique_ptr<PlacementEnv> env;
  std::unique_ptr<PlacementAgent> agent;
  uint64_t weights_version = 0;
  std::unique_ptr<WeightsMsg> pending_weights;  // newest received, loaded before the next episode
  std::unique_ptr<TaskMsg> pending_task;        // accepted between episodes, not while busy
  bool shutdown_requested = false;
  EvalThread eval_thread;
  const uint64_t incarnation = NewIncarnation();
  // Episodes the learner has not acknowledged yet, resent after a timeout
  // and after every (re-)registration until it does.
  struct Unacked {
    std::vector<TransitionBatchMsg> batches;  // the episode, in chunks (SplitIntoChunks)
    EpisodeReportMsg report;
    Clock::time_point sent;
  };
  std::map<uint64_t, Unacked> unacked;
  // The learner's measurements by (workload signature, DRAM limit, plan hash, backend).
  std::map<std::tuple<uint64_t, uint64_t, uint64_t, std::string>, CachedMeasurement> measurement_cache;
  Clock::time_point last_register = Clock::now();
  std::mt19937_64 rng;
  Clock::time_point last_heard = Clock::now();    // liveness timer (reset on reconnect too)
  Clock::time_point last_contact = Clock::now();  // last frame from a learner
  Clock::time_point last_sent = Clock::now();
  std::unique_ptr<WorkerMetrics> metrics;  // null without --metrics-address

  void Register() {
    RegisterMsg reg;
    reg.host = HostName();
    reg.pid = static_cast<uint32_t>(::getpid());
    reg.worker_name = config.name;
    reg.slow_tier_backend = config.registered_backend.empty() ? evaluator->backend() : config.registered_backend;
    reg.incarnation = incarnation;
    client.Send(EncodeMessage(reg));
    last_sent = last_register = Clock::now();
  }

  bool ready() const { return worker_id != 0 && env && agent && (weights_version > 0 || pending_weights); }
  // Flow control: a worker runs at most `kMaxUnacked` episodes ahead of what
  // the learner has ingested, so experience is never produced by a policy
  // many versions old and a slow learner is not buried in frames.
  static constexpr size_t kMaxUnacked = 2;
  bool may_run() const { return ready() && unacked.size() < kMaxUnacked; }

  void SendEpisode(Unacked& e) {
    // The id may have changed if we re-registered meanwhile.
    e.report.worker_id = worker_id;
    for (TransitionBatchMsg& chunk : e.batches) {
      chunk.worker_id = worker_id;
      client.Send(EncodeMessage(chunk));
    }
    client.Send(EncodeMessage(e.report));
    e.sent = last_sent = Clock::now();
  }

  // Resends what the learner has not acknowledged within two heartbeat
  // intervals (a frame or its ack was lost), or everything (`all`) after
  // registering again.
  void ResendUnacked(bool all) {
    if (worker_id == 0) return;
    const auto timeout = std::chrono::milliseconds(2 * heartbeat_interval_ms);
    for (auto& [episode, e] : unacked) {
      if (!all && Clock::now() - e.sent < timeout) continue;
      SendEpisode(e);
      ++stats.episodes_resent;
      LogDebug("episode_resent").kv("episode", episode).kv("worker", worker_id);
    }
  }

  // Runs `job` on the evaluation thread while this thread keeps the
  // connection alive; rethrows what the job threw.
  void Busy(std::function<void()> job) {
    std::future<void> done = eval_thread.Submit(std::move(job));
    while (done.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) Pump(std::chrono::milliseconds(20));
    done.get();
  }

  // Handles what arrived within `wait` and heartbeats when due.
  void Pump(std::chrono::milliseconds wait) {
    while (auto in = client.Receive(wait)) {
      Handle(in->frame);
      wait = std::chrono::milliseconds(0);
    }
    const auto interval = std::chrono::milliseconds(heartbeat_interval_ms);
    if (worker_id != 0 && Clock::now() - last_sent > interval) {
      client.Send(EncodeMessage(HeartbeatMsg{worker_id, stats.episodes, {}}));
      ++stats.heartbeats_sent;
      last_sent = Clock::now();
    }
    ResendUnacked(false);
    // Registered but still without a task or weights (a frame was lost on
    // the way, or the learner waits for more workers): ask again now and then.
    if (!ready() && !pending_task && Clock::now() - last_register > interval * (2 * heartbeat_liveness)) Register();
  }

  void Handle(const std::string& frame) {
    DecodeResult decoded = DecodeMessage(frame.data(), frame.size());
    if (auto* err = std::get_if<DecodeError>(&decoded)) {
      ++stats.bad_frames;
      LogWarn("bad_frame").kv("reason", DecodeErrorReasonName(err->reason)).kv("detail", err->detail);
      return;
    }
    last_heard = last_contact = Clock::now();
    Message& msg = std::get<Message>(decoded);
    if (auto* hb = std::get_if<HeartbeatMsg>(&msg)) {
      for (uint64_t episode : hb->acked_episodes) stats.episodes_acked += unacked.erase(episode);
      ++stats.heartbeats_received;
    } else if (auto* ack = std::get_if<RegisterAckMsg>(&msg)) {
      worker_id = ack->worker_id;
      heartbeat_interval_ms = std::max<uint32_t>(ack->heartbeat_interval_ms, 10);
      heartbeat_liveness = std::max<uint32_t>(ack->heartbeat_liveness, 1);
      // A learner restarted from a checkpoint may publish versions below the
      // one loaded here: take whatever it sends next.
      weights_version = 0;
      ++stats.registrations;
      LogInfo("registered").kv("worker", worker_id).kv("learner", config.learner_endpoint)
          .kv("incarnation", incarnation).kv("unacked_episodes", unacked.size());
      ResendUnacked(true);
    } else if (auto* t = std::get_if<TaskMsg>(&msg)) {
      pending_task = std::make_unique<TaskMsg>(std::move(*t));
    } else if (auto* w = std::get_if<WeightsMsg>(&msg)) {
      if (!pending_weights || w->version > pending_weights->version)
        pending_weights = std::make_unique<WeightsMsg>(std::move(*w));
    } else if (auto* e = std::get_if<ErrorMsg>(&msg)) {
      ++stats.errors_from_learner;
      LogWarn("learner_error").kv("code", static_cast<int>(e->code)).kv("reason", e->reason);
      // Throttled: a lossy link can answer a burst of frames with a burst of these.
      if (e->code == ErrorCode::kUnknownWorker &&
          Clock::now() - last_register > std::chrono::milliseconds(heartbeat_interval_ms)) {
        worker_id = 0;
        Register();
      }
    } else if (auto* mc = std::get_if<MeasurementCacheMsg>(&msg)) {
      for (CachedMeasurement& e : mc->entries) {
        auto key = std::make_tuple(mc->workload_signature, mc->dram_limit_bytes, e.plan_hash, e.backend);
        measurement_cache[key] = std::move(e);
      }
    } else if (auto* s = std::get_if<ShutdownMsg>(&msg)) {
      LogInfo("shutdown").kv("reason", s->reason);
      stats.shutdown_by_learner = true;
      shutdown_requested = true;
    }
  }

  void AcceptTask(TaskMsg t) {
    // The same task again (after a re-registration): keep what was prepared,
    // but take the exploration it names (Ape-X epsilons are per worker).
    if (task && task->task_id == t.task_id && task->workload.Signature() == t.workload.Signature()) {
      task->exploration = t.exploration;
      return;
    }
    try {
      // Workers act on the CPU; the learner trains where it can.
      std::unique_ptr<PlacementAgent> task_agent = MakeAgent(t.agent, t.agent_config_json, "cpu");
      task = std::make_unique<TaskMsg>(std::move(t));
      // Building the environment precomputes every decision: most of a
      // second for the largest models, so the connection is kept alive.
      // Built into a local: Pump reads `env` (ready()) on this thread meanwhile.
      std::unique_ptr<PlacementEnv> built;
      Busy([&] { built = std::make_unique<PlacementEnv>(task->workload, task->env); });
      env = std::move(built);
      agent = std::move(task_agent);
      // A workload profiled from a real model runs real iterations where
      // this worker can; a synthetic one is scored by the cost model.
      evaluator = config.make_real_evaluator && !task->workload.model.empty() ? config.make_real_evaluator()
                                                                              : std::make_unique<CostModelEvaluator>();
      Busy([&] { evaluator->Prepare(task->workload, task->env); });
      if (metrics) metrics->OnTask(task->workload.name, task->agent, evaluator->backend(), task->env.dram_limit_bytes);
      rng.seed(task->exploration.seed * 1000003ull + worker_id);
      weights_version = 0;
      LogInfo("task").kv("task", task->task_id).kv("workload", task->workload.name)
          .kv("dram_limit_bytes", task->env.dram_limit_bytes).kv("max_steps", env->max_steps());
    } catch (const std::exception& e) {
      task.reset();
      env.reset();
      agent.reset();
      ++stats.tasks_refused;
      LogError("bad_task").kv("detail", e.what());
      client.Send(EncodeMessage(ErrorMsg{ErrorCode::kTaskRefused, std::string("task refused: ") + e.what()}));
    }
  }

  void LoadPendingWeights() {
    if (!pending_weights) return;
    std::unique_ptr<WeightsMsg> w = std::move(pending_weights);
    if (!agent || w->version <= weights_version) return;
    try {
      agent->LoadWeights(w->blob);
      weights_version = w->version;
      ++stats.weights_loaded;
    } catch (const std::exception& e) {
      LogError("bad_weights").kv("version", w->version).kv("detail", e.what());
    }
  }

  void RunEpisode() {
    const uint64_t episode_id = ++stats.episodes;
    const double epsilon = ScheduledEpsilon(task->exploration, weights_version);
    TransitionBatchMsg batch;
    batch.worker_id = worker_id;
    batch.task_id = task->task_id;
    batch.episode_id = episode_id;
    batch.policy_version = weights_version;
    batch.transitions.reserve(std::min<size_t>(env->max_steps(), kMaxTransitionsPerBatch));
    Observation obs = env->Reset();
    // Long episodes (a large model under a DRAM-leaning policy: 10^5-10^6
    // steps, seconds) must not silence the heartbeats: the connection is
    // serviced every few thousand steps. Weights and tasks that arrive are
    // only applied between episodes.
    auto last_pump = Clock::now();
    while (!env->done()) {
      if ((batch.transitions.size() & 4095) == 4095 && Clock::now() - last_pump > std::chrono::milliseconds(20)) {
        Pump(std::chrono::milliseconds(0));
        last_pump = Clock::now();
      }
      int action = agent->Act(obs.data(), epsilon, rng);
      StepResult r = env->Step(action);
      batch.transitions.push_back(TransitionOf(obs, action, r));
      obs = r.observation;
    }
    const EpisodeSummary& s = env->summary();
    PlanMeasurement measured;
    const auto evaluation_start = Clock::now();
    // An identical plan already measured on this kind of tier is not run again.
    bool cached = false;
    if (evaluator->NextMeasureIsReal()) {
      auto hit = measurement_cache.find(
          std::make_tuple(task->workload.Signature(), task->env.dram_limit_bytes, s.plan.Hash(), evaluator->backend()));
      if (hit != measurement_cache.end()) {
        const CachedMeasurement& c = hit->second;
        measured.backend = c.backend;
        measured.runtime_ns = c.runtime_ns;
        measured.min_runtime_ns = c.min_runtime_ns;
        measured.max_runtime_ns = c.max_runtime_ns;
        measured.oom = c.oom;
        measured.counters = c.counters;
        evaluator->SkipMeasure();
        cached = true;
        ++stats.measurements_cached;
      }
    }
    if (!cached) {
      Busy([&] { measured = evaluator->Measure(task->workload, s.plan); });
      if (measured.counters.measured) ++stats.measurements_executed;
    }
    if (metrics)
      metrics->OnEpisode(s, measured, std::chrono::duration<double>(Clock::now() - evaluation_start).count());
    double episodic = s.episodic_reward;
    if (measured.counters.measured && !s.oom && !measured.oom && !batch.transitions.empty()) {
      episodic = env->RescoreWithRuntime(measured.runtime_ns, measured.min_runtime_ns, measured.max_runtime_ns);
      batch.transitions.back().reward += static_cast<float>(episodic - s.episodic_reward);
    }
    stats.transitions_sent += batch.transitions.size();

    EpisodeReportMsg report;
    report.worker_id = worker_id;  // read after the evaluation, like the batch's
    report.task_id = task->task_id;
    report.episode_id = episode_id;
    report.policy_version = weights_version;
    report.steps = s.steps;
    report.step_reward_sum = s.step_reward_sum;
    report.episodic_reward = episodic;
    report.runtime_ns = measured.runtime_ns;
    report.normalised_cost = env->summary().normalised_cost;
    report.oom = s.oom || measured.oom;
    report.epsilon = epsilon;
    report.counters = measured.counters;
    report.backend = measured.backend;
    report.plan = s.plan;
    report.measurement_cached = cached;
    report.min_runtime_ns = measured.min_runtime_ns;
    report.max_runtime_ns = measured.max_runtime_ns;
    Unacked& pending = unacked[episode_id];
    pending.batches = SplitIntoChunks(std::move(batch));
    pending.report = std::move(report);
    SendEpisode(pending);
  }

  // Waits `backoff_ms`, then connects a new socket and registers again. The
  // wait listens on the current socket: a learner that comes up meanwhile
  // answers the registration already queued there, and a new socket would
  // drop that answer and the task and weights behind it (the learner would
  // count a worker that never hears it, and its farewell would be lost).
  void Reconnect(uint32_t& backoff_ms, const std::atomic<bool>& stop) {
    LogWarn("learner_silent").kv("endpoint", config.learner_endpoint).kv("retry_ms", backoff_ms);
    const auto heard_before = last_heard;
    const auto until = Clock::now() + std::chrono::milliseconds(backoff_ms);
    backoff_ms = std::min(backoff_ms * 2, config.reconnect_max_ms);
    while (!stop.load() && !shutdown_requested) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (left.count() <= 0) break;
      if (auto in = client.Receive(std::min(left, std::chrono::milliseconds(20)))) Handle(in->frame);
      if (last_heard != heard_before) {
        LogInfo("learner_heard").kv("endpoint", config.learner_endpoint);
        backoff_ms = config.reconnect_initial_ms;
        return;
      }
    }
    if (stop.load() || shutdown_requested) return;
    client.Reconnect();
    ++stats.reconnects;
    worker_id = 0;
    Register();
    last_heard = Clock::now();
  }
};

Worker::Worker(WorkerConfig config, std::unique_ptr<PlanEvaluator> evaluator)
    : impl_(new Impl(std::move(config), std::move(evaluator))) {}
Worker::~Worker() = default;

WorkerStats Worker::Run() {
  Impl& m = *impl_;
  m.Register();
  uint32_t backoff_ms = m.config.reconnect_initial_ms;
  while (!stop_.load() && !m.shutdown_requested) {
    // Wait a little for frames only when there is nothing else to do.
    const auto heard_before = m.last_heard;
    m.Pump(std::chrono::milliseconds(m.may_run() || m.pending_task ? 0 : 20));
    if (m.last_heard != heard_before) backoff_ms = m.config.reconnect_initial_ms;
    if (m.metrics) {
      m.metrics->Sync(m.stats, m.worker_id != 0, m.weights_version);
      m.metrics->FlowControl(m.ready() && !m.may_run());
    }
    if (m.shutdown_requested) break;
    if (m.pending_task) {
      std::unique_ptr<TaskMsg> t = std::move(m.pending_task);
      m.AcceptTask(std::move(*t));
      continue;
    }
    const auto interval = std::chrono::milliseconds(m.heartbeat_interval_ms);
    if (Clock::now() - m.last_heard > interval * m.heartbeat_liveness) {
      if (m.config.give_up_seconds > 0 &&
          std::chrono::duration<double>(Clock::now() - m.last_contact).count() > m.config.give_up_seconds) {
        LogError("learner_unreachable").kv("endpoint", m.config.learner_endpoint);
        break;
      }
      m.Reconnect(backoff_ms, stop_);
      continue;
    }
    if (m.may_run()) {
      if (m.config.max_episodes > 0 && m.stats.episodes >= m.config.max_episodes) break;
      try {
        m.LoadPendingWeights();
        m.RunEpisode();
      } catch (const std::exception& e) {
        ++m.stats.episodes_failed;
        LogError("episode_failed").kv("detail", e.what());
        m.client.Send(EncodeMessage(ErrorMsg{ErrorCode::kInternal, std::string("episode failed: ") + e.what()}));
      }
    }
  }
  return m.stats;
}

}  // namespace tensortier
