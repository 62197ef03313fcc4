// The learner's training thread: it moves staged batches into replay
// (uniform or prioritised) through a Reverb-style rate limiter and trains
// the agent as the limiter allows (docs/architecture.md#learner). The
// network thread stages batches (Stage), collects what went in (TakeInserted)
// and takes the training lock (Lock) to touch the agent: the trainer steps
// aside whenever it waits, also in the middle of a long episode, so that
// heartbeats are never held up by a training or insert burst.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "agents/agent.h"
#include "replay/prioritized_replay.h"
#include "replay/rate_limiter.h"
#include "replay/replay_buffer.h"
#include "envs/placement_env.h"
#include "envs/workload.h"
#include "learner/checkpoint.capnp.h"
#include "learner/learner.h"
#include "learner/staged_batch.h"

namespace tensortier {

// The derived samples-per-insert ratio needs the length of a typical
// episode, and lengths vary 50x with the policy: random play, as early
// exploration, is short (slow-tier tensors leave the decision scope), a
// DRAM-first policy is long. Until episodes arrive, the start-up guess is
// the midpoint of the two (at least 1); then the ratio follows the mean
// length of the recent episodes (Trainer::ObserveEpisodeLength). Throws
// for env settings the workload cannot take.
size_t StartupEpisodeSteps(const Workload& workload, const EnvConfig& env, uint64_t seed);

struct TrainerSettings {
  bool prioritized = false;          // prioritised replay, else uniform
  double priority_alpha = 0.6;
  double priority_beta = 0.4;
  // < 0: derived from the episode lengths; 0: no limiter, a fixed number of
  // updates per report (OweUpdatesForOneReport). LearnerConfig has the rest.
  double samples_per_insert = -1;
  double rate_limit_error_buffer = 0;
  uint64_t batch_size = 32;
  size_t steps_per_episode_guess = 1;  // before any episode was reported
  uint64_t seed = 1;                   // of the replay sampling
};

// The trainer's settings in a learner's config; `steps_per_episode_guess`
// stands in for episode lengths until one is reported (StartupEpisodeSteps).
TrainerSettings TrainerSettingsFor(const LearnerConfig& config, size_t steps_per_episode_guess);

class Trainer {
 public:
  // `agent` must outlive the trainer; the trainer updates it under Lock().
  Trainer(PlacementAgent& agent, const TrainerSettings& settings);
  ~Trainer();  // Stop()
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  void Start();
  // Lets the trainer put everything staged into replay (training as the
  // limiter demands), then joins it. With `hurry` (Stop() or the time
  // limit) the limiter is bypassed, so a backlog does not hold the stop up
  // for the updates it would have paced.
  void Stop(bool hurry = false);
  bool failed() const { return failed_.load(); }

  // The training lock, for the network thread (weights, evaluations,
  // checkpoints): it guards the agent and replay. The trainer yields to it.
  std::unique_lock<std::mutex> Lock();

  // ---- network thread
  void Stage(StagedBatch batch);
  std::vector<InsertedBatch> TakeInserted();
  // Without a limiter: updates_per_episode gradient steps for one report.
  void OweUpdatesForOneReport();
  // The derived ratio follows the mean length of the recent episodes.
  void ObserveEpisodeLength(uint32_t steps);
  struct LossMeans {
    double loss = 0, mean_q = 0;
  };
  // Means over the updates since the last call; none if there were none.
  std::optional<LossMeans> TakeLossMeans();

  // ---- readable from any thread
  uint64_t staged_transitions() const { return staged_transitions_.load(); }
  uint64_t updates() const { return updates_done_.load(); }
  uint64_t replay_items() const { return replay_items_.load(); }
  uint64_t prioritized_updates() const { return prioritized_updates_.load(); }
  // Gradient steps the agent did not take: the loss was not finite.
  uint64_t updates_skipped() const { return updates_skipped_.load(); }

  // ---- under Lock() (or with the trainer stopped)
  size_t replay_size() const { return uniform_ ? uniform_->size() : prioritized_->size(); }
  size_t replay_capacity() const { return uniform_ ? uniform_->capacity() : prioritized_->capacity(); }
  bool has_limiter() const { return limiter_ != nullptr; }
  RateLimiterCounters limiter_counters() const;
  double samples_per_insert() const { return samples_per_insert_; }  // the ratio in force; 0: no limiter
  double replay_max_priority() const { return prioritized_ ? prioritized_->max_priority() : 0; }
  // Rows of the batches the trainer has started on but not finished: replay
  // holds them, the inserted batches do not say so yet.
  EpisodeRows RowsOfStartedBatches();

  // Checkpoint section: replay, the limiter and its derived ratio, the
  // sampling generator. Load throws std::invalid_argument for a replay of
  // the other kind (the run's settings differ), CheckpointError for one
  // that is not whole or does not fit.
  void Save(schema::TrainerSection::Builder out) const;
  void Load(schema::TrainerSection::Reader in);

 private:
  void Loop();
  void Insert(StagedBatch& b, size_t i, std::optional<double> priority);
  void OneUpdate();
  bool TrainStep();
  bool InsertAllowed(bool hurry);
  double DerivedRate(double steps_per_episode) const;
  double ErrorBufferFor(double rate) const;
  void SaveReplay(schema::Replay::Builder out) const;
  void LoadReplay(schema::Replay::Reader in);
  void SaveLimiter(schema::RateLimiterState::Builder out) const;
  void LoadLimiter(schema::TrainerSection::Reader in);

  PlacementAgent& agent_;
  const TrainerSettings settings_;
  std::unique_ptr<ReplayBuffer> uniform_;           // one of these two
  std::unique_ptr<PrioritizedReplay> prioritized_;
  std::unique_ptr<RateLimiter> limiter_;            // null: updates_per_episode per report
  double samples_per_insert_ = 0;
  bool derive_rate_ = false;
  static constexpr size_t kRateWindowEpisodes = 32;
  std::deque<uint32_t> recent_steps_;               // lengths of the last reported episodes
  uint64_t recent_steps_sum_ = 0;
  double rate_logged_ = 0;
  std::mt19937_64 rng_;

  std::mutex train_mu_;
  double loss_sum_ = 0, q_sum_ = 0;  // of the updates since TakeLossMeans
  uint64_t loss_n_ = 0;
  bool log_limiter_stall_ = true;
  std::deque<StagedBatch> pending_;  // the training thread's own
  std::mutex staging_mu_;            // guards the five below
  std::condition_variable staging_cv_;
  std::deque<StagedBatch> staged_;
  std::vector<InsertedBatch> inserted_;
  uint64_t fixed_updates_owed_ = 0;
  bool stop_ = false;
  bool hurry_ = false;
  std::atomic<uint64_t> staged_transitions_{0};
  std::atomic<uint64_t> updates_done_{0};
  std::atomic<uint64_t> replay_items_{0};
  std::atomic<uint64_t> prioritized_updates_{0};
  std::atomic<uint64_t> updates_skipped_{0};
  std::atomic<bool> failed_{false};
  // std::mutex is not fair: the trainer, relocking in a loop, could keep the
  // network thread (heartbeats!) waiting indefinitely. It steps aside while
  // this is non-zero.
  std::atomic<int> network_waiting_{0};
  std::thread thread_;
};

}  // namespace tensortier
