// The learner: accepts any number of workers on a ROUTER socket, hands each
// a task, ingests their transitions into replay (uniform or prioritised)
// through a Reverb-style rate limiter that paces training against ingest,
// trains the agent, publishes the policy's weights by version, and writes
// checksummed checkpoints it can resume from. Each (worker incarnation,
// episode) is ingested once and acknowledged; resent and duplicated frames
// are re-acknowledged, not counted. Three threads: Run's (network, frame
// checks, episode reports, checkpoints, booking evaluations), a training
// thread that copies staged batches from their frames into replay and
// trains as the rate limiter allows, and an evaluation thread that rolls out
// snapshots of the weights greedily (docs/architecture.md#learner).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/agent_kind.h"
#include "agents/dqn_agent.h"
#include "agents/sac_agent.h"
#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/plan_search.h"
#include "policies/guided_ilp.h"
#include "envs/workload.h"
#include "learner/imitation.h"
#include "protocol/messages.h"
#include "replay/rate_limiter.h"
#include "transport/security.h"

namespace tensortier {

// Replay: uniform, or prioritised (proportional, Ape-X style).
enum class ReplayKind { kUniform, kPrioritized };
inline constexpr EnumName<ReplayKind> kReplayKindNames[] = {{ReplayKind::kUniform, "uniform"},
                                                            {ReplayKind::kPrioritized, "prioritized"}};
inline ReplayKind ParseReplayKind(const std::string& name) { return ParseEnumName(kReplayKindNames, "replay", name); }
inline std::string ReplayKindName(ReplayKind kind) { return NameOfEnum(kReplayKindNames, kind); }

// DQN workers' exploration: one epsilon schedule for all, or Ape-X's fixed
// epsilon per worker.
enum class ExplorationKind { kSchedule, kApex };
inline constexpr EnumName<ExplorationKind> kExplorationKindNames[] = {{ExplorationKind::kSchedule, "schedule"},
                                                                      {ExplorationKind::kApex, "apex"}};
inline ExplorationKind ParseExplorationKind(const std::string& name) {
  return ParseEnumName(kExplorationKindNames, "exploration", name);
}
inline std::string ExplorationKindName(ExplorationKind kind) { return NameOfEnum(kExplorationKindNames, kind); }

// Defaults are those of `tensortier train` and `tensortier learner`: the CLI
// binds its flags to these fields (and to DqnConfig's, SacConfig's and
// EnvConfig's), with no defaults of its own.
struct LearnerConfig {
  std::string bind_endpoint = "tcp://127.0.0.1:5555";
  Workload workload;
  EnvConfig env;
  AgentKind agent = AgentKind::kDqn;
  DqnConfig dqn;                         // DQN's network and training settings; its seed and
                                         // epsilon schedule also drive the workers' exploration
  SacConfig sac;
  uint64_t episodes = 400;               // stop after this many episode reports
  uint32_t heartbeat_interval_ms = 1000;
  // Weights go out at most this often (encoded once, the same frame to
  // every worker); reports in between only advance the version, which
  // drives the workers' epsilon schedule. 0 = after every report.
  uint32_t weights_publish_interval_ms = 50;
  uint32_t heartbeat_liveness = 3;       // missed heartbeats before a worker is dead
  std::string run_dir;                   // where checkpoints and metrics go; "" = nowhere
  uint32_t checkpoint_interval_episodes = 50;
  double max_seconds = 0;                // 0 = no wall-clock limit
  uint32_t eval_interval_episodes = 10;  // greedy evaluation on the cost model; 0 = only at the end
  uint32_t min_workers = 1;              // hand out tasks once this many workers registered
  // Every worker refused the task (ErrorCode::kTaskRefused) and none sent an
  // episode for this long: the run ends with LearnerResult::failure.
  double task_refusal_give_up_seconds = 120;
  std::string metrics_address;           // Prometheus endpoint, e.g. 127.0.0.1:0; "" = none (metrics/)
  std::string metrics_sd_dir;            // write a file_sd target file there; "" = none
  TransportSecurity security;            // CURVE keys and allow-list, or plain text (docs/security.md)

  // Replay: uniform or prioritised (proportional, Ape-X style). A
  // transition enters with the priority its worker sent, or else the
  // largest priority so far (Ape-X's learner-side default: every new
  // transition is replayed soon); updates write |TD error| back. Both
  // agents (DQN, SAC) have a prioritised update.
  ReplayKind replay = ReplayKind::kUniform;
  double priority_alpha = 0.6;
  double priority_beta = 0.4;
  // Rate limiter (replay/rate_limiter.h): transitions drawn for gradient
  // steps per transition inserted. < 0: derived, updates_per_episode *
  // batch_size / the mean length of the last 32 reported episodes (a
  // start-up guess before any), so that each episode trains about
  // updates_per_episode steps whatever its length; 0: no limiter, updates_per_episode steps per episode report (and
  // none for batches that come without reports, e.g. an ingest benchmark).
  // Sampling waits for the agent's learning_starts transitions.
  double samples_per_insert = -1;
  double rate_limit_error_buffer = 0;    // items of slack; 0 = samples_per_insert + batch size + 1 (raised to the ratio if below)
  // Exploration of DQN workers: schedule (one epsilon decaying with the
  // weights version: worker/exploration.h) or apex (worker i of N acts with
  // a fixed apex_epsilon^(1 + apex_alpha * i / (N - 1)), Ape-X).
  ExplorationKind exploration = ExplorationKind::kSchedule;
  double apex_epsilon = 0.4;
  double apex_alpha = 7.0;
  uint32_t apex_workers = 0;             // N; 0 = min_workers
  // Convergence: stop when the last converge_window greedy evaluations
  // (after training began) lie within converge_tolerance * max(1, |best|)
  // of each other and none beats the best evaluation before them by more
  // than that. 0 = never stop early.
  uint32_t converge_window = 0;
  double converge_tolerance = 0.01;
  // Continue from the newest good checkpoint in run_dir/checkpoints (the
  // network's shape comes from the checkpoint). Throws if there is none.
  bool resume = false;
  // Start a new run from the network of this agent checkpoint (`train
  // --init`): a policy trained on other models, fine-tuned here. The agent
  // family must be this run's; the hidden sizes come from the checkpoint,
  // every other setting from this config. DQN takes the whole Q-network;
  // SAC only its actor (the critics start fresh). Imitation, when there are
  // expert_plans, starts from these weights. A directory is a portfolio of
  // checkpoints: the member with the fastest greedy plan on this workload
  // (learner/starting_policy.h). Ignored on a resume.
  std::string init_checkpoint;
  uint32_t checkpoints_kept = 2;
  bool keep_batch_log = false;           // fill LearnerResult::batches (tests)
  // Learning from demonstrations (learner/imitation.h): plans of other
  // policies for this task (train computes them: --demonstrations). Before
  // any worker plays, the agent imitates the cheapest of them (DQfD and
  // DAgger rounds); DQN then keeps mixing the demonstrations into its
  // updates. Empty: the agent starts from random weights. Not repeated on a
  // resume (the checkpoint has the imitated weights).
  std::vector<PlacementPlan> expert_plans;
  ImitationConfig imitation;
  // Then, before any worker plays: rounds of imitating the agent's own
  // searched plan (learner/imitation.h LearnFromOwnSearches; DQN). For a
  // network from --init on a model no baseline plan is wanted for. Not
  // repeated on a resume.
  SelfImitationConfig self_imitation;
  // After training and plan_ilp: a limited-discrepancy search guided by the
  // final network (envs/plan_search.h) from its greedy plan, from plan_ilp's
  // plan when that ran, and from search_starts, whichever is faster.
  // max_rollouts 1 = none.
  PlanSearchOptions plan_search = PlanTimeSearch();
  // Other planners' plans the final search may start from (`train`: its
  // comparison's fastest baseline plan, --no-search-from-baseline for none),
  // each named by its produced_by; one the search ends below is kept as
  // given (KeepFasterStart). On another machine's profiles the search from
  // the network's own plans ended 0.04-0.36 points below the relaxation on
  // eight of fourteen cells (docs/results/learning.md, session fifty-three):
  // a user's final plan should not be slower than a plan the run computed.
  // LearnerResult::search_started_from says where it went on from.
  std::vector<PlacementPlan> search_starts;
  // First AutoTM's ILP with the same network's surest decisions fixed, from
  // its greedy plan (policies/guided_ilp.h). time_limit_seconds 0 = none.
  GuidedIlpOptions plan_ilp;
  // Runs on the evaluation thread before each periodic greedy rollout (in
  // its span). Tests make evaluations as slow as they need with it, so that
  // what they show does not depend on how fast the machine rolls out.
  std::function<void()> before_periodic_evaluation;
};

// One row of metrics.csv.
struct EpisodeRecord {
  uint64_t episode = 0;        // order of arrival at the learner
  uint32_t worker_id = 0;
  uint64_t worker_episode = 0;
  uint64_t policy_version = 0;
  uint32_t steps = 0;
  double step_reward_sum = 0;
  double episodic_reward = 0;
  double normalised_cost = 0;
  double runtime_ns = 0;
  bool oom = false;
  double epsilon = 0;
  double loss = 0;             // mean over this episode's updates (0 before learning starts)
  double mean_q = 0;
  double best_runtime_ns = 0;  // best non-OOM plan so far
  double wall_seconds = 0;
  std::string backend;
};

// The counters a checkpoint holds, each a field of the checkpoint's
// Counters (learner/checkpoint.capnp; checkpoint_sections.cc copies them):
// a new one here needs its field there too.
struct CheckpointedCounters {
  uint64_t frames_received = 0;
  uint64_t malformed_frames = 0;
  uint64_t oversized_frames = 0;
  uint64_t wrong_version_frames = 0;
  uint64_t unknown_worker_frames = 0;
  uint64_t duplicate_batches = 0;
  uint64_t transitions_ingested = 0;
  uint64_t workers_registered = 0;      // Register messages accepted (a reconnect registers again)
  uint64_t workers_expired = 0;
  uint64_t heartbeats_received = 0;
  uint64_t unexpected_messages = 0;
  uint64_t worker_errors = 0;           // ErrorMsg frames from workers
  uint64_t duplicate_reports = 0;       // episode reports of an episode already counted
  uint64_t episodes_acked = 0;          // acknowledgements sent (re-acks of duplicates included)
  uint64_t checkpoints_written = 0;
  uint64_t checkpoints_rejected = 0;    // corrupt or unreadable checkpoints skipped on resume
  // Real measurements: taken from the cache by a worker (hits), new to the
  // cache (misses), executed although the cache had them (the worker had
  // not heard of the entry yet).
  uint64_t measurement_cache_hits = 0;
  uint64_t measurement_cache_misses = 0;
  uint64_t measurement_cache_redundant = 0;
};

// ... and those a resumed run starts again from zero.
struct LearnerCounters : CheckpointedCounters {
  uint64_t amplified_frames = 0;        // reads would cost more than the frame's size (codec.h)
  uint64_t non_finite_frames = 0;       // NaN or infinite rewards, observations or priorities
  uint64_t multipart_frames = 0;        // messages of more than one frame, dropped by the transport
  uint64_t connections_closed = 0;      // by libzmq: a peer that left, or one whose frame was over 64 MiB
  uint64_t tasks_refused = 0;           // workers' refusals of the task (a corrupted workload, another profile)
  uint64_t updates_skipped = 0;         // gradient steps not taken: the loss was not finite
};

// One TransitionBatch as ingested (LearnerConfig::keep_batch_log).
struct IngestedBatch {
  uint32_t worker_id = 0;
  uint64_t incarnation = 0;
  uint64_t episode_id = 0;
  uint64_t transitions = 0;
};

// What the learner is doing now, readable from another thread while Run serves.
struct LearnerStatus {
  LearnerCounters counters;
  uint64_t episodes = 0;
  uint64_t weights_version = 0;
  uint64_t updates = 0;
  size_t workers_connected = 0;
  bool running = false;
};

struct LearnerResult {
  std::string agent;                // "dqn", "sac"
  uint64_t episodes = 0;
  uint64_t updates = 0;
  uint64_t weights_version = 0;
  uint64_t evaluations = 0;
  std::vector<EpisodeRecord> records;
  PlacementPlan best_plan;          // lowest cost-model runtime among reported and evaluated plans
  double best_runtime_ns = 0;
  bool has_best_plan = false;
  PlacementPlan greedy_plan;        // the trained policy, rolled out greedily at the end
  EpisodeSummary greedy_summary;
  // The plan-time search from the greedy plan with the final network (its
  // best equals greedy_summary when nothing beat it).
  bool searched = false;
  PlanSearchResult search;
  // The produced_by of the plan the search went on from: plan_ilp's or one
  // of LearnerConfig::search_starts; "" for the policy's own episodes.
  std::string search_started_from;
  // The search ended slower than that plan as given, which was kept
  // (KeepFasterStart, learner/fastest_policy.h): the final search's plan is
  // then another planner's, unchanged.
  bool search_kept_start = false;
  // The guided ILP from the same policy (LearnerConfig::plan_ilp); its plan
  // is the greedy one when no solve beat it.
  bool ran_ilp = false;
  GuidedIlpResult ilp;
  bool imitated = false;            // LearnerConfig::expert_plans were learned from
  ImitationResult imitation;
  LearnerCounters counters;
  // The measurement cache at the end: every plan measured on real iterations
  // in this run (a resumed run's earlier sessions included), with the
  // all-DRAM and all-slow runtimes the measuring worker normalised it by.
  std::vector<CachedMeasurement> measurements;
  double wall_seconds = 0;           // of the whole run, sessions before a resume included
  std::vector<uint32_t> workers_seen;
  // Why the run stopped before its end ("" when it did not fail): the
  // training thread failed, or no worker accepted the task.
  std::string failure;

  std::string replay;               // "uniform", "prioritized"
  double samples_per_insert = 0;    // in force at the end (derived or given); 0 = no limiter
  RateLimiterCounters rate_limiter;
  std::string exploration;
  std::string initialized_from;     // LearnerConfig::init_checkpoint, when it was used
  double initialized_runtime_ns = 0;  // its greedy plan on this workload, cost model (0: out of memory)
  SelfImitationResult self_imitation;  // LearnerConfig::self_imitation, when it ran
  bool resumed = false;
  std::string resumed_from;         // checkpoint file
  uint64_t resumed_at_episode = 0;
  uint64_t resumed_weights_version = 0;
  std::vector<double> evaluation_rewards;  // greedy evaluations in order (step rewards + episodic)
  // Periodic evaluations run on their own thread; one asked for while
  // another still waited replaced it (skipped), one that threw is failed.
  // Neither is in `evaluations` or `evaluation_rewards` (this session's).
  uint64_t evaluations_skipped = 0;
  uint64_t evaluations_failed = 0;
  // When each periodic evaluation of this session ran on its thread, in the
  // order asked for: how long a greedy rollout takes, and (in tests) what the
  // network thread did meanwhile.
  struct EvaluationSpan {
    std::chrono::steady_clock::time_point started, finished;
  };
  std::vector<EvaluationSpan> evaluation_spans;
  double best_evaluation_reward = 0;
  bool converged = false;
  uint64_t converged_at_episode = 0;
  double converged_at_seconds = 0;
  std::vector<IngestedBatch> batches;      // with keep_batch_log
  uint64_t prioritized_updates = 0;        // gradient steps on prioritised batches (this session)
  double replay_max_priority = 0;          // prioritised replay's largest priority at the end
};

// Ape-X's per-worker exploration: epsilon^(1 + alpha * i / (N - 1)) for
// worker i of N (i taken modulo N; N = 1 gives epsilon).
double ApexEpsilon(double epsilon, double alpha, uint32_t index, uint32_t workers);

class Learner {
 public:
  explicit Learner(LearnerConfig config);
  ~Learner();

  // The endpoint bound (resolves a wildcard port).
  std::string endpoint() const;
  // Where Prometheus scrapes the learner (host:port as bound); "" without metrics.
  std::string metrics_address() const;
  // Serves until config.episodes reports arrived, Stop() is called, or
  // max_seconds pass; then tells workers to shut down and evaluates the
  // greedy policy (and searches from it, unless stopped by Stop(): an
  // interrupted run ends within seconds). `on_episode` is called for every
  // episode report.
  LearnerResult Run(const std::function<void(const EpisodeRecord&)>& on_episode = {});
  void Stop() { stop_.store(true); }
  LearnerStatus status() const;

  const PlacementAgent& agent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace tensortier
