#include "learner/learner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "agents/prioritized_replay.h"
#include "common/files.h"
#include "common/log.h"
#include "envs/cost_model.h"
#include "envs/workload_io.h"
#include "learner/checkpoint_store.h"
#include "learner/episode_ledger.h"
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
  uint64_t incarnation = 0;  // the dedupe key's first half (never 0: see DedupeKey)
  uint32_t exploration_index = 0;
  std::string peer;
  std::string name;
  std::string host;
  std::string backend;
  Clock::time_point last_seen;
  uint64_t episodes = 0;
  uint64_t last_episode_id = 0;  // newest episode fully ingested
};

// Where a worker incarnation sits in the fleet: its id and its Ape-X
// exploration index survive its reconnects and the learner's restarts.
struct WorkerSlot {
  uint32_t id = 0;
  uint32_t exploration_index = 0;
};

// 2: the rate limiter's credit, ratio and recent episode lengths follow
// its counters. 3: episodes partly in replay (partly_in_replay) at the end.
// Versions 1 and 2 are still read.
constexpr uint64_t kCheckpointPayloadVersion = 3;

void SaveTransition(ByteWriter& w, const Transition& t) {
  w.PodVector(t.observation);
  w.Pod<uint8_t>(t.action);
  w.Pod<float>(t.reward);
  w.PodVector(t.next_observation);
  w.Bool(t.done);
}

Transition LoadTransition(ByteReader& r) {
  Transition t;
  t.observation = r.PodVector<float>();
  t.action = r.Pod<uint8_t>();
  t.reward = r.Pod<float>();
  t.next_observation = r.PodVector<float>();
  t.done = r.Bool();
  return t;
}

void SaveRecord(ByteWriter& w, const EpisodeRecord& r) {
  w.U64(r.episode);
  w.Pod(r.worker_id);
  w.U64(r.worker_episode);
  w.U64(r.policy_version);
  w.Pod(r.steps);
  for (double v : {r.step_reward_sum, r.episodic_reward, r.normalised_cost, r.runtime_ns}) w.F64(v);
  w.Bool(r.oom);
  for (double v : {r.epsilon, r.loss, r.mean_q, r.best_runtime_ns, r.wall_seconds}) w.F64(v);
  w.String(r.backend);
}

EpisodeRecord LoadRecord(ByteReader& r) {
  EpisodeRecord e;
  e.episode = r.U64();
  e.worker_id = r.Pod<uint32_t>();
  e.worker_episode = r.U64();
  e.policy_version = r.U64();
  e.steps = r.Pod<uint32_t>();
  e.step_reward_sum = r.F64();
  e.episodic_reward = r.F64();
  e.normalised_cost = r.F64();
  e.runtime_ns = r.F64();
  e.oom = r.Bool();
  e.epsilon = r.F64();
  e.loss = r.F64();
  e.mean_q = r.F64();
  e.best_runtime_ns = r.F64();
  e.wall_seconds = r.F64();
  e.backend = r.String();
  return e;
}

}  // namespace

// The agent the config names, shaped by the environment: it defines what
// the network sees and does.
std::unique_ptr<PlacementAgent> BuildAgent(LearnerConfig& config) {
  config.dqn.observation_size = config.sac.observation_size = kObservationSize;
  config.dqn.num_actions = config.sac.num_actions = 2;
  if (config.agent == AgentKind::kSac) return MakeAgent("sac", config.sac.ToJson());
  return MakeAgent("dqn", config.dqn.ToJson());
}

// Ape-X: epsilon_i = epsilon^(1 + alpha * i / (N - 1)) for worker i of N.
double ApexEpsilon(double epsilon, double alpha, uint32_t index, uint32_t workers) {
  if (workers <= 1) return epsilon;
  return std::pow(epsilon, 1.0 + alpha * static_cast<double>(index % workers) / static_cast<double>(workers - 1));
}

struct Learner::Impl {
  explicit Impl(LearnerConfig c) : config(std::move(c)), server(config.bind_endpoint, config.security) {
    if (!config.workload.finalized()) config.workload.Finalize();
    PlacementEnv probe(config.workload, config.env);  // validates the env settings up front
    // The derived samples-per-insert ratio needs the length of a typical
    // episode, and lengths vary 50x with the policy: random play, as early
    // exploration, is short (slow-tier tensors leave the decision scope), a
    // DRAM-first policy is long. Until episodes arrive, the start-up guess
    // is the midpoint of the two; then the ratio follows the mean length of
    // the last kRateWindowEpisodes reported episodes (ObserveEpisodeLength).
    std::mt19937_64 probe_rng(config.dqn.seed);
    const uint32_t random_steps =
        RunEpisode(probe, [&](const Observation&) { return static_cast<int>(probe_rng() & 1); }).steps;
    const uint32_t dram_first_steps = RunEpisode(probe, [](const Observation&) { return 0; }).steps;
    steps_per_episode = std::max<size_t>(1, (static_cast<size_t>(random_steps) + dram_first_steps) / 2);
    if (!(config.apex_epsilon > 0 && config.apex_epsilon <= 1) || !(config.apex_alpha >= 0))
      throw std::invalid_argument("Ape-X exploration needs 0 < epsilon <= 1 and alpha >= 0");
    if (config.converge_window > 0 && !(config.converge_tolerance >= 0))
      throw std::invalid_argument("converge tolerance must be >= 0");

    std::optional<std::string> payload;
    if (config.resume) payload = FindCheckpoint();
    if (payload) {
      RestoreAgentFrom(*payload);
    } else {
      agent = BuildAgent(config);
    }
    batch_size = static_cast<uint64_t>(config.agent == AgentKind::kSac ? config.sac.batch_size : config.dqn.batch_size);
    const AgentSchedule schedule = agent->schedule();
    if (config.replay == ReplayKind::kPrioritized) {
      if (!agent->supports_prioritized_replay())
        throw std::invalid_argument("prioritized replay needs an agent with a prioritised update; " +
                                    agent->name() + " has none");
      PrioritizedReplayConfig pc;
      pc.capacity = static_cast<size_t>(schedule.replay_capacity);
      pc.alpha = config.priority_alpha;
      pc.beta = config.priority_beta;
      prioritized = std::make_unique<PrioritizedReplay>(pc);
    } else {
      uniform = std::make_unique<ReplayBuffer>(static_cast<size_t>(schedule.replay_capacity));
    }
    samples_per_insert = config.samples_per_insert;
    derive_rate = samples_per_insert < 0;
    if (derive_rate) samples_per_insert = DerivedRate(static_cast<double>(steps_per_episode));
    if (samples_per_insert > 0) {
      RateLimiterConfig rc;
      rc.samples_per_insert = samples_per_insert;
      rc.min_size_to_sample = static_cast<uint64_t>(std::max(1, schedule.learning_starts));
      rc.error_buffer = ErrorBufferFor(samples_per_insert);
      limiter = std::make_unique<RateLimiter>(rc);
    }
    rng.seed(config.dqn.seed ^ 0x9e3779b97f4a7c15ull);
    result.replay = ReplayKindName(config.replay);
    result.samples_per_insert = samples_per_insert;
    result.exploration = ExplorationKindName(config.exploration);
    if (payload) RestoreStateFrom(*payload);

    base_task.task_id = 1;
    base_task.workload = config.workload;
    base_task.env = config.env;
    base_task.exploration.epsilon_start = config.dqn.epsilon_start;
    base_task.exploration.epsilon_end = config.dqn.epsilon_end;
    base_task.exploration.schedule_episodes = static_cast<uint32_t>(config.dqn.epsilon_decay_episodes);
    base_task.exploration.epsilon = config.dqn.epsilon_end;
    base_task.exploration.seed = config.dqn.seed;
    base_task.agent = agent->name();
    base_task.agent_config_json = agent->config_json();
    task_frame = EncodeMessage(base_task);
    PublishWeights(/*new_version=*/!payload);
    if (!config.run_dir.empty()) {
      MakeDirectories(config.run_dir);
      // Beside the checkpoints, so that `--resume RUN_DIR` finds the workload.
      WriteWorkloadFile(config.workload, config.run_dir + "/workload.ttwl");
    }
    metrics = LearnerMetrics::Start(config.metrics_address, config.metrics_sd_dir, config.workload, config.env,
                                    base_task.agent, agent->device_name(), replay_capacity());
  }

  ~Impl() {
    StopEvaluator();
    if (trainer.joinable()) StopTrainer();
  }

  LearnerConfig config;
  FleetServer server;
  std::unique_ptr<PlacementAgent> agent;
  std::unique_ptr<ReplayBuffer> uniform;           // one of these two
  std::unique_ptr<PrioritizedReplay> prioritized;
  std::unique_ptr<RateLimiter> limiter;            // null: updates_per_episode per report
  double samples_per_insert = 0;                   // the ratio in force
  bool derive_rate = false;                        // from episode lengths (no --samples-per-insert)
  static constexpr size_t kRateWindowEpisodes = 32;
  std::deque<uint32_t> recent_steps;               // lengths of the last reported episodes
  uint64_t recent_steps_sum = 0;
  double rate_logged = 0;
  uint64_t batch_size = 32;
  size_t steps_per_episode = 1;
  std::mt19937_64 rng;
  TaskMsg base_task;
  std::string task_frame;
  std::string weights_frame;
  uint64_t weights_version = 0;
  uint64_t weights_published_version = 0;   // weights_version advances per report, frames lag
  Clock::time_point weights_published_at;
  std::string weights_blob;                 // SerializeWeights() at weights_blob_updates
  uint64_t weights_blob_updates = 0;

  std::map<std::string, WorkerState> workers;  // by routing id
  std::map<uint64_t, WorkerSlot> slots;         // by incarnation
  std::map<uint64_t, std::string> peer_of;      // routing id by incarnation, connected workers only
  std::set<std::string> expired_peers;          // routing ids given up on and not registered since
  // Real measurements by (plan hash, backend), for this workload and DRAM limit.
  std::map<std::pair<uint64_t, std::string>, CachedMeasurement> measurements;
  uint32_t next_worker_id = 1;
  uint32_t next_exploration_index = 0;
  bool fleet_started = false;
  // By (incarnation, episode): batches taken (staged or in replay), batches
  // in replay, reports counted. An episode is acknowledged once it is in
  // replay and its report counted; checkpoints hold `batches_inserted`, so
  // that what was staged but not yet in replay is taken again when resent.
  EpisodeLedger batches_in, batches_inserted, reports_in;
  // By (incarnation, episode): how many of an episode's transitions replay
  // holds while the rest still waits on the rate limiter. A checkpoint saves
  // it, so that when the worker resends the episode after a resume those
  // rows are skipped, not inserted twice (resends are the same transitions
  // in the same order: the worker keeps them until acknowledged).
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> partly_in_replay;
  LearnerResult result;
  Clock::time_point start = Clock::now();
  double seconds_before = 0;                    // of the sessions before a resume
  std::unique_ptr<PlacementEnv> eval_env;
  std::unique_ptr<LearnerMetrics> metrics;  // null without --metrics-address
  std::vector<uint64_t> evaluation_updates;     // agent updates at each evaluation
  double last_loss = 0, last_q = 0;
  Clock::time_point last_heartbeat = Clock::now();  // KeepAlive's; network thread

  // ---- the evaluation thread. Periodic greedy evaluations roll out a
  // snapshot of the weights on a second agent of the same kind, so that the
  // network thread never waits for a rollout (seconds on big workloads) and
  // no lock is held during one. The network thread takes train_mu only to
  // copy the weights (EvaluationRequest), and applies finished evaluations
  // (ApplyEvaluations): every result.* field stays the network thread's.
  // At most one request waits: a newer one replaces it (the newest weights
  // are the ones worth evaluating; counted in result.evaluations_skipped).
  struct EvaluationRequest {
    std::string weights;            // SerializeWeights()
    uint64_t weights_version = 0;
    uint64_t updates = 0;           // agent->updates() of those weights
    uint64_t episode = 0;           // result.episodes when it was asked for
  };
  struct EvaluationOutcome {
    uint64_t weights_version = 0, updates = 0, episode = 0;
    bool ok = false;                // false: the evaluation threw (logged)
    EpisodeSummary summary;
    LearnerResult::EvaluationSpan span;
  };
  std::thread evaluator;
  std::mutex eval_mu;                        // guards eval_queued, eval_busy, eval_stop, eval_done
  std::condition_variable eval_cv;           // to the evaluation thread: a request, or stop
  std::condition_variable eval_done_cv;      // to the network thread: an outcome
  std::optional<EvaluationRequest> eval_queued;
  bool eval_busy = false;                    // a rollout is running
  bool eval_stop = false;
  std::vector<EvaluationOutcome> eval_done;
  std::atomic<bool> eval_cancel{false};      // abandon the running rollout (destruction)
  // The evaluation thread's own: its agent and env, and the best reward it
  // has seen (it writes <agent>-best.ckpt from the very weights it evaluated).
  std::string eval_agent_name, eval_agent_json;
  std::unique_ptr<PlacementAgent> eval_agent;
  std::unique_ptr<PlacementEnv> eval_thread_env;
  bool eval_best_known = false;
  double eval_best_reward = 0;

  // ---- the training thread. The network thread decodes and checks frames
  // and stages whole batches; the training thread moves them into replay
  // as the rate limiter lets it and trains in between. `train_mu` guards the
  // agent, replay and the loss sums: the network thread takes it to publish
  // weights, evaluate and checkpoint.
  struct StagedBatch {
    uint32_t worker_id = 0;
    uint64_t incarnation = 0;
    uint64_t episode_id = 0;
    size_t size = 0;                             // transitions
    std::unique_ptr<TransitionBatchFrame> frame;  // the wire form, or else:
    std::vector<Transition> transitions;
    std::vector<float> priorities;
    size_t next = 0;  // transitions already inserted
    size_t already_in_replay = 0;  // of them, inserted before a resume (partly_in_replay)
    // An episode in several chunks is staged chunk by chunk; only its last
    // chunk, once inserted, makes the episode count as taken in.
    bool completes_episode = true;
    uint64_t episode_transitions = 0;

    const std::vector<float>& row_priorities() const { return frame ? frame->priorities() : priorities; }
    std::optional<double> priority(size_t i) const {
      const std::vector<float>& p = row_priorities();
      return p.empty() ? std::nullopt : std::optional<double>(p[i]);
    }
  };
  struct Assembly {  // an episode's chunks as they arrive
    std::vector<std::unique_ptr<StagedBatch>> chunks;
    uint32_t received = 0;
    uint64_t transitions = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Assembly> assembling;  // (incarnation, episode)
  struct InsertedBatch {
    uint32_t worker_id = 0;
    uint64_t incarnation = 0;
    uint64_t episode_id = 0;
    uint64_t transitions = 0;
    bool completes_episode = true;
    uint64_t episode_transitions = 0;
  };
  std::mutex train_mu;
  double loss_sum = 0, q_sum = 0;  // of the updates since the last episode report
  uint64_t loss_n = 0;
  bool log_limiter_stall = true;
  std::deque<StagedBatch> trainer_pending;  // the training thread's own
  std::mutex staging_mu;                    // guards the four below
  std::condition_variable staging_cv;
  std::deque<StagedBatch> staged;
  std::vector<InsertedBatch> inserted;      // for the network thread: acks and counters
  uint64_t fixed_updates_owed = 0;          // without a limiter: updates_per_episode per report
  bool trainer_stop = false;
  bool trainer_hurry = false;               // stopping on Stop() or the time limit
  std::atomic<uint64_t> staged_transitions{0};
  std::atomic<uint64_t> updates_done{0};
  std::atomic<uint64_t> replay_items{0};
  std::atomic<uint64_t> prioritized_updates{0};
  std::thread trainer;
  std::atomic<bool> trainer_failed{false};
  // std::mutex is not fair: the trainer, relocking in a loop, could keep the
  // network thread (heartbeats!) waiting indefinitely. It steps aside while
  // this is non-zero.
  std::atomic<int> network_waiting{0};
  std::unique_lock<std::mutex> LockTraining() {
    ++network_waiting;
    std::unique_lock<std::mutex> lock(train_mu);
    --network_waiting;
    return lock;
  }
  // Past this many staged transitions the network thread stops reading
  // frames until training catches up (workers block on their acks long before).
  static constexpr uint64_t kMaxStagedTransitions = 1u << 20;

  mutable std::mutex status_mu;
  LearnerStatus status;

  size_t replay_size() const { return uniform ? uniform->size() : prioritized->size(); }
  size_t replay_capacity() const { return uniform ? uniform->capacity() : prioritized->capacity(); }
  double Elapsed() const { return seconds_before + SecondsSince(start); }

  // Encodes the weights frame for the current version. The Torch
  // serialisation is redone only when gradient steps changed the weights
  // (an ingest-only learner never repeats it). Under train_mu.
  void PublishWeights(bool new_version = true) {
    if (new_version) ++weights_version;
    const uint64_t updates_now = agent->updates();
    if (weights_blob.empty() || updates_now != weights_blob_updates) {
      weights_blob = agent->SerializeWeights();
      weights_blob_updates = updates_now;
    }
    WeightsMsg w;
    w.version = weights_version;
    w.agent = agent->name();
    w.blob = weights_blob;
    weights_frame = EncodeMessage(w);
    weights_published_version = weights_version;
    weights_published_at = Clock::now();
  }

  // Sends the newest weights to every worker if reports advanced the
  // version and the publish interval has passed. Network thread.
  void MaybeBroadcastWeights(bool force = false) {
    if (weights_version <= weights_published_version) return;
    const auto interval = std::chrono::milliseconds(config.weights_publish_interval_ms);
    if (!force && Clock::now() - weights_published_at < interval) return;
    {
      std::unique_lock<std::mutex> train_lock = LockTraining();
      PublishWeights(/*new_version=*/false);
    }
    Broadcast(weights_frame);
  }

  void Broadcast(const std::string& frame) {
    for (auto& [peer, state] : workers) server.Send(peer, frame);
  }

  void Reply(const std::string& peer, ErrorCode code, const std::string& reason) {
    server.Send(peer, EncodeMessage(ErrorMsg{code, reason}));
  }

  void SyncStatus(bool running) {
    std::lock_guard<std::mutex> lock(status_mu);
    status.counters = result.counters;
    status.episodes = result.episodes;
    status.weights_version = weights_version;
    status.updates = updates_done.load();
    status.workers_connected = workers.size();
    status.running = running;
  }

  void HandleFrame(const IncomingFrame& in, const std::function<void(const EpisodeRecord&)>& on_episode) {
    ++result.counters.frames_received;
    // Transitions, nearly every frame, stay in wire form until the training
    // thread copies them into replay rows (codec.h).
    if (auto frame = TransitionBatchFrame::Open(in.frame.data(), in.frame.size())) {
      auto it = workers.find(in.peer);
      if (it == workers.end()) {
        ++result.counters.unknown_worker_frames;
        Reply(in.peer, ErrorCode::kUnknownWorker, "register first");
        return;
      }
      it->second.last_seen = Clock::now();
      return OnTransitionFrame(it->second, std::move(frame));
    }
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

  std::string TaskFrameFor(const WorkerState& w) const {
    if (config.exploration != ExplorationKind::kApex) return task_frame;
    TaskMsg t = base_task;
    const uint32_t n = config.apex_workers > 0 ? config.apex_workers : std::max<uint32_t>(config.min_workers, 1);
    t.exploration.schedule_episodes = 0;  // a fixed epsilon per worker
    t.exploration.epsilon = ApexEpsilon(config.apex_epsilon, config.apex_alpha, w.exploration_index, n);
    return EncodeMessage(t);
  }

  void OnRegister(const std::string& peer, const RegisterMsg& reg) {
    expired_peers.erase(peer);
    // Old workers send no incarnation: their routing id's worker id stands in
    // (with the top bit set so it cannot meet a real incarnation).
    const bool known_incarnation = reg.incarnation != 0;
    WorkerState& w = workers[peer];
    if (known_incarnation) {
      // The same process again on a new socket (it reconnected, or this
      // learner restarted): same id, same exploration; forget the old socket.
      auto slot = slots.find(reg.incarnation);
      if (slot != slots.end()) {
        for (auto it = workers.begin(); it != workers.end();) {
          if (it->first != peer && it->second.incarnation == reg.incarnation) it = workers.erase(it);
          else ++it;
        }
        w.id = slot->second.id;
        w.exploration_index = slot->second.exploration_index;
      }
    }
    if (w.id == 0) {
      w.id = next_worker_id++;
      w.exploration_index = next_exploration_index++;
      ++result.counters.workers_registered;
      result.workers_seen.push_back(w.id);
    }
    w.incarnation = known_incarnation ? reg.incarnation : ((1ull << 63) | w.id);
    slots[w.incarnation] = WorkerSlot{w.id, w.exploration_index};
    peer_of[w.incarnation] = peer;
    w.peer = peer;
    w.name = reg.worker_name;
    w.host = reg.host;
    w.backend = reg.slow_tier_backend;
    w.last_seen = Clock::now();
    LogInfo("worker_registered").kv("worker", w.id).kv("name", reg.worker_name).kv("host", reg.host)
        .kv("pid", reg.pid).kv("backend", reg.slow_tier_backend).kv("incarnation", reg.incarnation);
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
        server.Send(p, TaskFrameFor(state));
        server.Send(p, weights_frame);
        SendMeasurements(p);
      }
      return;
    }
    server.Send(peer, TaskFrameFor(w));
    server.Send(peer, weights_frame);
    SendMeasurements(peer);
  }

  MeasurementCacheMsg MeasurementsMsg() const {
    MeasurementCacheMsg m;
    m.workload_signature = config.workload.Signature();
    m.dram_limit_bytes = config.env.dram_limit_bytes;
    return m;
  }

  void SendMeasurements(const std::string& peer) {
    if (measurements.empty()) return;
    MeasurementCacheMsg m = MeasurementsMsg();
    for (const auto& [key, e] : measurements) m.entries.push_back(e);
    server.Send(peer, EncodeMessage(m));
  }

  // Real measurements go into the cache and out to every worker, so that
  // the same plan is not executed twice on one backend.
  void CacheMeasurement(const EpisodeReportMsg& report) {
    if (report.measurement_cached) {
      ++result.counters.measurement_cache_hits;
      return;
    }
    if (!report.counters.measured) return;
    const auto key = std::make_pair(report.plan.Hash(), report.backend);
    if (measurements.count(key)) {
      ++result.counters.measurement_cache_redundant;
      return;
    }
    ++result.counters.measurement_cache_misses;
    // With the reference runtimes of the worker that measured it, so that a
    // reward rescored from the entry is normalised on that same machine.
    CachedMeasurement e{key.first,          report.backend,        report.runtime_ns, report.min_runtime_ns,
                        report.max_runtime_ns, report.oom, report.counters};
    measurements[key] = e;
    MeasurementCacheMsg m = MeasurementsMsg();
    m.entries.push_back(e);
    Broadcast(EncodeMessage(m));
  }

  // An episode is acknowledged once both its transitions and its report are
  // in; a worker resends what stays unacknowledged, so a duplicate of an
  // acknowledged episode is answered again (the first ack may have been lost).
  void MaybeAck(WorkerState& worker, uint64_t episode_id) {
    if (!batches_inserted.Contains(worker.incarnation, episode_id) || !reports_in.Contains(worker.incarnation, episode_id))
      return;
    worker.last_episode_id = std::max(worker.last_episode_id, episode_id);
    HeartbeatMsg ack{worker.id, worker.last_episode_id, {episode_id}};
    server.Send(worker.peer, EncodeMessage(ack));
    ++result.counters.episodes_acked;
  }

  void OnTransitionFrame(WorkerState& worker, std::unique_ptr<TransitionBatchFrame> frame) {
    if (frame->worker_id() != worker.id) {
      ++result.counters.unknown_worker_frames;
      Reply(worker.peer, ErrorCode::kUnknownWorker, "batch names another worker");
      return;
    }
    const uint64_t episode_id = frame->episode_id();
    if (batches_in.Contains(worker.incarnation, episode_id)) {
      ++result.counters.duplicate_batches;
      MaybeAck(worker, episode_id);
      return;
    }
    if (frame->size() > 0 &&
        (frame->observation_floats() != static_cast<size_t>(kObservationSize) || frame->max_action() >= 2)) {
      ++result.counters.malformed_frames;
      Reply(worker.peer, ErrorCode::kMalformed, "transition of the wrong shape");
      return;
    }
    if (!PrioritiesValid(worker, frame->priorities(), frame->size())) return;
    StagedBatch staged_batch;
    staged_batch.worker_id = worker.id;
    staged_batch.incarnation = worker.incarnation;
    staged_batch.episode_id = episode_id;
    staged_batch.size = frame->size();
    const uint32_t chunk_index = frame->chunk_index(), chunk_count = frame->chunk_count();
    staged_batch.frame = std::move(frame);
    AcceptChunk(worker, chunk_index, chunk_count, std::move(staged_batch));
  }

  // Stages a whole episode's batch now, or a chunk of one once all of its
  // chunks are here (in any order; a resent chunk counts as a duplicate).
  void AcceptChunk(WorkerState& worker, uint32_t chunk_index, uint32_t chunk_count, StagedBatch batch) {
    if (chunk_count > kMaxBatchChunks || chunk_index >= chunk_count) {
      ++result.counters.malformed_frames;
      Reply(worker.peer, ErrorCode::kMalformed,
            "chunk " + std::to_string(chunk_index) + " of " + std::to_string(chunk_count) + " is out of range");
      return;
    }
    const uint64_t episode_id = batch.episode_id;
    if (chunk_count == 1) {
      batches_in.Insert(worker.incarnation, episode_id);
      batch.episode_transitions = batch.size;
      SkipWhatReplayHolds({&batch});
      Stage(std::move(batch));
      return;
    }
    const auto key = std::make_pair(worker.incarnation, episode_id);
    auto it = assembling.find(key);
    if (it == assembling.end()) {
      DropStaleAssemblies(worker.incarnation);
      it = assembling.emplace(key, Assembly{}).first;
      it->second.chunks.resize(chunk_count);
    }
    Assembly& a = it->second;
    if (a.chunks.size() != chunk_count) {
      ++result.counters.malformed_frames;
      Reply(worker.peer, ErrorCode::kMalformed, "the chunks of episode " + std::to_string(episode_id) +
                                                    " disagree on their count");
      assembling.erase(it);
      return;
    }
    if (a.chunks[chunk_index]) {
      ++result.counters.duplicate_batches;
      return;
    }
    a.transitions += batch.size;
    a.chunks[chunk_index] = std::make_unique<StagedBatch>(std::move(batch));
    if (++a.received < chunk_count) return;
    batches_in.Insert(worker.incarnation, episode_id);
    const uint64_t transitions = a.transitions;
    std::vector<std::unique_ptr<StagedBatch>> chunks = std::move(a.chunks);
    assembling.erase(it);
    std::vector<StagedBatch*> in_order;
    for (size_t i = 0; i < chunks.size(); ++i) {
      chunks[i]->completes_episode = i + 1 == chunks.size();
      chunks[i]->episode_transitions = transitions;
      in_order.push_back(chunks[i].get());
    }
    SkipWhatReplayHolds(in_order);
    for (auto& chunk : chunks) Stage(std::move(*chunk));
  }

  // An episode resent after a resume whose first transitions the
  // checkpointed replay already holds: those rows are marked inserted.
  void SkipWhatReplayHolds(const std::vector<StagedBatch*>& chunks) {
    if (chunks.empty()) return;
    auto it = partly_in_replay.find({chunks.front()->incarnation, chunks.front()->episode_id});
    if (it == partly_in_replay.end()) return;
    uint64_t skip = it->second;
    if (skip > chunks.front()->episode_transitions) {
      LogWarn("partial_episode_mismatch").kv("incarnation", it->first.first).kv("episode", it->first.second)
          .kv("in_replay", skip).kv("resent", chunks.front()->episode_transitions);
      skip = chunks.front()->episode_transitions;
      it->second = skip;
    }
    for (StagedBatch* b : chunks) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(skip, b->size));
      b->next = b->already_in_replay = n;
      skip -= n;
    }
  }

  // partly_in_replay as a checkpoint must store it: with the rows of the
  // batches the trainer has started on. Under train_mu.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> PartlyInReplayNow() {
    auto now = partly_in_replay;
    std::lock_guard<std::mutex> lock(staging_mu);
    for (const StagedBatch& b : trainer_pending)
      if (b.next > b.already_in_replay) now[{b.incarnation, b.episode_id}] += b.next - b.already_in_replay;
    return now;
  }

  // Flow control keeps a worker to two episodes in flight; partial episodes
  // beyond a few per incarnation were abandoned (the worker restarted and
  // will resend whole episodes): their memory is freed.
  void DropStaleAssemblies(uint64_t incarnation) {
    constexpr size_t kMaxAssembling = 4;
    auto first = assembling.lower_bound({incarnation, 0});
    size_t n = 0;
    for (auto it = first; it != assembling.end() && it->first.first == incarnation; ++it) ++n;
    while (n-- >= kMaxAssembling) {
      LogWarn("partial_episode_dropped").kv("incarnation", incarnation).kv("episode", first->first.second)
          .kv("chunks_received", first->second.received).kv("chunks", first->second.chunks.size());
      first = assembling.erase(first);
    }
  }

  bool PrioritiesValid(WorkerState& worker, const std::vector<float>& priorities, size_t transitions) {
    if (!priorities.empty() && priorities.size() != transitions) {
      ++result.counters.malformed_frames;
      Reply(worker.peer, ErrorCode::kMalformed, "priorities do not match the transitions");
      return false;
    }
    for (float p : priorities)
      if (!(p >= 0) || !std::isfinite(p)) {
        ++result.counters.malformed_frames;
        Reply(worker.peer, ErrorCode::kMalformed, "a priority is negative or not finite");
        return false;
      }
    return true;
  }

  void Stage(StagedBatch staged_batch) {
    const uint64_t n = staged_batch.size - staged_batch.next;
    {
      std::lock_guard<std::mutex> lock(staging_mu);
      staged.push_back(std::move(staged_batch));
    }
    staged_transitions += n;
    staging_cv.notify_one();
  }

  void OnTransitions(WorkerState& worker, TransitionBatchMsg& batch) {
    if (batch.worker_id != worker.id) {
      ++result.counters.unknown_worker_frames;
      Reply(worker.peer, ErrorCode::kUnknownWorker, "batch names another worker");
      return;
    }
    if (batches_in.Contains(worker.incarnation, batch.episode_id)) {
      ++result.counters.duplicate_batches;
      MaybeAck(worker, batch.episode_id);
      return;
    }
    const size_t obs_size = static_cast<size_t>(kObservationSize);
    for (const Transition& t : batch.transitions) {
      if (t.observation.size() != obs_size || t.next_observation.size() != obs_size || t.action >= 2) {
        ++result.counters.malformed_frames;
        Reply(worker.peer, ErrorCode::kMalformed, "transition of the wrong shape");
        return;
      }
    }
    if (!PrioritiesValid(worker, batch.priorities, batch.transitions.size())) return;
    StagedBatch staged_batch;
    staged_batch.worker_id = worker.id;
    staged_batch.incarnation = worker.incarnation;
    staged_batch.episode_id = batch.episode_id;
    staged_batch.size = batch.transitions.size();
    staged_batch.transitions = std::move(batch.transitions);
    staged_batch.priorities = std::move(batch.priorities);
    AcceptChunk(worker, batch.chunk_index, std::max<uint32_t>(1, batch.chunk_count), std::move(staged_batch));
  }

  // Counts what the training thread put into replay and acknowledges the
  // episodes that are complete now. Network thread.
  void CollectInserted() {
    std::vector<InsertedBatch> done;
    {
      std::lock_guard<std::mutex> lock(staging_mu);
      done.swap(inserted);
    }
    for (const InsertedBatch& b : done) {
      result.counters.transitions_ingested += b.transitions;
      if (!b.completes_episode) {
        partly_in_replay[{b.incarnation, b.episode_id}] += b.transitions;
        continue;
      }
      partly_in_replay.erase({b.incarnation, b.episode_id});
      batches_inserted.Insert(b.incarnation, b.episode_id);
      if (config.keep_batch_log)
        result.batches.push_back({b.worker_id, b.incarnation, b.episode_id, b.episode_transitions});
      auto peer = peer_of.find(b.incarnation);
      if (peer == peer_of.end()) continue;  // gone: it will resend, and be acked then
      auto w = workers.find(peer->second);
      if (w != workers.end()) MaybeAck(w->second, b.episode_id);
    }
  }

  // ------------------------------------------------------ training thread

  // Row i of a staged batch into replay, copied into the row it overwrites.
  void Insert(StagedBatch& b, size_t i, std::optional<double> priority) {
    const size_t before = replay_size();
    auto fill = [&](Transition& row) {
      if (b.frame) b.frame->CopyRow(i, row);
      else row = std::move(b.transitions[i]);
    };
    if (uniform) uniform->AddInPlace(fill);
    else prioritized->AddInPlace(fill, priority);
    replay_items.store(replay_size());
    if (limiter) {
      limiter->OnInsert(1);
      if (replay_size() == before) limiter->OnDelete(1);  // the ring overwrote its oldest item
    }
  }

  void OneUpdate() {
    TrainStats s = uniform ? agent->Update(*uniform, rng) : agent->Update(*prioritized, rng);
    if (prioritized) ++prioritized_updates;
    ++updates_done;
    loss_sum += s.loss;
    q_sum += s.mean_q;
    ++loss_n;
  }

  // One gradient step if the limiter allows one now. Under train_mu.
  bool TrainStep() {
    if (!limiter || !limiter->SampleAllowed(batch_size)) return false;
    OneUpdate();
    limiter->OnSample(batch_size);
    return true;
  }

  // Moves staged transitions into replay while the limiter allows (Reverb's
  // inserter blocks while training is behind), finishing batches in order.
  // Under train_mu. Returns whether anything was inserted.
  // With `hurry` (Stop() or max_seconds) the limiter is bypassed: training
  // a backlog of staged transitions at the configured rate would hold the
  // stop up for as long as those updates take. A run that ends on its
  // episode count keeps the rate to the end.
  // updates_per_episode gradient steps of batch_size per episode of the
  // given length: what the fixed schedule trains, paced per transition.
  double DerivedRate(double steps_per_episode_now) const {
    return static_cast<double>(agent->schedule().updates_per_episode) * static_cast<double>(batch_size) /
           std::max(1.0, steps_per_episode_now);
  }

  // Slack for one insert and one batch either side, so that neither side
  // can wait on the other forever (rate_limiter.h); a configured buffer is
  // raised to that when the ratio outgrows it.
  double ErrorBufferFor(double rate) const {
    const double needed = rate + static_cast<double>(batch_size) + 1;
    return config.rate_limit_error_buffer > 0 ? std::max(config.rate_limit_error_buffer, std::max(1.0, rate))
                                              : needed;
  }

  // Network thread, per report: the derived ratio follows the mean length
  // of the recent episodes, for the inserts still to come.
  void ObserveEpisodeLength(uint32_t steps) {
    if (!limiter || !derive_rate || steps == 0) return;
    recent_steps.push_back(steps);
    recent_steps_sum += steps;
    if (recent_steps.size() > kRateWindowEpisodes) {
      recent_steps_sum -= recent_steps.front();
      recent_steps.pop_front();
    }
    const double mean_steps = static_cast<double>(recent_steps_sum) / static_cast<double>(recent_steps.size());
    samples_per_insert = DerivedRate(mean_steps);
    limiter->SetSamplesPerInsert(samples_per_insert, ErrorBufferFor(samples_per_insert));
    if (rate_logged == 0 || std::abs(samples_per_insert / rate_logged - 1) > 0.25) {
      rate_logged = samples_per_insert;
      LogInfo("replay_rate").kv("samples_per_insert", samples_per_insert).kv("mean_episode_steps", mean_steps)
          .kv("episodes_in_window", recent_steps.size());
    }
  }

  bool InsertAllowed(bool hurry = false) {
    bool any = false;
    while (!trainer_pending.empty()) {
      StagedBatch& b = trainer_pending.front();
      while (b.next < b.size) {
        if (limiter && !hurry && !limiter->InsertAllowed(1)) return any;
        // An episode is up to 10^6 transitions: let a waiting network thread
        // (heartbeats) in now and then; the batch goes on where it stopped.
        if (!hurry && (b.next & 1023) == 1023 && network_waiting.load() > 0) return any;
        const size_t i = b.next++;
        Insert(b, i, b.priority(i));
        --staged_transitions;
        any = true;
      }
      {
        std::lock_guard<std::mutex> lock(staging_mu);
        inserted.push_back({b.worker_id, b.incarnation, b.episode_id, b.size - b.already_in_replay,
                            b.completes_episode, b.episode_transitions});
      }
      trainer_pending.pop_front();
    }
    return any;
  }

  void TrainerLoop() {
    for (;;) {
      bool stopping = false, hurry = false;
      uint64_t owed = 0;
      {
        std::unique_lock<std::mutex> lock(staging_mu);
        const bool idle = trainer_pending.empty() && staged.empty() && fixed_updates_owed == 0 &&
                          !(limiter && limiter->SampleAllowed(batch_size));
        if (idle) staging_cv.wait_for(lock, std::chrono::milliseconds(5));
        while (!staged.empty()) {
          trainer_pending.push_back(std::move(staged.front()));
          staged.pop_front();
        }
        owed = fixed_updates_owed;
        fixed_updates_owed = 0;
        stopping = trainer_stop;
        hurry = trainer_hurry;
      }
      while (network_waiting.load() > 0) std::this_thread::yield();
      std::lock_guard<std::mutex> lock(train_mu);
      InsertAllowed(stopping && hurry);
      if (owed > 0 && replay_size() >= static_cast<size_t>(std::max(1, agent->schedule().learning_starts))) {
        uint64_t done = 0;
        while (done < owed && (stopping || done == 0 || network_waiting.load() == 0)) {
          OneUpdate();
          ++done;
        }
        if (done < owed) {  // the rest on the next turn, after the network thread
          std::lock_guard<std::mutex> staging(staging_mu);
          fixed_updates_owed += owed - done;
        }
      }
      // A few steps per turn, so that the network thread gets the lock often.
      bool trained = false;
      for (int i = 0; i < 4 && TrainStep(); ++i) trained = true;
      if (!trained && !trainer_pending.empty() && limiter && !limiter->InsertAllowed(1) &&
          !limiter->SampleAllowed(batch_size)) {
        // Cannot happen with the error buffer Validate insists on; never wait forever.
        if (log_limiter_stall) LogWarn("rate_limiter_stall").kv("state", limiter->ToJson());
        log_limiter_stall = false;
        StagedBatch& b = trainer_pending.front();
        const size_t i = b.next++;
        Insert(b, i, std::nullopt);
        --staged_transitions;
      }
      if (stopping && trainer_pending.empty()) {
        std::lock_guard<std::mutex> staging_lock(staging_mu);
        if (staged.empty()) return;
      }
    }
  }

  void StartTrainer() {
    trainer = std::thread([this] {
      try {
        TrainerLoop();
      } catch (const std::exception& e) {
        LogError("trainer_failed").kv("detail", e.what());
        trainer_failed.store(true);
      }
    });
  }

  // Lets the trainer put everything staged into replay (training as the
  // limiter demands), then joins it.
  void StopTrainer(bool hurry = false) {
    {
      std::lock_guard<std::mutex> lock(staging_mu);
      trainer_stop = true;
      trainer_hurry = hurry;
    }
    staging_cv.notify_all();
    if (trainer.joinable()) trainer.join();
    CollectInserted();
  }

  void OnEpisodeReport(WorkerState& worker, const EpisodeReportMsg& report,
                       const std::function<void(const EpisodeRecord&)>& on_episode) {
    if (!reports_in.Insert(worker.incarnation, report.episode_id)) {
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
    ObserveEpisodeLength(report.steps);

    if (!limiter) {
      {
        std::lock_guard<std::mutex> lock(staging_mu);
        fixed_updates_owed += static_cast<uint64_t>(std::max(0, agent->schedule().updates_per_episode));
      }
      staging_cv.notify_one();
    }
    std::unique_lock<std::mutex> train_lock = LockTraining();
    // Reports often arrive in bursts with no update between them: they
    // carry the newest loss rather than a zero.
    if (loss_n > 0) {
      last_loss = loss_sum / static_cast<double>(loss_n);
      last_q = q_sum / static_cast<double>(loss_n);
    }
    rec.loss = last_loss;
    rec.mean_q = last_q;
    loss_sum = q_sum = 0;
    loss_n = 0;
    train_lock.unlock();
    ++weights_version;
    MaybeBroadcastWeights(config.weights_publish_interval_ms == 0);
    MaybeAck(worker, report.episode_id);
    if (config.eval_interval_episodes > 0 && result.episodes % config.eval_interval_episodes == 0)
      RequestEvaluation();
    rec.best_runtime_ns = result.best_runtime_ns;
    rec.wall_seconds = Elapsed();
    result.records.push_back(rec);
    if (on_episode) on_episode(rec);
    if (metrics) metrics->OnEpisode(rec);
    if (!config.run_dir.empty() && config.checkpoint_interval_episodes > 0 &&
        result.episodes % config.checkpoint_interval_episodes == 0) {
      // The checkpoint holds every evaluation asked for so far (their
      // rewards, plans and the best reward that <agent>-best.ckpt matches).
      DrainEvaluations();
      auto lock = LockTraining();
      Checkpoint();
    }
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

  // A greedy rollout of the live agent on the cost model, recorded as an
  // evaluation. Network thread, with training stopped (the final one).
  EpisodeSummary Evaluate() {
    if (!eval_env) eval_env = std::make_unique<PlacementEnv>(config.workload, config.env);
    EpisodeSummary s = RunEpisode(*eval_env, [&](const Observation& o) { return agent->Greedy(o.data()); });
    s.plan.produced_by = agent->name() + "-greedy v" + std::to_string(weights_version);
    RecordEvaluation(s, agent->updates(), /*save_best=*/true);
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
    result.evaluation_rewards.push_back(reward);
    evaluation_updates.push_back(updates);
    if (result.evaluation_rewards.size() == 1 || reward > result.best_evaluation_reward) {
      result.best_evaluation_reward = reward;
      if (save_best) SaveBest(*agent, s);
    }
    if (!result.converged && Converged()) {
      result.converged = true;
      result.converged_at_episode = result.episodes;
      result.converged_at_seconds = Elapsed();
      LogInfo("converged").kv("episodes", result.episodes).kv("seconds", result.converged_at_seconds)
          .kv("evaluation_reward", reward).kv("best_evaluation_reward", result.best_evaluation_reward)
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
    EvaluationRequest req;
    {
      std::unique_lock<std::mutex> train_lock = LockTraining();
      const uint64_t updates_now = agent->updates();
      if (weights_blob.empty() || updates_now != weights_blob_updates) {
        weights_blob = agent->SerializeWeights();
        weights_blob_updates = updates_now;
      }
      req.weights = weights_blob;
      req.updates = updates_now;
    }
    req.weights_version = weights_version;
    req.episode = result.episodes;
    {
      std::lock_guard<std::mutex> lock(eval_mu);
      if (eval_queued) {
        ++result.evaluations_skipped;
        LogWarn("evaluation_skipped").kv("episode", eval_queued->episode).kv("replaced_by", req.episode);
      }
      eval_queued = std::move(req);
    }
    eval_cv.notify_one();
  }

  struct EvaluationCancelled {};

  void EvaluatorLoop() {
    for (;;) {
      EvaluationRequest req;
      {
        std::unique_lock<std::mutex> lock(eval_mu);
        eval_cv.wait(lock, [&] { return eval_stop || eval_queued.has_value(); });
        if (eval_stop) return;
        req = std::move(*eval_queued);
        eval_queued.reset();
        eval_busy = true;
      }
      EvaluationOutcome out;
      out.weights_version = req.weights_version;
      out.updates = req.updates;
      out.episode = req.episode;
      out.span.started = Clock::now();
      try {
        if (config.before_periodic_evaluation) config.before_periodic_evaluation();
        if (!eval_agent) eval_agent = MakeAgent(eval_agent_name, eval_agent_json);
        if (!eval_thread_env) eval_thread_env = std::make_unique<PlacementEnv>(config.workload, config.env);
        eval_agent->LoadWeights(req.weights);
        out.summary = RunEpisode(*eval_thread_env, [&](const Observation& o) {
          if (eval_cancel.load(std::memory_order_relaxed)) throw EvaluationCancelled{};
          return eval_agent->Greedy(o.data());
        });
        out.summary.plan.produced_by = eval_agent->name() + "-greedy v" + std::to_string(req.weights_version);
        out.ok = true;
        const double reward = out.summary.step_reward_sum + out.summary.episodic_reward;
        if (!eval_best_known || reward > eval_best_reward) {
          eval_best_known = true;
          eval_best_reward = reward;
          SaveBest(*eval_agent, out.summary);
        }
      } catch (const EvaluationCancelled&) {
        std::lock_guard<std::mutex> lock(eval_mu);
        eval_busy = false;
        return;
      } catch (const std::exception& e) {
        LogError("evaluation_failed").kv("episode", req.episode).kv("weights_version", req.weights_version)
            .kv("detail", e.what());
      } catch (...) {
        LogError("evaluation_failed").kv("episode", req.episode).kv("weights_version", req.weights_version)
            .kv("detail", "unknown exception");
      }
      out.span.finished = Clock::now();
      {
        std::lock_guard<std::mutex> lock(eval_mu);
        eval_done.push_back(std::move(out));
        eval_busy = false;
      }
      eval_done_cv.notify_all();
    }
  }

  // In Run, so that a constructor that throws leaves no thread behind.
  void StartEvaluator() {
    eval_agent_name = agent->name();
    eval_agent_json = agent->config_json();
    eval_best_known = !result.evaluation_rewards.empty();  // resumed: the checkpoint's best stands
    eval_best_reward = result.best_evaluation_reward;
    evaluator = std::thread([this] { EvaluatorLoop(); });
  }

  // Abandons what is queued or running and joins. Safe to call twice.
  void StopEvaluator() {
    if (!evaluator.joinable()) return;
    eval_cancel.store(true);
    {
      std::lock_guard<std::mutex> lock(eval_mu);
      eval_stop = true;
    }
    eval_cv.notify_all();
    evaluator.join();
  }

  // Books the evaluations that finished, in the order they were asked for.
  // Network thread.
  void ApplyEvaluations() {
    std::vector<EvaluationOutcome> done;
    {
      std::lock_guard<std::mutex> lock(eval_mu);
      done.swap(eval_done);
    }
    for (const EvaluationOutcome& o : done) {
      result.evaluation_spans.push_back(o.span);
      if (!o.ok) {
        ++result.evaluations_failed;
        continue;
      }
      RecordEvaluation(o.summary, o.updates, /*save_best=*/false);
    }
  }

  // Waits for the queued and running evaluations and books them, still
  // heartbeating (frames are not read meanwhile, so nobody is expired).
  // Network thread.
  void DrainEvaluations() {
    if (!evaluator.joinable()) return ApplyEvaluations();
    const auto tick = std::chrono::milliseconds(std::max<uint32_t>(1, config.heartbeat_interval_ms / 2));
    for (;;) {
      bool idle = false;
      {
        std::unique_lock<std::mutex> lock(eval_mu);
        idle = !eval_queued && !eval_busy;
        if (!idle && eval_done.empty()) eval_done_cv.wait_for(lock, tick);
      }
      ApplyEvaluations();
      if (idle) return;
      KeepAlive(last_heartbeat, /*queue_drained=*/false);
    }
  }

  // The stopping rule of LearnerConfig::converge_window. Evaluations before
  // the first gradient step do not count: an untrained policy is perfectly
  // stable.
  bool Converged() const {
    const size_t window = config.converge_window;
    if (window == 0) return false;
    std::vector<double> trained;
    for (size_t i = 0; i < result.evaluation_rewards.size(); ++i)
      if (evaluation_updates[i] > 0) trained.push_back(result.evaluation_rewards[i]);
    if (trained.size() < window + 1) return false;
    const auto first = trained.end() - static_cast<std::ptrdiff_t>(window);
    const double best_before = *std::max_element(trained.begin(), first);
    const double lo = *std::min_element(first, trained.end());
    const double hi = *std::max_element(first, trained.end());
    const double best = std::max(best_before, hi);
    const double tolerance = config.converge_tolerance * std::max(1.0, std::abs(best));
    return hi - lo <= tolerance && hi <= best_before + tolerance;
  }

  // ------------------------------------------------------------ checkpoints

  std::string CheckpointDir() const { return config.run_dir + "/checkpoints"; }

  // The agent's own checkpoint file stays where `tensortier export` looks
  // (checkpoints/<agent>.ckpt); the learner's checkpoint embeds its bytes.
  std::string AgentCheckpointBytes() {
    const std::string path = CheckpointDir() + "/" + agent->name() + ".ckpt";
    agent->SaveCheckpoint(path);
    return ReadFile(path);
  }

  std::string SavePayload() {
    const auto partly = PartlyInReplayNow();
    LearnerCounters counters = result.counters;
    for (const auto& [key, rows] : partly) {  // rows of started batches are in the saved replay
      auto counted = partly_in_replay.find(key);
      counters.transitions_ingested += rows - (counted == partly_in_replay.end() ? 0 : counted->second);
    }
    ByteWriter w;
    w.U64(kCheckpointPayloadVersion);
    w.String(agent->name());
    w.String(agent->config_json());
    w.String(AgentCheckpointBytes());
    w.U64(config.workload.Signature());
    w.U64(config.env.dram_limit_bytes);
    w.U64(result.episodes);
    w.U64(weights_version);
    w.U64(result.evaluations);
    w.Pod(next_worker_id);
    w.Pod(next_exploration_index);
    w.F64(Elapsed());
    w.Pod(counters);
    w.Bool(result.has_best_plan);
    w.String(result.has_best_plan ? SerializePlan(result.best_plan) : std::string());
    w.F64(result.best_runtime_ns);
    w.U64(result.records.size());
    for (const EpisodeRecord& r : result.records) SaveRecord(w, r);
    w.String(ReplayKindName(config.replay));
    if (uniform) {
      w.U64(uniform->items().size());
      for (const Transition& t : uniform->items()) SaveTransition(w, t);
      w.U64(uniform->next_slot());
      w.U64(uniform->total_added());
    } else {
      w.U64(prioritized->items().size());
      for (const Transition& t : prioritized->items()) SaveTransition(w, t);
      w.PodVector(prioritized->priorities());
      w.U64(prioritized->next_slot());
      w.U64(prioritized->total_added());
    }
    w.Bool(limiter != nullptr);
    if (limiter) {
      w.Pod(limiter->counters());
      w.F64(limiter->credit());
      w.F64(samples_per_insert);
      w.PodVector(std::vector<uint32_t>(recent_steps.begin(), recent_steps.end()));
    }
    batches_inserted.Save(w);
    reports_in.Save(w);
    w.U64(slots.size());
    for (const auto& [incarnation, slot] : slots) {
      w.U64(incarnation);
      w.Pod(slot);
    }
    w.PodVector(result.evaluation_rewards);
    w.PodVector(evaluation_updates);
    w.F64(result.best_evaluation_reward);
    w.PodVector(result.workers_seen);
    std::ostringstream rng_state;
    rng_state << rng;
    w.String(rng_state.str());
    MeasurementCacheMsg cache = MeasurementsMsg();
    for (const auto& [key, e] : measurements) cache.entries.push_back(e);
    w.String(EncodeMessage(cache));
    w.U64(partly.size());
    for (const auto& [key, rows] : partly) {
      w.U64(key.first);
      w.U64(key.second);
      w.U64(rows);
    }
    return std::move(w.bytes());
  }

  // Under train_mu (or with the trainer stopped).
  void Checkpoint() {
    CollectInserted();  // the ledger must say what replay holds
    try {
      CheckpointStore store(CheckpointDir(), config.checkpoints_kept);
      MakeDirectories(CheckpointDir());
      ++result.counters.checkpoints_written;
      const std::string path = store.Write(result.episodes, SavePayload());
      LogInfo("checkpoint").kv("path", path).kv("episodes", result.episodes).kv("weights_version", weights_version)
          .kv("replay", replay_size());
    } catch (const std::exception& e) {
      --result.counters.checkpoints_written;
      LogError("checkpoint_failed").kv("detail", e.what());
    }
  }

  // The newest checkpoint whose file verifies and whose payload loads into
  // a fresh agent; the ones it skipped are counted in checkpoints_rejected.
  std::optional<std::string> FindCheckpoint() {
    if (config.run_dir.empty()) throw std::invalid_argument("resume needs a run directory");
    CheckpointStore store(CheckpointDir());
    std::string mismatch;  // a good checkpoint of another run says more than "none usable"
    for (const std::string& path : store.List()) {
      try {
        std::string payload = CheckpointStore::ReadVerified(path);
        LearnerConfig probe_config = config;
        ParseAgent(payload, probe_config);  // throws on a payload that does not load
        result.resumed_from = path;
        return payload;
      } catch (const std::invalid_argument& e) {
        ++rejected_checkpoints;
        mismatch = path + ": " + e.what();
        LogWarn("checkpoint_rejected").kv("path", path).kv("detail", e.what());
      } catch (const std::exception& e) {
        ++rejected_checkpoints;
        LogWarn("checkpoint_rejected").kv("path", path).kv("detail", e.what());
      }
    }
    if (!mismatch.empty()) throw std::runtime_error("cannot resume: " + mismatch);
    throw std::runtime_error("no usable checkpoint in " + CheckpointDir());
  }
  uint64_t rejected_checkpoints = 0;

  // The payload's agent, built from the checkpoint's own settings on this
  // config's device, with its networks and optimisers loaded.
  std::unique_ptr<PlacementAgent> ParseAgent(const std::string& payload, LearnerConfig& c) {
    ByteReader r(payload);
    const uint64_t payload_version = r.U64();
    if (payload_version < 1 || payload_version > kCheckpointPayloadVersion)
      throw CheckpointError("checkpoint payload version " + std::to_string(payload_version) + "; this learner reads 1 to " +
                            std::to_string(kCheckpointPayloadVersion));
    const std::string name = r.String();
    const std::string json = r.String();
    const std::string bytes = r.String();
    if (name != AgentKindName(c.agent))
      throw std::invalid_argument("the checkpoint holds a " + name + " agent, not " + AgentKindName(c.agent));
    if (r.U64() != c.workload.Signature())
      throw std::invalid_argument("the checkpoint was trained on another workload");
    if (r.U64() != c.env.dram_limit_bytes)
      throw std::invalid_argument("the checkpoint was trained with another DRAM limit");
    const std::string device = name == "sac" ? c.sac.device : c.dqn.device;
    std::unique_ptr<PlacementAgent> a = MakeAgent(name, json, device);
    MakeDirectories(CheckpointDir());
    const std::string tmp = CheckpointDir() + "/.agent-load-" + std::to_string(::getpid()) + ".tmp";
    WriteFileAtomically(tmp, bytes);
    try {
      a->LoadCheckpoint(tmp);
    } catch (...) {
      std::remove(tmp.c_str());
      throw;
    }
    std::remove(tmp.c_str());
    // The run goes on with the checkpoint's network and training settings.
    if (name == "sac") {
      c.sac = SacConfig::FromJson(json);
      c.sac.device = device;
    } else {
      c.dqn = DqnConfig::FromJson(json);
      c.dqn.device = device;
    }
    return a;
  }

  void RestoreAgentFrom(const std::string& payload) { agent = ParseAgent(payload, config); }

  void RestoreStateFrom(const std::string& payload) {
    ByteReader r(payload);
    const uint64_t payload_version = r.U64();  // checked by ParseAgent
    r.String();
    r.String();
    r.String();
    r.U64();
    r.U64();
    result.episodes = r.U64();
    weights_version = r.U64();
    result.evaluations = r.U64();
    next_worker_id = r.Pod<uint32_t>();
    next_exploration_index = r.Pod<uint32_t>();
    seconds_before = r.F64();
    result.counters = r.Pod<LearnerCounters>();
    result.has_best_plan = r.Bool();
    const std::string plan = r.String();
    if (result.has_best_plan) result.best_plan = ParsePlan(plan);
    result.best_runtime_ns = r.F64();
    result.records.clear();
    for (uint64_t n = r.U64(); n > 0; --n) result.records.push_back(LoadRecord(r));
    if (r.String() != ReplayKindName(config.replay))
      throw std::invalid_argument("the checkpoint holds another kind of replay");
    std::vector<Transition> items(r.U64());
    for (Transition& t : items) t = LoadTransition(r);
    if (uniform) {
      const uint64_t next = r.U64(), total = r.U64();
      uniform->Restore(std::move(items), next, total);
    } else {
      std::vector<double> priorities = r.PodVector<double>();
      const uint64_t next = r.U64(), total = r.U64();
      prioritized->Restore(std::move(items), std::move(priorities), next, total);
    }
    if (r.Bool()) {
      const RateLimiterCounters counters = r.Pod<RateLimiterCounters>();
      std::optional<double> credit;
      if (payload_version >= 2) {
        credit = r.F64();
        const double saved_rate = r.F64();
        const std::vector<uint32_t> steps = r.PodVector<uint32_t>();
        if (limiter && derive_rate) {
          // Resume at the ratio the run had reached, not the start-up guess.
          recent_steps.assign(steps.begin(), steps.end());
          recent_steps_sum = std::accumulate(recent_steps.begin(), recent_steps.end(), uint64_t{0});
          if (std::isfinite(saved_rate) && saved_rate > 0) {
            samples_per_insert = saved_rate;
            limiter->SetSamplesPerInsert(samples_per_insert, ErrorBufferFor(samples_per_insert));
          }
        }
      }
      if (limiter) limiter->Restore(counters, credit);
    } else if (limiter) {
      // Started without a limiter: count what replay holds as inserted and
      // trained on, so that training picks up at the configured rate.
      RateLimiterCounters counters;
      counters.inserts = replay_size();
      counters.samples = static_cast<uint64_t>(samples_per_insert * static_cast<double>(replay_size()));
      limiter->Restore(counters);
    }
    batches_in.Load(r);
    reports_in.Load(r);
    batches_inserted = batches_in;
    replay_items.store(replay_size());
    slots.clear();
    for (uint64_t n = r.U64(); n > 0; --n) {
      const uint64_t incarnation = r.U64();
      slots[incarnation] = r.Pod<WorkerSlot>();
    }
    result.evaluation_rewards = r.PodVector<double>();
    evaluation_updates = r.PodVector<uint64_t>();
    if (evaluation_updates.size() != result.evaluation_rewards.size())
      throw CheckpointError("checkpoint evaluations do not line up");
    result.best_evaluation_reward = r.F64();
    result.workers_seen = r.PodVector<uint32_t>();
    std::istringstream rng_state(r.String());
    rng_state >> rng;
    const std::string cache_frame = r.String();
    DecodeResult cache = DecodeMessage(cache_frame.data(), cache_frame.size());
    if (!std::holds_alternative<Message>(cache) ||
        !std::holds_alternative<MeasurementCacheMsg>(std::get<Message>(cache)))
      throw CheckpointError("checkpoint measurement cache does not decode");
    for (CachedMeasurement& e : std::get<MeasurementCacheMsg>(std::get<Message>(cache)).entries)
      measurements[{e.plan_hash, e.backend}] = std::move(e);
    partly_in_replay.clear();
    if (payload_version >= 3)
      for (uint64_t n = r.U64(); n > 0; --n) {
        const uint64_t incarnation = r.U64(), episode = r.U64();
        partly_in_replay[{incarnation, episode}] = r.U64();
      }
    result.counters.checkpoints_rejected += rejected_checkpoints;
    result.resumed = true;
    result.resumed_at_episode = result.episodes;
    result.resumed_weights_version = weights_version;
    LogInfo("resumed").kv("checkpoint", result.resumed_from).kv("episodes", result.episodes)
        .kv("weights_version", weights_version).kv("replay", replay_size())
        .kv("rejected_checkpoints", rejected_checkpoints);
  }

  // The Shutdown broadcast reaches the registered workers only. A worker
  // given up on shortly before the end (a loaded machine starved it), or one
  // whose frames still wait unread, would retry until its give-up time: for
  // up to one liveness period, every peer that speaks gets a Shutdown too.
  void Farewell(const std::string& reason) {
    const std::string frame = EncodeMessage(ShutdownMsg{reason});
    std::set<std::string> told;
    for (const auto& [peer, state] : workers) told.insert(peer);
    const auto until = Clock::now() + std::chrono::milliseconds(config.heartbeat_interval_ms) * config.heartbeat_liveness;
    size_t late = 0;
    for (;;) {
      const bool waiting = std::any_of(expired_peers.begin(), expired_peers.end(),
                                       [&](const std::string& p) { return told.count(p) == 0; });
      auto in = server.Receive(std::chrono::milliseconds(waiting ? 20 : 0));
      if (in && told.insert(in->peer).second) {
        server.Send(in->peer, frame);
        ++late;
      }
      if ((!in && !waiting) || Clock::now() >= until) break;
    }
    if (late > 0) LogInfo("farewell").kv("peers", late).kv("reason", reason);
  }

  // Heartbeats every interval; expiry only when the last receive found
  // the queue empty. Any frame counts as a sign of life (HandleFrame), and a
  // busy learner (big batches, staging full) may not have read a worker's
  // frames yet: silence is only evidence once everything queued was read.
  // Flow-controlled workers stop sending when the learner falls behind, so
  // the queue does empty.
  void KeepAlive(Clock::time_point& last_heartbeat, bool queue_drained) {
    const auto interval = std::chrono::milliseconds(config.heartbeat_interval_ms);
    if (Clock::now() - last_heartbeat < interval) return;
    last_heartbeat = Clock::now();
    const auto deadline = interval * config.heartbeat_liveness;
    for (auto it = workers.begin(); it != workers.end();) {
      if (queue_drained && Clock::now() - it->second.last_seen > deadline) {
        LogWarn("worker_expired").kv("worker", it->second.id).kv("name", it->second.name)
            .kv("silent_ms", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->second.last_seen).count());
        ++result.counters.workers_expired;
        expired_peers.insert(it->first);
        auto p = peer_of.find(it->second.incarnation);
        if (p != peer_of.end() && p->second == it->first) peer_of.erase(p);
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

LearnerStatus Learner::status() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->status;
}

LearnerResult Learner::Run(const std::function<void(const EpisodeRecord&)>& on_episode) {
  Impl& m = *impl_;
  m.start = Clock::now();
  m.last_heartbeat = Clock::now();
  LogInfo("learner_started").kv("endpoint", endpoint()).kv("workload", m.config.workload.name)
      .kv("dram_limit_bytes", m.config.env.dram_limit_bytes).kv("episodes", m.config.episodes)
      .kv("agent", m.agent->name()).kv("device", m.agent->device_name()).kv("replay", ReplayKindName(m.config.replay))
      .kv("samples_per_insert", m.samples_per_insert).kv("exploration", ExplorationKindName(m.config.exploration))
      .kv("resumed_at_episode", m.result.resumed_at_episode).kv("weights_version", m.weights_version);
  m.SyncStatus(true);
  m.updates_done.store(m.agent->updates());
  m.StartTrainer();
  m.StartEvaluator();
  bool hurry = false;
  while (!stop_.load() && m.result.episodes < m.config.episodes && !m.result.converged) {
    if (m.trainer_failed.load()) {
      LogError("learner_stopping").kv("reason", "the training thread failed");
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
    while (m.staged_transitions.load() < Impl::kMaxStagedTransitions) {
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
    m.KeepAlive(m.last_heartbeat, queue_drained);
    m.SyncStatus(true);
    if (m.metrics)
      m.metrics->Sync(m.result.counters, m.workers.size(), m.replay_items.load(), m.weights_version,
                      m.updates_done.load());
  }
  m.StopTrainer(hurry || stop_.load());
  // Every evaluation asked for is booked, however the run ended.
  m.DrainEvaluations();
  m.StopEvaluator();
  const std::string shutdown_reason = m.result.converged ? "training converged" : "training finished";
  m.Broadcast(EncodeMessage(ShutdownMsg{shutdown_reason}));
  if (!m.config.run_dir.empty()) m.Checkpoint();

  m.result.greedy_summary = m.Evaluate();
  m.result.greedy_plan = m.result.greedy_summary.plan;
  m.result.updates = m.agent->updates();
  m.result.agent = m.agent->name();
  m.result.weights_version = m.weights_version;
  m.result.wall_seconds = m.Elapsed();
  if (m.limiter) m.result.rate_limiter = m.limiter->counters();
  m.result.samples_per_insert = m.samples_per_insert;
  if (m.prioritized) m.result.replay_max_priority = m.prioritized->max_priority();
  m.result.prioritized_updates = m.prioritized_updates.load();
  m.SyncStatus(false);
  LogInfo("learner_finished").kv("episodes", m.result.episodes).kv("updates", m.result.updates)
      .kv("transitions", m.result.counters.transitions_ingested).kv("seconds", m.result.wall_seconds)
      .kv("converged", m.result.converged).kv("converged_at_episode", m.result.converged_at_episode)
      .kv("duplicate_batches", m.result.counters.duplicate_batches)
      .kv("duplicate_reports", m.result.counters.duplicate_reports);
  m.Farewell(shutdown_reason);
  return m.result;
}

}  // namespace tensortier
