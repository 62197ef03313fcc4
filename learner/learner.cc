#include "learner/learner.h"

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "common/files.h"
#include "common/log.h"
#include "envs/cost_model.h"
#include "metrics/learner_metrics.h"
#include "protocol/codec.h"
#include "transport/channel.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct WorkerState {
  uint32_t id = 0;
  std::string peer;
  std::string name;
  std::string host;
  std::string backend;
  Clock::time_point last_seen;
  uint64_t episodes = 0;
  uint64_t last_episode_id = 0;  // newest episode report ingested: the worker's acknowledgement
};

}  // namespace

// The agent the config names, shaped by the environment: it defines what
// the network sees and does.
std::unique_ptr<PlacementAgent> BuildAgent(LearnerConfig& config) {
  config.dqn.observation_size = config.sac.observation_size = kObservationSize;
  config.dqn.num_actions = config.sac.num_actions = 2;
  if (config.agent == "sac") return MakeAgent("sac", config.sac.ToJson());
  return MakeAgent(config.agent, config.dqn.ToJson());
}

struct Learner::Impl {
  explicit Impl(LearnerConfig c)
      : config(std::move(c)),
        server(config.bind_endpoint),
        agent(BuildAgent(config)),
        replay(static_cast<size_t>(agent->schedule().replay_capacity)),
        rng(config.dqn.seed ^ 0x9e3779b97f4a7c15ull) {
    if (!config.workload.finalized()) config.workload.Finalize();
    PlacementEnv probe(config.workload, config.env);  // validates the env settings up front
    TaskMsg task;
    task.task_id = 1;
    task.workload = config.workload;
    task.env = config.env;
    task.exploration.epsilon_start = config.dqn.epsilon_start;
    task.exploration.epsilon_end = config.dqn.epsilon_end;
    task.exploration.schedule_episodes = static_cast<uint32_t>(config.dqn.epsilon_decay_episodes);
    task.exploration.epsilon = config.dqn.epsilon_end;
    task.exploration.seed = config.dqn.seed;
    task.agent = agent->name();
    task.agent_config_json = agent->config_json();
    task_frame = EncodeMessage(task);
    PublishWeights();
    metrics = LearnerMetrics::Start(config.metrics_address, config.metrics_sd_dir, config.workload, config.env,
                                    task.agent, agent->device_name(), replay.capacity());
  }

  LearnerConfig config;
  FleetServer server;
  std::unique_ptr<PlacementAgent> agent;
  ReplayBuffer replay;
  std::mt19937_64 rng;
  std::string task_frame;
  std::string weights_frame;
  uint64_t weights_version = 0;

  std::map<std::string, WorkerState> workers;  // by routing id
  uint32_t next_worker_id = 1;
  bool fleet_started = false;
  std::set<std::pair<uint32_t, uint64_t>> ingested;  // (worker, episode) batches seen
  LearnerResult result;
  Clock::time_point start = Clock::now();
  std::unique_ptr<PlacementEnv> eval_env;
  std::mt19937_64 eval_rng{0};
  std::unique_ptr<LearnerMetrics> metrics;  // null without --metrics-address

  void PublishWeights() {
    WeightsMsg w;
    w.version = ++weights_version;
    w.agent = agent->name();
    w.blob = agent->SerializeWeights();
    weights_frame = EncodeMessage(w);
  }

  void Broadcast(const std::string& frame) {
    for (auto& [peer, state] : workers) server.Send(peer, frame);
  }

  void Reply(const std::string& peer, ErrorCode code, const std::string& reason) {
    server.Send(peer, EncodeMessage(ErrorMsg{code, reason}));
  }

  void HandleFrame(const IncomingFrame& in, const std::function<void(const EpisodeRecord&)>& on_episode) {
    ++result.counters.frames_received;
    DecodeResult decoded = DecodeMessage(in.frame.data(), in.frame.size());
    if (auto* err = std::get_if<DecodeError>(&decoded)) {
      ErrorCode code = ErrorCode::kMalformed;
      switch (err->reason) {
        case DecodeErrorReason::kOversized:
          ++result.counters.oversized_frames;
          code = ErrorCode::kOversized;
          break;
        case DecodeErrorReason::kWrongVersion:
          ++result.counters.wrong_version_frames;
          code = ErrorCode::kWrongVersion;
          break;
        default:
          ++result.counters.malformed_frames;
      }
      LogWarn("bad_frame").kv("reason", DecodeErrorReasonName(err->reason)).kv("detail", err->detail)
          .kv("bytes", in.frame.size());
      Reply(in.peer, code, std::string(DecodeErrorReasonName(err->reason)) + ": " + err->detail);
      return;
    }
    Message& msg = std::get<Message>(decoded);
    if (auto* reg = std::get_if<RegisterMsg>(&msg)) return OnRegister(in.peer, *reg);
    auto it = workers.find(in.peer);
    if (it == workers.end()) {
      ++result.counters.unknown_worker_frames;
      Reply(in.peer, ErrorCode::kUnknownWorker, "register first");
      return;
    }
    WorkerState& worker = it->second;
    worker.last_seen = Clock::now();
    if (std::holds_alternative<HeartbeatMsg>(msg)) {
      ++result.counters.heartbeats_received;
      return;
    }
    if (auto* batch = std::get_if<TransitionBatchMsg>(&msg)) return OnTransitions(worker, *batch);
    if (auto* report = std::get_if<EpisodeReportMsg>(&msg)) return OnEpisodeReport(worker, *report, on_episode);
    if (auto* e = std::get_if<ErrorMsg>(&msg)) {
      ++result.counters.worker_errors;
      LogWarn("worker_error").kv("worker", worker.id).kv("reason", e->reason);
      return;
    }
    ++result.counters.unexpected_messages;
    Reply(in.peer, ErrorCode::kUnexpected, std::string("a learner does not take ") + MessageName(msg));
  }

  void OnRegister(const std::string& peer, const RegisterMsg& reg) {
    WorkerState& w = workers[peer];
    if (w.id == 0) {
      w.id = next_worker_id++;
      ++result.counters.workers_registered;
      result.workers_seen.push_back(w.id);
    }
    w.peer = peer;
    w.name = reg.worker_name;
    w.host = reg.host;
    w.backend = reg.slow_tier_backend;
    w.last_seen = Clock::now();
    LogInfo("worker_registered").kv("worker", w.id).kv("name", reg.worker_name).kv("host", reg.host)
        .kv("pid", reg.pid).kv("backend", reg.slow_tier_backend);
    RegisterAckMsg ack;
    ack.worker_id = w.id;
    ack.heartbeat_interval_ms = config.heartbeat_interval_ms;
    ack.heartbeat_liveness = config.heartbeat_liveness;
    server.Send(peer, EncodeMessage(ack));
    // Hold tasks back until the fleet has its minimum size, so that every
    // worker starts from the same policy.
    if (!fleet_started && workers.size() < config.min_workers) return;
    if (!fleet_started) {
      fleet_started = true;
      LogInfo("fleet_started").kv("workers", workers.size());
      for (auto& [p, state] : workers) {
        server.Send(p, task_frame);
        server.Send(p, weights_frame);
      }
      return;
    }
    server.Send(peer, task_frame);
    server.Send(peer, weights_frame);
  }

  void OnTransitions(WorkerState& worker, TransitionBatchMsg& batch) {
    if (batch.worker_id != worker.id) {
      ++result.counters.unknown_worker_frames;
      Reply(worker.peer, ErrorCode::kUnknownWorker, "batch names another worker");
      return;
    }
    if (!ingested.insert({worker.id, batch.episode_id}).second) {
      ++result.counters.duplicate_batches;
      return;
    }
    const size_t obs_size = static_cast<size_t>(kObservationSize);
    for (Transition& t : batch.transitions) {
      if (t.observation.size() != obs_size || t.next_observation.size() != obs_size ||
          t.action >= 2) {
        ++result.counters.malformed_frames;
        Reply(worker.peer, ErrorCode::kMalformed, "transition of the wrong shape");
        return;
      }
    }
    result.counters.transitions_ingested += batch.transitions.size();
    for (Transition& t : batch.transitions) replay.Add(std::move(t));
  }

  void OnEpisodeReport(WorkerState& worker, const EpisodeReportMsg& report,
                       const std::function<void(const EpisodeRecord&)>& on_episode) {
    ++worker.episodes;
    EpisodeRecord rec;
    rec.episode = ++result.episodes;
    rec.worker_id = worker.id;
    rec.worker_episode = report.episode_id;
    rec.policy_version = report.policy_version;
    rec.steps = report.steps;
    rec.step_reward_sum = report.step_reward_sum;
    rec.episodic_reward = report.episodic_reward;
    rec.normalised_cost = report.normalised_cost;
    rec.runtime_ns = report.runtime_ns;
    rec.oom = report.oom;
    rec.epsilon = report.epsilon;
    rec.backend = report.backend;
    if (!report.oom) ConsiderPlan(report.plan);

    Train(rec);
    PublishWeights();
    Broadcast(weights_frame);
    // The acknowledgement that lets this worker run its next episode.
    worker.last_episode_id = std::max(worker.last_episode_id, report.episode_id);
    server.Send(worker.peer, EncodeMessage(HeartbeatMsg{worker.id, worker.last_episode_id}));
    if (config.eval_interval_episodes > 0 && result.episodes % config.eval_interval_episodes == 0) Evaluate();
    rec.best_runtime_ns = result.best_runtime_ns;
    rec.wall_seconds = SecondsSince(start);
    result.records.push_back(rec);
    if (on_episode) on_episode(rec);
    if (metrics) metrics->OnEpisode(rec);
    if (!config.run_dir.empty() && config.checkpoint_interval_episodes > 0 &&
        result.episodes % config.checkpoint_interval_episodes == 0)
      Checkpoint();
  }

  // Plans are ranked on the cost model whatever scored them on the worker,
  // so that measured and modelled episodes compare on one scale.
  void ConsiderPlan(const PlacementPlan& plan) {
    double runtime_ns = 0;
    try {
      CostReport cost = EvaluatePlan(config.workload, plan);
      if (cost.oom) return;
      runtime_ns = cost.total_ns;
    } catch (const std::exception& e) {
      ++result.counters.malformed_frames;
      LogWarn("bad_plan").kv("detail", e.what());
      return;
    }
    if (!result.has_best_plan || runtime_ns < result.best_runtime_ns) {
      result.best_plan = plan;
      result.best_runtime_ns = runtime_ns;
      result.has_best_plan = true;
    }
  }

  // A greedy rollout of the current policy on the cost model: tracks the
  // best plan the policy itself produces (exploring workers rarely do).
  EpisodeSummary Evaluate() {
    if (!eval_env) eval_env = std::make_unique<PlacementEnv>(config.workload, config.env);
    EpisodeSummary s = RunEpisode(*eval_env, [&](const Observation& o) { return agent->Greedy(o.data()); });
    s.plan.produced_by = agent->name() + "-greedy v" + std::to_string(weights_version);
    ++result.evaluations;
    if (!s.oom) ConsiderPlan(s.plan);
    if (metrics) metrics->OnEvaluation(s);
    return s;
  }

  void Train(EpisodeRecord& rec) {
    const AgentSchedule schedule = agent->schedule();
    if (replay.size() < static_cast<size_t>(schedule.learning_starts)) return;
    double loss = 0, q = 0;
    const int n = schedule.updates_per_episode;
    for (int i = 0; i < n; ++i) {
      TrainStats s = agent->Update(replay, rng);
      loss += s.loss;
      q += s.mean_q;
    }
    if (n > 0) {
      rec.loss = loss / n;
      rec.mean_q = q / n;
    }
  }

  void Checkpoint() {
    try {
      MakeDirectories(config.run_dir + "/checkpoints");
      agent->SaveCheckpoint(config.run_dir + "/checkpoints/" + agent->name() + ".ckpt");
    } catch (const std::exception& e) {
      LogError("checkpoint_failed").kv("detail", e.what());
    }
  }

  void KeepAlive(Clock::time_point& last_heartbeat) {
    const auto interval = std::chrono::milliseconds(config.heartbeat_interval_ms);
    if (Clock::now() - last_heartbeat < interval) return;
    last_heartbeat = Clock::now();
    const auto deadline = interval * config.heartbeat_liveness;
    for (auto it = workers.begin(); it != workers.end();) {
      if (Clock::now() - it->second.last_seen > deadline) {
        LogWarn("worker_expired").kv("worker", it->second.id).kv("name", it->second.name);
        ++result.counters.workers_expired;
        it = workers.erase(it);
        continue;
      }
      HeartbeatMsg hb;
      hb.worker_id = it->second.id;
      hb.episodes_done = it->second.last_episode_id;
      server.Send(it->first, EncodeMessage(hb));
      ++it;
    }
  }
};

Learner::Learner(LearnerConfig config) : impl_(new Impl(std::move(config))) {}
Learner::~Learner() = default;

std::string Learner::endpoint() const { return impl_->server.endpoint(); }
std::string Learner::metrics_address() const { return impl_->metrics ? impl_->metrics->address() : ""; }
const PlacementAgent& Learner::agent() const { return *impl_->agent; }

LearnerResult Learner::Run(const std::function<void(const EpisodeRecord&)>& on_episode) {
  Impl& m = *impl_;
  m.start = Clock::now();
  auto last_heartbeat = Clock::now();
  LogInfo("learner_started").kv("endpoint", endpoint()).kv("workload", m.config.workload.name)
      .kv("dram_limit_bytes", m.config.env.dram_limit_bytes).kv("episodes", m.config.episodes)
      .kv("agent", m.agent->name()).kv("device", m.agent->device_name());
  while (!stop_.load() && m.result.episodes < m.config.episodes) {
    if (m.config.max_seconds > 0 && SecondsSince(m.start) > m.config.max_seconds) {
      LogWarn("learner_time_limit").kv("seconds", m.config.max_seconds);
      break;
    }
    // Drain everything queued before the liveness check, so that a busy
    // learner does not expire workers whose heartbeats sit in its queue.
    auto wait = std::chrono::milliseconds(20);
    while (auto in = m.server.Receive(wait)) {
      wait = std::chrono::milliseconds(0);
      try {
        m.HandleFrame(*in, on_episode);
      } catch (const std::exception& e) {
        // A frame that decoded but could not be processed must not take
        // the learner down.
        ++m.result.counters.malformed_frames;
        LogError("frame_failed").kv("detail", e.what());
      }
      if (m.result.episodes >= m.config.episodes) break;
    }
    m.KeepAlive(last_heartbeat);
    if (m.metrics)
      m.metrics->Sync(m.result.counters, m.workers.size(), m.replay.size(), m.weights_version, m.agent->updates());
  }
  m.Broadcast(EncodeMessage(ShutdownMsg{"training finished"}));
  if (!m.config.run_dir.empty()) m.Checkpoint();

  m.result.greedy_summary = m.Evaluate();
  m.result.greedy_plan = m.result.greedy_summary.plan;
  m.result.updates = m.agent->updates();
  m.result.agent = m.agent->name();
  m.result.weights_version = m.weights_version;
  m.result.wall_seconds = SecondsSince(m.start);
  LogInfo("learner_finished").kv("episodes", m.result.episodes).kv("updates", m.result.updates)
      .kv("transitions", m.result.counters.transitions_ingested).kv("seconds", m.result.wall_seconds);
  return m.result;
}

}  // namespace tensortier
