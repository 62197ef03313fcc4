#include "learner/learner.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/files.h"
#include "common/log.h"
#include "envs/workload_io.h"
#include "learner/checkpoint_sections.h"
#include "learner/checkpoint_store.h"
#include "learner/evaluator.h"
#include "learner/fastest_policy.h"
#include "learner/fleet_heartbeats.h"
#include "learner/fleet_registry.h"
#include "learner/frame_refusals.h"
#include "learner/ingest.h"
#include "learner/measurement_cache.h"
#include "learner/payload.h"
#include "learner/scoreboard.h"
#include "learner/starting_policy.h"
#include "learner/staged_batch.h"
#include "learner/task_frames.h"
#include "learner/trainer.h"
#include "learner/weights_publisher.h"
#include "learner/learner_metrics.h"
#include "protocol/codec.h"
#include "transport/channel.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

struct Learner::Impl {
  explicit Impl(LearnerConfig c) : config(std::move(c)), server(config.bind_endpoint, config.security) {
    if (!config.workload.finalized()) config.workload.Finalize();
    measurements = std::make_unique<MeasurementCache>(config.workload.Signature(), config.env.dram_limit_bytes);
    // Also validates the env settings up front.
    const size_t steps_per_episode = StartupEpisodeSteps(config.workload, config.env, config.dqn.seed);
    if (!(config.apex_epsilon > 0 && config.apex_epsilon <= 1) || !(config.apex_alpha >= 0))
      throw std::invalid_argument("Ape-X exploration needs 0 < epsilon <= 1 and alpha >= 0");
    if (config.converge_window > 0 && !(config.converge_tolerance >= 0))
      throw std::invalid_argument("converge tolerance must be >= 0");
    if (config.plan_ilp.time_limit_seconds > 0) ValidateGuidedIlpOptions(config.plan_ilp);

    std::optional<std::string> payload;
    if (config.resume) {
      FoundCheckpoint found = FindCheckpoint(config, CheckpointDir());
      result.resumed_from = found.path;
      rejected_checkpoints = found.rejected;
      payload = std::move(found.payload);
    }
    if (payload) {
      agent = RestoreAgent(ReadAgentSection(*payload), config, CheckpointDir());
    } else {
      StartingPolicy start = StartPolicy(config, result);  // learner/starting_policy.h
      agent = std::move(start.agent);
      for (const HeldPolicy& held : start.candidates) {
        if (!held.greedy.oom) ConsiderPlan(held.greedy.plan);
        fastest.Consider(held.greedy, held.weights);
      }
    }
    trainer = std::make_unique<Trainer>(*agent, TrainerSettingsFor(config, steps_per_episode));
    result.replay = ReplayKindName(config.replay);
    result.samples_per_insert = trainer->samples_per_insert();
    result.exploration = ExplorationKindName(config.exploration);
    if (payload) RestoreStateFrom(*payload);

    // A network trained before (imitated here or elsewhere) explores little.
    tasks = std::make_unique<TaskFrames>(
        config, *agent, result.imitated || !result.initialized_from.empty() || !result.self_imitation.rounds.empty());
    if (!payload) weights.Advance();
    weights.Publish(*agent, Clock::now());
    if (!config.run_dir.empty()) {
      MakeDirectories(config.run_dir);
      // Beside the checkpoints, so that `--resume RUN_DIR` finds the workload.
      WriteWorkloadFile(config.workload, config.run_dir + "/workload.ttwl");
    }
    metrics = LearnerMetrics::Start(config.metrics_address, config.metrics_sd_dir, config.workload, config.env,
                                    agent->name(), agent->device_name(), trainer->replay_capacity());
  }

  ~Impl() {
    StopEvaluator();
    if (trainer) trainer->Stop();
  }

  LearnerConfig config;
  FleetServer server;
  std::unique_ptr<PlacementAgent> agent;
  // The training thread (learner/trainer.h): replay, the rate limiter and
  // the updates. Its lock guards the agent: the network thread takes it to
  // publish weights, snapshot them for an evaluation and checkpoint.
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<TaskFrames> tasks;  // what workers are told to do (learner/task_frames.h)
  WeightsPublisher weights{std::chrono::milliseconds(config.weights_publish_interval_ms)};

  FleetRegistry fleet{config.min_workers};
  std::unique_ptr<MeasurementCache> measurements;  // real measurements (learner/measurement_cache.h)
  // Checks, dedupes and assembles batches; its ledgers decide acks (learner/ingest.h).
  Ingest ingest;
  LearnerResult result;
  Clock::time_point start = Clock::now();
  double seconds_before = 0;                    // of the sessions before a resume
  std::unique_ptr<PlacementEnv> eval_env;
  FastestPolicy fastest;  // where the plan-time search starts
  std::unique_ptr<LearnerMetrics> metrics;  // null without --metrics-address
  // The best plan and the greedy evaluations (learner/scoreboard.h); LearnerResult gets them at the end.
  Scoreboard scores{config.workload, config.converge_window, config.converge_tolerance};
  double last_loss = 0, last_q = 0;
  FleetHeartbeats heartbeats{server, fleet, std::chrono::milliseconds(config.heartbeat_interval_ms),
                             static_cast<int>(config.heartbeat_liveness)};

  // Periodic greedy evaluations (learner/evaluator.h); started in Run so
  // that a constructor that throws leaves no thread behind.
  std::unique_ptr<Evaluator> evaluator;

  std::unique_lock<std::mutex> LockTraining() { return trainer->Lock(); }
  // Past this many staged transitions the network thread stops reading
  // frames until training catches up (workers block on their acks long before).
  static constexpr uint64_t kMaxStagedTransitions = 1u << 20;

  mutable std::mutex status_mu;
  LearnerStatus status;

  double Elapsed() const { return seconds_before + SecondsSince(start); }

  // Sends the newest weights to every worker if reports advanced the
  // version and the publish interval has passed. Network thread.
  void MaybeBroadcastWeights(bool force = false) {
    if (!weights.Due(Clock::now(), force)) return;
    {
      std::unique_lock<std::mutex> train_lock = LockTraining();
      weights.Publish(*agent, Clock::now());
    }
    Broadcast(weights.frame());
  }

  void Broadcast(const std::string& frame) {
    for (auto& [peer, state] : fleet.workers()) server.Send(peer, frame);
  }

  void Reply(const std::string& peer, ErrorCode code, const std::string& reason) {
    server.Send(peer, EncodeMessage(ErrorMsg{code, reason}));
  }

  void SyncStatus(bool running) {
    result.counters.multipart_frames = server.dropped_frames();
    result.counters.connections_closed = server.connections_closed();
    result.counters.updates_skipped = trainer->updates_skipped();
    std::lock_guard<std::mutex> lock(status_mu);
    status.counters = result.counters;
    status.episodes = result.episodes;
    status.weights_version = weights.version();
    status.updates = trainer->updates();
    status.workers_connected = fleet.size();
    status.running = running;
  }

  // A frame that failed its checks: counted by reason, logged, answered.
  void RefuseFrame(const IncomingFrame& in, const DecodeError& err) {
    const ErrorCode code = CountRefusedFrame(err.reason, result.counters);
    LogWarn("bad_frame").kv("reason", DecodeErrorReasonName(err.reason)).kv("detail", err.detail)
        .kv("bytes", in.frame.size());
    Reply(in.peer, code, std::string(DecodeErrorReasonName(err.reason)) + ": " + err.detail);
  }

  void OnTaskRefused(WorkerState& worker, const std::string& reason) {
    ++result.counters.tasks_refused;
    fleet.OnTaskRefused(worker, reason, Clock::now());
    LogWarn("task_refused").kv("worker", worker.id).kv("reason", reason);
  }

  void HandleFrame(const IncomingFrame& in, const std::function<void(const EpisodeRecord&)>& on_episode) {
    ++result.counters.frames_received;
    // Transitions, nearly every frame, are checked and copied out of the
    // frame here, once; the training thread copies them into replay rows (codec.h).
    DecodeError refused;
    if (auto frame = TransitionBatchFrame::Open(in.frame.data(), in.frame.size(), {}, &refused)) {
      WorkerState* worker = fleet.Find(in.peer);
      if (!worker) {
        ++result.counters.unknown_worker_frames;
        Reply(in.peer, ErrorCode::kUnknownWorker, "register first");
        return;
      }
      worker->last_seen = Clock::now();
      return OnTransitionFrame(*worker, std::move(frame));
    }
    if (!refused.detail.empty()) return RefuseFrame(in, refused);
    DecodeResult decoded = DecodeMessage(in.frame.data(), in.frame.size());
    if (auto* err = std::get_if<DecodeError>(&decoded)) return RefuseFrame(in, *err);
    Message& msg = std::get<Message>(decoded);
    if (auto* reg = std::get_if<RegisterMsg>(&msg)) return OnRegister(in.peer, *reg);
    WorkerState* known = fleet.Find(in.peer);
    if (!known) {
      ++result.counters.unknown_worker_frames;
      Reply(in.peer, ErrorCode::kUnknownWorker, "register first");
      return;
    }
    WorkerState& worker = *known;
    worker.last_seen = Clock::now();
    if (std::holds_alternative<HeartbeatMsg>(msg)) {
      ++result.counters.heartbeats_received;
      return;
    }
    if (auto* batch = std::get_if<TransitionBatchMsg>(&msg)) return OnTransitions(worker, *batch);
    if (auto* report = std::get_if<EpisodeReportMsg>(&msg)) return OnEpisodeReport(worker, *report, on_episode);
    if (auto* e = std::get_if<ErrorMsg>(&msg)) {
      if (e->code == ErrorCode::kTaskRefused) return OnTaskRefused(worker, e->reason);
      ++result.counters.worker_errors;
      LogWarn("worker_error").kv("worker", worker.id).kv("reason", e->reason);
      return;
    }
    ++result.counters.unexpected_messages;
    Reply(in.peer, ErrorCode::kUnexpected, std::string("a learner does not take ") + MessageName(msg));
  }

  void OnRegister(const std::string& peer, const RegisterMsg& reg) {
    const FleetRegistry::Registration registration = fleet.Register(peer, reg, Clock::now());
    const WorkerState& w = *registration.worker;
    ++result.counters.workers_registered;  // registrations, reconnects included; workers_seen has the ids
    if (registration.new_worker) result.workers_seen.push_back(w.id);
    LogInfo("worker_registered").kv("worker", w.id).kv("name", reg.worker_name).kv("host", reg.host)
        .kv("pid", reg.pid).kv("backend", reg.slow_tier_backend).kv("incarnation", reg.incarnation);
    RegisterAckMsg ack;
    ack.worker_id = w.id;
    ack.heartbeat_interval_ms = config.heartbeat_interval_ms;
    ack.heartbeat_liveness = config.heartbeat_liveness;
    server.Send(peer, EncodeMessage(ack));
    using Tasks = FleetRegistry::Registration::Tasks;
    if (registration.tasks == Tasks::kEveryone) {
      LogInfo("fleet_started").kv("workers", fleet.size());
      for (auto& [p, state] : fleet.workers()) SendTask(p, state);
    } else if (registration.tasks == Tasks::kThisWorker) {
      SendTask(peer, w);
    }
  }

  void SendTask(const std::string& peer, const WorkerState& w) {
    server.Send(peer, tasks->For(w.exploration_index));
    server.Send(peer, weights.frame());
    SendMeasurements(peer);
  }

  void SendMeasurements(const std::string& peer) {
    if (!measurements->empty()) server.Send(peer, EncodeMessage(measurements->All()));
  }

  // Real measurements go into the cache and out to every worker, so that
  // the same plan is not executed twice on one backend.
  void CacheMeasurement(const EpisodeReportMsg& report) {
    MeasurementCache::Outcome out = measurements->Record(report);
    switch (out.seen) {
      case MeasurementCache::Seen::kNotMeasured:
        return;
      case MeasurementCache::Seen::kHit:
        ++result.counters.measurement_cache_hits;
        return;
      case MeasurementCache::Seen::kRedundant:
        ++result.counters.measurement_cache_redundant;
        return;
      case MeasurementCache::Seen::kNew:
        ++result.counters.measurement_cache_misses;
        Broadcast(EncodeMessage(out.entry));
        return;
    }
  }

  // An episode is acknowledged once both its transitions and its report are
  // in; a worker resends what stays unacknowledged, so a duplicate of an
  // acknowledged episode is answered again (the first ack may have been lost).
  void MaybeAck(WorkerState& worker, uint64_t episode_id) {
    if (!ingest.Acknowledgeable(worker.incarnation, episode_id)) return;
    worker.last_episode_id = std::max(worker.last_episode_id, episode_id);
    HeartbeatMsg ack{worker.id, worker.last_episode_id, {episode_id}};
    server.Send(worker.peer, EncodeMessage(ack));
    ++result.counters.episodes_acked;
  }

  void OnTransitionFrame(WorkerState& worker, std::unique_ptr<TransitionBatchFrame> frame) {
    fleet.OnTaskAccepted(worker);
    const uint64_t episode_id = frame->episode_id();
    Answer(worker, episode_id, ingest.OnFrame(worker, std::move(frame)));
  }

  void OnTransitions(WorkerState& worker, TransitionBatchMsg& batch) {
    const uint64_t episode_id = batch.episode_id;
    Answer(worker, episode_id, ingest.OnBatch(worker, batch));
  }

  // Stages what ingest let through for the trainer and answers the rest.
  void Answer(WorkerState& worker, uint64_t episode_id, Ingest::Outcome out) {
    switch (out.verdict) {
      case Ingest::Verdict::kStaged:
        for (StagedBatch& b : out.ready) trainer->Stage(std::move(b));
        return;
      case Ingest::Verdict::kChunkHeld:
        return;
      case Ingest::Verdict::kDuplicateEpisode:
        ++result.counters.duplicate_batches;
        MaybeAck(worker, episode_id);
        return;
      case Ingest::Verdict::kDuplicateChunk:
        ++result.counters.duplicate_batches;
        return;
      case Ingest::Verdict::kWrongWorker:
        ++result.counters.unknown_worker_frames;
        Reply(worker.peer, ErrorCode::kUnknownWorker, out.reason);
        return;
      case Ingest::Verdict::kMalformed:
        ++result.counters.malformed_frames;
        Reply(worker.peer, ErrorCode::kMalformed, out.reason);
        return;
    }
  }

  // Counts what the training thread put into replay and acknowledges the
  // episodes that are complete now. Network thread.
  void CollectInserted() {
    for (const InsertedBatch& b : trainer->TakeInserted()) {
      result.counters.transitions_ingested += b.transitions;
      if (!ingest.OnInserted(b)) continue;
      if (config.keep_batch_log)
        result.batches.push_back({b.worker_id, b.incarnation, b.episode_id, b.episode_transitions});
      // A worker gone now will resend, and be acked then.
      if (WorkerState* w = fleet.FindByIncarnation(b.incarnation)) MaybeAck(*w, b.episode_id);
    }
  }

  // Lets the trainer put everything staged into replay, joins it and books
  // what went in.
  void StopTrainer(bool hurry = false) {
    trainer->Stop(hurry);
    CollectInserted();
  }

  void OnEpisodeReport(WorkerState& worker, const EpisodeReportMsg& report,
                       const std::function<void(const EpisodeRecord&)>& on_episode) {
    fleet.OnTaskAccepted(worker);
    if (!ingest.OnReport(worker.incarnation, report.episode_id)) {
      ++result.counters.duplicate_reports;
      MaybeAck(worker, report.episode_id);
      return;
    }
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
    CacheMeasurement(report);
    trainer->ObserveEpisodeLength(report.steps);
    if (!trainer->has_limiter()) trainer->OweUpdatesForOneReport();
    // Reports often arrive in bursts with no update between them: they
    // carry the newest loss rather than a zero.
    if (std::optional<Trainer::LossMeans> means = trainer->TakeLossMeans()) {
      last_loss = means->loss;
      last_q = means->mean_q;
    }
    rec.loss = last_loss;
    rec.mean_q = last_q;
    weights.Advance();
    MaybeBroadcastWeights(config.weights_publish_interval_ms == 0);
    MaybeAck(worker, report.episode_id);
    if (config.eval_interval_episodes > 0 && result.episodes % config.eval_interval_episodes == 0)
      RequestEvaluation();
    rec.best_runtime_ns = scores.best_runtime_ns();
    rec.wall_seconds = Elapsed();
    result.records.push_back(rec);
    if (on_episode) on_episode(rec);
    if (metrics) metrics->OnEpisode(rec);
    if (!config.run_dir.empty() && config.checkpoint_interval_episodes > 0 && result.episodes < config.episodes &&
        result.episodes % config.checkpoint_interval_episodes == 0) {  // (the last episode's: Run's final one)
      // The checkpoint holds every evaluation asked for so far (their
      // rewards, plans and the best reward that <agent>-best.ckpt matches).
      DrainEvaluations();
      auto lock = LockTraining();
      Checkpoint();
    }
  }

  void ConsiderPlan(const PlacementPlan& plan) {
    try {
      scores.ConsiderPlan(plan);
    } catch (const std::exception& e) {
      ++result.counters.malformed_frames;
      LogWarn("bad_plan").kv("detail", e.what());
    }
  }

  // A greedy rollout of the live agent on the cost model, recorded as an
  // evaluation. Network thread, with training stopped (the final one).
  EpisodeSummary Evaluate() {
    if (!eval_env) eval_env = std::make_unique<PlacementEnv>(config.workload, config.env);
    EpisodeSummary s = RunEpisode(*eval_env, [&](const Observation& o) { return agent->Greedy(o.data()); });
    // "final": the live weights, which have trained past the last version
    // published to the workers (v<N> names a published version).
    s.plan.produced_by = agent->name() + "-greedy final";
    RecordEvaluation(s, agent->updates(), /*save_best=*/true);
    fastest.Consider(s, agent->SerializeWeights());
    return s;
  }

  // Books a greedy evaluation: tracks the best plan the policy itself
  // produces (exploring workers rarely do), and feeds the convergence rule.
  // `updates`: the agent's updates when its weights were taken. With
  // `save_best`, a new best saves the live agent as <agent>-best.ckpt (the
  // evaluation thread saves its own). Network thread.
  void RecordEvaluation(const EpisodeSummary& s, uint64_t updates, bool save_best) {
    ++result.evaluations;
    if (!s.oom) ConsiderPlan(s.plan);
    if (metrics) metrics->OnEvaluation(s);
    const double reward = s.step_reward_sum + s.episodic_reward;
    const Scoreboard::Evaluation booked = scores.BookEvaluation(reward, updates);
    if (booked.new_best && save_best) SaveBest(*agent, s);
    if (booked.converged_now) {
      result.converged = true;
      result.converged_at_episode = result.episodes;
      result.converged_at_seconds = Elapsed();
      LogInfo("converged").kv("episodes", result.episodes).kv("seconds", result.converged_at_seconds)
          .kv("evaluation_reward", reward).kv("best_evaluation_reward", *scores.best_evaluation_reward())
          .kv("window", config.converge_window).kv("tolerance", config.converge_tolerance);
    }
  }

  // Policies get worse as well as better during training: keep the weights
  // of the best greedy evaluation, what bench and export want.
  void SaveBest(const PlacementAgent& a, const EpisodeSummary& s) const {
    if (config.run_dir.empty() || s.oom) return;
    try {
      MakeDirectories(CheckpointDir());
      a.SaveCheckpoint(CheckpointDir() + "/" + a.name() + "-best.ckpt");
    } catch (const std::exception& e) {
      LogError("best_checkpoint_failed").kv("detail", e.what());
    }
  }

  // Asks the evaluation thread to evaluate the current weights. Network thread.
  void RequestEvaluation() {
    Evaluator::Request req;
    {
      std::unique_lock<std::mutex> train_lock = LockTraining();
      req.updates = agent->updates();
      req.weights = weights.Blob(*agent);
    }
    req.weights_version = weights.version();
    req.episode = result.episodes;
    const uint64_t episode = req.episode;
    if (std::optional<uint64_t> replaced = evaluator->Submit(std::move(req))) {
      ++result.evaluations_skipped;
      LogWarn("evaluation_skipped").kv("episode", *replaced).kv("replaced_by", episode);
    }
  }

  void StartEvaluator() {
    // Resumed: the checkpoint's best stands.
    auto save_best = [this](const PlacementAgent& a, const EpisodeSummary& s) { SaveBest(a, s); };
    evaluator = std::make_unique<Evaluator>(config.workload, config.env, agent->name(), agent->config_json(),
                                            scores.best_evaluation_reward(), save_best);
    evaluator->set_before_each(config.before_periodic_evaluation);
    evaluator->Start();
  }

  void StopEvaluator() {
    if (evaluator) evaluator->Stop();
  }

  // Books the evaluations that finished, in the order they were asked for.
  // Network thread.
  void ApplyEvaluations() {
    if (!evaluator) return;
    for (const Evaluator::Outcome& o : evaluator->TakeFinished()) {
      result.evaluation_spans.push_back({o.started, o.finished});
      if (!o.ok) {
        ++result.evaluations_failed;
        continue;
      }
      RecordEvaluation(o.summary, o.updates, /*save_best=*/false);
      fastest.Consider(o.summary, o.weights);
    }
  }

  // Waits for the queued and running evaluations and books them, still
  // heartbeating (frames are not read meanwhile, so nobody is expired).
  // Network thread.
  void DrainEvaluations() {
    if (!evaluator || !evaluator->running()) return ApplyEvaluations();
    const auto tick = std::chrono::milliseconds(std::max<uint32_t>(1, config.heartbeat_interval_ms / 2));
    for (;;) {
      const bool idle = evaluator->WaitWhileBusy(tick);
      ApplyEvaluations();
      if (idle) return;
      result.counters.workers_expired += heartbeats.KeepAlive(/*queue_drained=*/false);
    }
  }

  // ------------------------------------------------------------ checkpoints

  std::string CheckpointDir() const { return config.run_dir + "/checkpoints"; }

  LearnerParts Parts() {
    return LearnerParts{*agent, weights, fleet, *trainer, ingest, scores, *measurements, result};
  }

  // Under the training lock (or with the trainer stopped).
  void Checkpoint() {
    CollectInserted();  // the ledger must say what replay holds
    try {
      CheckpointStore store(CheckpointDir(), config.checkpoints_kept);
      MakeDirectories(CheckpointDir());
      ++result.counters.checkpoints_written;
      const std::string payload = SavePayload(Parts(), config, Elapsed(), CheckpointDir());
      const std::string path = store.Write(result.episodes, payload);
      LogInfo("checkpoint").kv("path", path).kv("episodes", result.episodes).kv("weights_version", weights.version())
          .kv("replay", trainer->replay_size());
    } catch (const std::exception& e) {
      --result.counters.checkpoints_written;
      LogError("checkpoint_failed").kv("detail", e.what());
    }
  }

  uint64_t rejected_checkpoints = 0;  // newer checkpoints than the one resumed from, skipped

  void RestoreStateFrom(const std::string& payload) {
    LearnerParts parts = Parts();
    seconds_before = LoadPayload(payload, parts);
    result.counters.checkpoints_rejected += rejected_checkpoints;
    result.resumed = true;
    result.resumed_at_episode = result.episodes;
    result.resumed_weights_version = weights.version();
    LogInfo("resumed").kv("checkpoint", result.resumed_from).kv("episodes", result.episodes)
        .kv("weights_version", weights.version()).kv("replay", trainer->replay_size())
        .kv("rejected_checkpoints", rejected_checkpoints);
  }
};

Learner::Learner(LearnerConfig config) : impl_(new Impl(std::move(config))) {}
Learner::~Learner() = default;

std::string Learner::endpoint() const { return impl_->server.endpoint(); }
std::string Learner::metrics_address() const { return impl_->metrics ? impl_->metrics->address() : ""; }
const PlacementAgent& Learner::agent() const { return *impl_->agent; }

LearnerStatus Learner::status() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->status;
}

LearnerResult Learner::Run(const std::function<void(const EpisodeRecord&)>& on_episode) {
  Impl& m = *impl_;
  m.start = Clock::now();
  m.heartbeats.Restart();
  LogInfo("learner_started").kv("endpoint", endpoint()).kv("workload", m.config.workload.name)
      .kv("dram_limit_bytes", m.config.env.dram_limit_bytes).kv("episodes", m.config.episodes)
      .kv("agent", m.agent->name()).kv("device", m.agent->device_name()).kv("replay", ReplayKindName(m.config.replay))
      .kv("samples_per_insert", m.trainer->samples_per_insert()).kv("exploration", ExplorationKindName(m.config.exploration))
      .kv("resumed_at_episode", m.result.resumed_at_episode).kv("weights_version", m.weights.version());
  m.SyncStatus(true);
  m.trainer->Start();
  m.StartEvaluator();
  bool hurry = false;
  while (!stop_.load() && m.result.episodes < m.config.episodes && !m.result.converged) {
    if (m.trainer->failed()) {
      m.result.failure = "the training thread failed";
      LogError("learner_stopping").kv("reason", m.result.failure);
      break;
    }
    if (m.fleet.NoWorkerTakesTheTask(Clock::now(), std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                                       m.config.task_refusal_give_up_seconds)))) {
      std::ostringstream failure;
      failure << "no worker accepted the task for " << m.config.task_refusal_give_up_seconds
              << " s; the latest refusal: " << m.fleet.last_refusal();
      m.result.failure = failure.str();
      LogError("learner_stopping").kv("reason", m.result.failure);
      break;
    }
    if (m.config.max_seconds > 0 && SecondsSince(m.start) > m.config.max_seconds) {
      LogWarn("learner_time_limit").kv("seconds", m.config.max_seconds);
      hurry = true;
      break;
    }
    // Drain everything queued before the liveness check, so that a busy
    // learner does not expire workers whose heartbeats sit in its queue.
    // Wait only when there is no training to do.
    // Bounded, so that a flood of frames cannot starve heartbeats and training.
    auto wait = std::chrono::milliseconds(2);
    const auto drain_until = Clock::now() + std::chrono::milliseconds(20);
    bool queue_drained = false;
    while (m.trainer->staged_transitions() < Impl::kMaxStagedTransitions) {
      auto in = m.server.Receive(wait);
      if (!in) {
        queue_drained = true;
        break;
      }
      wait = std::chrono::milliseconds(0);
      try {
        m.HandleFrame(*in, on_episode);
      } catch (const std::exception& e) {
        // A frame that decoded but could not be processed must not take
        // the learner down.
        ++m.result.counters.malformed_frames;
        LogError("frame_failed").kv("detail", e.what());
      }
      if (m.result.episodes >= m.config.episodes || m.result.converged || Clock::now() > drain_until) break;
    }
    m.CollectInserted();
    m.ApplyEvaluations();
    m.MaybeBroadcastWeights();
    m.result.counters.workers_expired += m.heartbeats.KeepAlive(queue_drained);
    m.SyncStatus(true);
    if (m.metrics)
      m.metrics->Sync(m.result.counters, m.fleet.size(), m.trainer->replay_items(), m.weights.version(),
                      m.trainer->updates());
  }
  m.StopTrainer(hurry || stop_.load());
  // Every evaluation asked for is booked, however the run ended.
  m.DrainEvaluations();
  m.StopEvaluator();
  const std::string shutdown_reason = m.result.converged ? "training converged" : "training finished";
  m.Broadcast(EncodeMessage(ShutdownMsg{shutdown_reason}));
  if (!m.config.run_dir.empty()) m.Checkpoint();
  if (!m.config.run_dir.empty() && !m.fastest.empty()) {
    const std::string path = m.CheckpointDir() + "/" + m.agent->name() + "-fastest.ckpt";
    try {  // like Checkpoint(): a full disk loses this file, not the run's result
      m.fastest.SaveCheckpoint(path, m.agent->name(), m.agent->config_json());
    } catch (const std::exception& e) {
      LogError("fastest_policy_not_saved").kv("path", path).kv("detail", e.what());
    }
  }

  m.result.greedy_summary = m.Evaluate();
  m.result.greedy_plan = m.result.greedy_summary.plan;
  // The ILP the fastest evaluated policy's network guides, then the search
  // from that policy's greedy plan, from the ILP's plan and from the
  // configured starts, whichever is faster (not when told to stop).
  if (m.config.plan_ilp.time_limit_seconds > 0 && !m.fastest.empty() && !stop_.load()) {
    m.result.ilp = m.fastest.SolveIlp(m.config.workload, m.config.env, m.agent->name(), m.agent->config_json(),
                                      m.config.plan_ilp);
    m.result.ran_ilp = true;
  }
  if (m.config.plan_search.max_rollouts > 1 && !m.fastest.empty() && !stop_.load()) {
    std::vector<PlacementPlan> starting_plans;
    if (m.result.ran_ilp) starting_plans.push_back(m.result.ilp.plan);
    starting_plans.insert(starting_plans.end(), m.config.search_starts.begin(), m.config.search_starts.end());
    FastestPolicy::StartedSearch s = m.fastest.SearchKeepingStarts(
        m.config.workload, m.config.env, m.agent->name(), m.agent->config_json(), m.config.plan_search, starting_plans);
    m.result.search = std::move(s.search);
    m.result.search_started_from = std::move(s.started_from);
    m.result.search_kept_start = s.kept_start;
    m.result.searched = true;
  }
  m.result.updates = m.agent->updates();
  m.result.agent = m.agent->name();
  m.result.weights_version = m.weights.version();
  m.result.has_best_plan = m.scores.has_best_plan();
  m.result.best_plan = m.scores.best_plan();
  m.result.best_runtime_ns = m.scores.best_runtime_ns();
  m.result.measurements = m.measurements->All().entries;
  m.result.evaluation_rewards = m.scores.evaluation_rewards();
  m.result.best_evaluation_reward = m.scores.best_evaluation_reward().value_or(0);
  m.result.wall_seconds = m.Elapsed();
  m.result.rate_limiter = m.trainer->limiter_counters();
  m.result.samples_per_insert = m.trainer->samples_per_insert();
  m.result.replay_max_priority = m.trainer->replay_max_priority();
  m.result.prioritized_updates = m.trainer->prioritized_updates();
  m.SyncStatus(false);
  LogInfo("learner_finished").kv("episodes", m.result.episodes).kv("updates", m.result.updates)
      .kv("transitions", m.result.counters.transitions_ingested).kv("seconds", m.result.wall_seconds)
      .kv("converged", m.result.converged).kv("converged_at_episode", m.result.converged_at_episode)
      .kv("duplicate_batches", m.result.counters.duplicate_batches)
      .kv("duplicate_reports", m.result.counters.duplicate_reports);
  m.heartbeats.Farewell(shutdown_reason);
  return m.result;
}

}  // namespace tensortier
