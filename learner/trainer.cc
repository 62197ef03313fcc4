#include "learner/trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "common/log.h"
#include "envs/workload_capnp.h"
#include "learner/checkpoint_message.h"

namespace tensortier {
namespace {

constexpr size_t kObservationFloats = static_cast<size_t>(kObservationSize);
// Step(0) places in DRAM, Step(1) in the slow tier (envs/placement_env.h);
// ingest admits no other action into replay.
constexpr uint8_t kPlacementActions = 2;

// Column by column: a replay of 100,000 transitions is five flat lists.
void SaveTransitions(const std::vector<Transition>& items, schema::Transitions::Builder out) {
  const auto n = static_cast<unsigned>(items.size()), floats = static_cast<unsigned>(n * kObservationFloats);
  capnp::List<float>::Builder observations = out.initObservations(floats), next = out.initNextObservations(floats);
  capnp::List<uint8_t>::Builder actions = out.initActions(n);
  capnp::List<float>::Builder rewards = out.initRewards(n);
  capnp::List<bool>::Builder done = out.initDone(n);
  for (unsigned i = 0; i < n; ++i) {
    const Transition& t = items[i];
    if (t.observation.size() != kObservationFloats || t.next_observation.size() != kObservationFloats)
      throw std::logic_error("replay holds a transition whose observations are not of " +
                             std::to_string(kObservationFloats) + " floats");
    for (unsigned k = 0; k < kObservationFloats; ++k) {
      observations.set(i * kObservationFloats + k, t.observation[k]);
      next.set(i * kObservationFloats + k, t.next_observation[k]);
    }
    actions.set(i, t.action);
    rewards.set(i, t.reward);
    done.set(i, t.done);
  }
}

// Transition i's observation: floats [i * kObservationFloats, (i + 1) * kObservationFloats).
std::vector<float> ObservationAt(capnp::List<float>::Reader floats, size_t i) {
  std::vector<float> observation(kObservationFloats);
  for (size_t k = 0; k < kObservationFloats; ++k) {
    observation[k] = floats[static_cast<unsigned>(i * kObservationFloats + k)];
    if (!std::isfinite(observation[k]))
      throw CheckpointError("the checkpoint's replay has an observation that is not finite");
  }
  return observation;
}

// Refuses what ingest would never have let into replay: columns of
// different lengths, observations of another size, an unknown action, an
// observation or reward that is not finite.
std::vector<Transition> LoadTransitions(schema::Transitions::Reader in) {
  const capnp::List<float>::Reader observations = in.getObservations(), next = in.getNextObservations();
  const capnp::List<uint8_t>::Reader actions = in.getActions();
  const capnp::List<float>::Reader rewards = in.getRewards();
  const capnp::List<bool>::Reader done = in.getDone();
  const size_t n = actions.size();
  if (rewards.size() != n || done.size() != n)
    throw CheckpointError("the checkpoint's replay has " + std::to_string(n) + " actions, " +
                          std::to_string(rewards.size()) + " rewards and " + std::to_string(done.size()) +
                          " done flags");
  for (const capnp::List<float>::Reader& floats : {observations, next})
    if (floats.size() != n * kObservationFloats)
      throw CheckpointError("the checkpoint's replay has " + std::to_string(floats.size()) +
                            " observation floats for " + std::to_string(n) + " transitions of " +
                            std::to_string(kObservationFloats));
  std::vector<Transition> items(n);
  for (size_t i = 0; i < n; ++i) {
    Transition& t = items[i];
    const auto row = static_cast<unsigned>(i);
    t.observation = ObservationAt(observations, i);
    t.next_observation = ObservationAt(next, i);
    t.action = actions[row];
    t.reward = rewards[row];
    t.done = done[row];
    if (t.action >= kPlacementActions)
      throw CheckpointError("the checkpoint's replay has an action " + std::to_string(t.action));
    if (!std::isfinite(t.reward)) throw CheckpointError("the checkpoint's replay has a reward that is not finite");
  }
  return items;
}

ReplayKind ReplayKindOf(schema::ReplayKind kind) {
  switch (kind) {
    case schema::ReplayKind::UNIFORM: return ReplayKind::kUniform;
    case schema::ReplayKind::PRIORITIZED: return ReplayKind::kPrioritized;
  }
  throw CheckpointError("the checkpoint's replay is of an unknown kind (" +
                        std::to_string(static_cast<uint16_t>(kind)) + ")");
}

}  // namespace

size_t StartupEpisodeSteps(const Workload& workload, const EnvConfig& env, uint64_t seed) {
  PlacementEnv probe(workload, env);
  std::mt19937_64 rng(seed);
  const uint32_t random_steps =
      RunEpisode(probe, [&](const Observation&) { return static_cast<int>(rng() & 1); }).steps;
  const uint32_t dram_first_steps = RunEpisode(probe, [](const Observation&) { return 0; }).steps;
  return std::max<size_t>(1, (static_cast<size_t>(random_steps) + dram_first_steps) / 2);
}

Trainer::Trainer(PlacementAgent& agent, const TrainerSettings& settings) : agent_(agent), settings_(settings) {
  const AgentSchedule schedule = agent_.schedule();
  if (settings_.prioritized) {
    if (!agent_.supports_prioritized_replay())
      throw std::invalid_argument("prioritized replay needs an agent with a prioritised update; " + agent_.name() +
                                  " has none");
    PrioritizedReplayConfig pc;
    pc.capacity = static_cast<size_t>(schedule.replay_capacity);
    pc.alpha = settings_.priority_alpha;
    pc.beta = settings_.priority_beta;
    prioritized_ = std::make_unique<PrioritizedReplay>(pc);
  } else {
    uniform_ = std::make_unique<ReplayBuffer>(static_cast<size_t>(schedule.replay_capacity));
  }
  samples_per_insert_ = settings_.samples_per_insert;
  derive_rate_ = samples_per_insert_ < 0;
  if (derive_rate_) samples_per_insert_ = DerivedRate(static_cast<double>(settings_.steps_per_episode_guess));
  if (samples_per_insert_ > 0) {
    RateLimiterConfig rc;
    rc.samples_per_insert = samples_per_insert_;
    rc.min_size_to_sample = static_cast<uint64_t>(std::max(1, schedule.learning_starts));
    rc.error_buffer = ErrorBufferFor(samples_per_insert_);
    limiter_ = std::make_unique<RateLimiter>(rc);
  }
  rng_.seed(settings_.seed ^ 0x9e3779b97f4a7c15ull);
}

Trainer::~Trainer() { Stop(); }

std::unique_lock<std::mutex> Trainer::Lock() {
  ++network_waiting_;
  std::unique_lock<std::mutex> lock(train_mu_);
  --network_waiting_;
  return lock;
}

void Trainer::Start() {
  updates_done_.store(agent_.updates());
  thread_ = std::thread([this] {
    try {
      Loop();
    } catch (const std::exception& e) {
      LogError("trainer_failed").kv("detail", e.what());
      failed_.store(true);
    }
  });
}

void Trainer::Stop(bool hurry) {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(staging_mu_);
    stop_ = true;
    hurry_ = hurry;
  }
  staging_cv_.notify_all();
  thread_.join();
}

void Trainer::Stage(StagedBatch batch) {
  const uint64_t n = batch.size - batch.next;
  {
    std::lock_guard<std::mutex> lock(staging_mu_);
    staged_.push_back(std::move(batch));
  }
  staged_transitions_ += n;
  staging_cv_.notify_one();
}

std::vector<InsertedBatch> Trainer::TakeInserted() {
  std::vector<InsertedBatch> done;
  std::lock_guard<std::mutex> lock(staging_mu_);
  done.swap(inserted_);
  return done;
}

void Trainer::OweUpdatesForOneReport() {
  {
    std::lock_guard<std::mutex> lock(staging_mu_);
    fixed_updates_owed_ += static_cast<uint64_t>(std::max(0, agent_.schedule().updates_per_episode));
  }
  staging_cv_.notify_one();
}

std::optional<Trainer::LossMeans> Trainer::TakeLossMeans() {
  std::unique_lock<std::mutex> lock = Lock();
  std::optional<LossMeans> means;
  if (loss_n_ > 0)
    means = LossMeans{loss_sum_ / static_cast<double>(loss_n_), q_sum_ / static_cast<double>(loss_n_)};
  loss_sum_ = q_sum_ = 0;
  loss_n_ = 0;
  return means;
}

RateLimiterCounters Trainer::limiter_counters() const {
  return limiter_ ? limiter_->counters() : RateLimiterCounters{};
}

EpisodeRows Trainer::RowsOfStartedBatches() {
  EpisodeRows rows;
  std::lock_guard<std::mutex> lock(staging_mu_);
  for (const StagedBatch& b : pending_)
    if (b.next > b.already_in_replay) rows[{b.incarnation, b.episode_id}] += b.next - b.already_in_replay;
  return rows;
}

// updates_per_episode gradient steps of batch_size per episode of the
// given length: what the fixed schedule trains, paced per transition.
double Trainer::DerivedRate(double steps_per_episode) const {
  return static_cast<double>(agent_.schedule().updates_per_episode) * static_cast<double>(settings_.batch_size) /
         std::max(1.0, steps_per_episode);
}

// Slack for one insert and one batch either side, so that neither side can
// wait on the other forever (rate_limiter.h); a configured buffer is raised
// to that when the ratio outgrows it.
double Trainer::ErrorBufferFor(double rate) const {
  const double needed = rate + static_cast<double>(settings_.batch_size) + 1;
  return settings_.rate_limit_error_buffer > 0 ? std::max(settings_.rate_limit_error_buffer, std::max(1.0, rate))
                                               : needed;
}

void Trainer::ObserveEpisodeLength(uint32_t steps) {
  if (!limiter_ || !derive_rate_ || steps == 0) return;
  recent_steps_.push_back(steps);
  recent_steps_sum_ += steps;
  if (recent_steps_.size() > kRateWindowEpisodes) {
    recent_steps_sum_ -= recent_steps_.front();
    recent_steps_.pop_front();
  }
  const double mean_steps = static_cast<double>(recent_steps_sum_) / static_cast<double>(recent_steps_.size());
  samples_per_insert_ = DerivedRate(mean_steps);
  limiter_->SetSamplesPerInsert(samples_per_insert_, ErrorBufferFor(samples_per_insert_));
  if (rate_logged_ == 0 || std::abs(samples_per_insert_ / rate_logged_ - 1) > 0.25) {
    rate_logged_ = samples_per_insert_;
    LogInfo("replay_rate").kv("samples_per_insert", samples_per_insert_).kv("mean_episode_steps", mean_steps)
        .kv("episodes_in_window", recent_steps_.size());
  }
}

// ------------------------------------------------------- training thread

// Row i of a staged batch into replay, copied into the row it overwrites.
void Trainer::Insert(StagedBatch& b, size_t i, std::optional<double> priority) {
  const size_t before = replay_size();
  auto fill = [&](Transition& row) {
    if (b.frame) b.frame->CopyRow(i, row);
    else row = std::move(b.transitions[i]);
  };
  if (uniform_) uniform_->AddInPlace(fill);
  else prioritized_->AddInPlace(fill, priority);
  replay_items_.store(replay_size());
  if (limiter_) {
    limiter_->OnInsert(1);
    if (replay_size() == before) limiter_->OnDelete(1);  // the ring overwrote its oldest item
  }
}

TrainerSettings TrainerSettingsFor(const LearnerConfig& config, size_t steps_per_episode_guess) {
  TrainerSettings ts;
  ts.prioritized = config.replay == ReplayKind::kPrioritized;
  ts.priority_alpha = config.priority_alpha;
  ts.priority_beta = config.priority_beta;
  ts.samples_per_insert = config.samples_per_insert;
  ts.rate_limit_error_buffer = config.rate_limit_error_buffer;
  ts.batch_size = static_cast<uint64_t>(config.agent == AgentKind::kSac ? config.sac.batch_size : config.dqn.batch_size);
  ts.steps_per_episode_guess = steps_per_episode_guess;
  ts.seed = config.dqn.seed;
  return ts;
}

void Trainer::OneUpdate() {
  TrainStats s = agent_.Update(uniform_ ? static_cast<Replay&>(*uniform_) : *prioritized_, rng_);
  if (prioritized_) ++prioritized_updates_;
  if (s.skipped) {
    LogWarn("update_skipped").kv("reason", "non-finite loss").kv("loss", s.loss).kv("total", ++updates_skipped_);
    return;
  }
  ++updates_done_;
  loss_sum_ += s.loss;
  q_sum_ += s.mean_q;
  ++loss_n_;
}

// One gradient step if the limiter allows one now. Under train_mu_.
bool Trainer::TrainStep() {
  if (!limiter_ || !limiter_->SampleAllowed(settings_.batch_size)) return false;
  OneUpdate();
  limiter_->OnSample(settings_.batch_size);
  return true;
}

// Moves staged transitions into replay while the limiter allows (Reverb's
// inserter blocks while training is behind), finishing batches in order.
// Under train_mu_. Returns whether anything was inserted.
bool Trainer::InsertAllowed(bool hurry) {
  bool any = false;
  while (!pending_.empty()) {
    StagedBatch& b = pending_.front();
    while (b.next < b.size) {
      if (limiter_ && !hurry && !limiter_->InsertAllowed(1)) return any;
      // An episode is up to 10^6 transitions: let a waiting network thread
      // (heartbeats) in now and then; the batch goes on where it stopped.
      if (!hurry && (b.next & 1023) == 1023 && network_waiting_.load() > 0) return any;
      const size_t i = b.next++;
      Insert(b, i, b.priority(i));
      --staged_transitions_;
      any = true;
    }
    {
      std::lock_guard<std::mutex> lock(staging_mu_);
      inserted_.push_back({b.worker_id, b.incarnation, b.episode_id, b.size - b.already_in_replay,
                           b.completes_episode, b.episode_transitions});
    }
    pending_.pop_front();
  }
  return any;
}

void Trainer::Loop() {
  const uint64_t batch_size = settings_.batch_size;
  for (;;) {
    bool stopping = false, hurry = false;
    uint64_t owed = 0;
    {
      std::unique_lock<std::mutex> lock(staging_mu_);
      const bool idle = pending_.empty() && staged_.empty() && fixed_updates_owed_ == 0 &&
                        !(limiter_ && limiter_->SampleAllowed(batch_size));
      if (idle) staging_cv_.wait_for(lock, std::chrono::milliseconds(5));
      while (!staged_.empty()) {
        pending_.push_back(std::move(staged_.front()));
        staged_.pop_front();
      }
      owed = fixed_updates_owed_;
      fixed_updates_owed_ = 0;
      stopping = stop_;
      hurry = hurry_;
    }
    while (network_waiting_.load() > 0) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(train_mu_);
    InsertAllowed(stopping && hurry);
    if (owed > 0 && replay_size() >= static_cast<size_t>(std::max(1, agent_.schedule().learning_starts))) {
      uint64_t done = 0;
      while (done < owed && (stopping || done == 0 || network_waiting_.load() == 0)) {
        OneUpdate();
        ++done;
      }
      if (done < owed) {  // the rest on the next turn, after the network thread
        std::lock_guard<std::mutex> staging(staging_mu_);
        fixed_updates_owed_ += owed - done;
      }
    }
    // A few steps per turn, so that the network thread gets the lock often.
    bool trained = false;
    for (int i = 0; i < 4 && TrainStep(); ++i) trained = true;
    if (!trained && !pending_.empty() && limiter_ && !limiter_->InsertAllowed(1) &&
        !limiter_->SampleAllowed(batch_size)) {
      // Cannot happen with the error buffer Validate insists on; never wait forever.
      if (log_limiter_stall_) LogWarn("rate_limiter_stall").kv("state", limiter_->ToJson());
      log_limiter_stall_ = false;
      StagedBatch& b = pending_.front();
      const size_t i = b.next++;
      Insert(b, i, std::nullopt);
      --staged_transitions_;
    }
    if (stopping && pending_.empty()) {
      std::lock_guard<std::mutex> staging_lock(staging_mu_);
      if (staged_.empty()) return;
    }
  }
}

// ------------------------------------------------------------ checkpoints

void Trainer::Save(schema::TrainerSection::Builder out) const {
  SaveReplay(out.initReplay());
  if (limiter_) SaveLimiter(out.initLimiter());
  std::ostringstream rng_state;
  rng_state << rng_;
  out.setSamplingRng(StringToText(rng_state.str()));
}

void Trainer::Load(schema::TrainerSection::Reader in) {
  LoadReplay(in.getReplay());
  LoadLimiter(in);
  std::istringstream rng_state(TextToString(in.getSamplingRng()));
  rng_state >> rng_;
  if (rng_state.fail()) throw CheckpointError("the checkpoint's sampling generator state does not parse");
}

void Trainer::SaveReplay(schema::Replay::Builder out) const {
  out.setKind(prioritized_ ? schema::ReplayKind::PRIORITIZED : schema::ReplayKind::UNIFORM);
  SaveTransitions(uniform_ ? uniform_->items() : prioritized_->items(), out.initTransitions());
  if (prioritized_) {
    const std::vector<double>& priorities = prioritized_->priorities();
    FillList(priorities, out.initPriorities(static_cast<unsigned>(priorities.size())));
  }
  out.setNextSlot(uniform_ ? uniform_->next_slot() : prioritized_->next_slot());
  out.setTotalAdded(uniform_ ? uniform_->total_added() : prioritized_->total_added());
}

void Trainer::LoadReplay(schema::Replay::Reader in) {
  const ReplayKind saved = ReplayKindOf(in.getKind());
  const ReplayKind ours = prioritized_ ? ReplayKind::kPrioritized : ReplayKind::kUniform;
  if (saved != ours)
    throw std::invalid_argument("the checkpoint holds a " + ReplayKindName(saved) + " replay, not " +
                                ReplayKindName(ours));
  std::vector<Transition> items = LoadTransitions(in.getTransitions());
  try {
    if (uniform_) {
      uniform_->Restore(std::move(items), in.getNextSlot(), in.getTotalAdded());
    } else {
      prioritized_->Restore(std::move(items), VectorOf(in.getPriorities()), in.getNextSlot(), in.getTotalAdded());
    }
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(std::string("the checkpoint's replay does not fit: ") + e.what());
  }
  replay_items_.store(replay_size());
}

void Trainer::SaveLimiter(schema::RateLimiterState::Builder out) const {
  const RateLimiterCounters c = limiter_->counters();
  out.setInserts(c.inserts);
  out.setSamples(c.samples);
  out.setDeletes(c.deletes);
  out.setBlockedInserts(c.blocked_inserts);
  out.setBlockedSamples(c.blocked_samples);
  out.setCredit(limiter_->credit());
  out.setSamplesPerInsert(samples_per_insert_);
  FillList(recent_steps_, out.initRecentEpisodeSteps(static_cast<unsigned>(recent_steps_.size())));
}

void Trainer::LoadLimiter(schema::TrainerSection::Reader in) {
  if (!in.hasLimiter()) {
    if (!limiter_) return;
    // Started without a limiter: count what replay holds as inserted and
    // trained on, so that training picks up at the configured rate.
    RateLimiterCounters counters;
    counters.inserts = replay_size();
    counters.samples = static_cast<uint64_t>(samples_per_insert_ * static_cast<double>(replay_size()));
    limiter_->Restore(counters);
    return;
  }
  const schema::RateLimiterState::Reader saved = in.getLimiter();
  if (!limiter_) return;
  if (derive_rate_) {
    // Resume at the ratio the run had reached, not the start-up guess.
    const std::vector<uint32_t> steps = VectorOf(saved.getRecentEpisodeSteps());
    recent_steps_.assign(steps.begin(), steps.end());
    recent_steps_sum_ = std::accumulate(recent_steps_.begin(), recent_steps_.end(), uint64_t{0});
    const double saved_rate = saved.getSamplesPerInsert();
    if (std::isfinite(saved_rate) && saved_rate > 0) {
      samples_per_insert_ = saved_rate;
      limiter_->SetSamplesPerInsert(samples_per_insert_, ErrorBufferFor(samples_per_insert_));
    }
  }
  RateLimiterCounters counters;
  counters.inserts = saved.getInserts();
  counters.samples = saved.getSamples();
  counters.deletes = saved.getDeletes();
  counters.blocked_inserts = saved.getBlockedInserts();
  counters.blocked_samples = saved.getBlockedSamples();
  limiter_->Restore(counters, saved.getCredit());
}

}  // namespace tensortier
