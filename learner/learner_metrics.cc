#include "learner/learner_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cmath>

#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "metrics/metrics_server.h"
#include "metrics/service_metrics.h"
#include "transport/security.h"

namespace tensortier {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

constexpr size_t kMovingWindow = 100;  // episodes in the moving averages

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct MovingAverage {
  std::deque<double> values;
  double sum = 0;
  double Add(double v) {
    values.push_back(v);
    sum += v;
    if (values.size() > kMovingWindow) {
      sum -= values.front();
      values.pop_front();
    }
    return sum / static_cast<double>(values.size());
  }
};

}  // namespace

struct LearnerMetrics::Impl {
  Impl(prometheus::Registry& r, const Workload& w, const EnvConfig& env, const std::string& agent,
       const std::string& device, uint64_t replay_capacity)
      : registry(r), base{{"workload", w.name}, {"agent", agent}} {
    auto with = [&](Labels extra) {
      Labels l = base;
      l.insert(extra.begin(), extra.end());
      return l;
    };
    BuildGauge().Name("tensortier_learner_info").Help("The learner's workload, agent and training device (always 1)")
        .Register(r).Add(with({{"device", device}})).Set(1);

    episodes = &BuildCounter().Name("tensortier_learner_episodes_total").Help("Episode reports ingested")
                    .Register(r).Add(base);
    oom_episodes = &BuildCounter().Name("tensortier_learner_oom_episodes_total")
                        .Help("Episode reports whose plan ran out of DRAM").Register(r).Add(base);
    auto& reward = BuildGauge().Name("tensortier_learner_reward")
                       .Help("Reward of the latest episode: kind=step (sum of step rewards), episodic, return (both)")
                       .Register(r);
    auto& reward_avg = BuildGauge().Name("tensortier_learner_reward_moving_average")
                           .Help("Reward over the last 100 episodes, mean: kind=step, episodic, return").Register(r);
    for (const char* kind : {"step", "episodic", "return"}) {
      last_reward[kind] = &reward.Add(with({{"kind", kind}}));
      avg_reward[kind] = &reward_avg.Add(with({{"kind", kind}}));
    }
    normalised_cost = &BuildGauge().Name("tensortier_learner_episode_normalised_cost")
                           .Help("Normalised cost of the latest episode's plan (0 = all-DRAM, 1 = all-slow)")
                           .Register(r).Add(base);
    runtime_family = &BuildHistogram().Name("tensortier_learner_episode_runtime_seconds")
                          .Help("Iteration runtime of each reported episode's plan, as the worker scored it")
                          .Register(r);
    RuntimeChild("cost-model");
    epsilon = &BuildGauge().Name("tensortier_learner_epsilon").Help("Exploration rate of the latest episode")
                   .Register(r).Add(base);
    loss = &BuildGauge().Name("tensortier_learner_loss").Help("Mean TD loss over the latest episode's updates")
                .Register(r).Add(base);
    q_value = &BuildGauge().Name("tensortier_learner_q_value_mean")
                   .Help("Mean Q value of the latest episode's updates").Register(r).Add(base);
    updates = &BuildCounter().Name("tensortier_learner_updates_total").Help("Gradient updates").Register(r).Add(base);
    evaluations = &BuildCounter().Name("tensortier_learner_evaluations_total")
                       .Help("Greedy rollouts of the policy on the cost model").Register(r).Add(base);
    eval_runtime = &BuildGauge().Name("tensortier_learner_evaluation_runtime_seconds")
                        .Help("Cost-model runtime of the latest greedy rollout's plan").Register(r).Add(base);
    eval_cost = &BuildGauge().Name("tensortier_learner_evaluation_normalised_cost")
                     .Help("Normalised cost of the latest greedy rollout's plan").Register(r).Add(base);
    eval_oom = &BuildGauge().Name("tensortier_learner_evaluation_oom")
                    .Help("1 when the latest greedy rollout's plan ran out of DRAM").Register(r).Add(base);
    best_runtime = &BuildGauge().Name("tensortier_learner_best_runtime_seconds")
                        .Help("Cost-model runtime of the best plan found so far (0 before the first)")
                        .Register(r).Add(base);
    best_relative = &BuildGauge().Name("tensortier_learner_best_relative_performance")
                         .Help("All-DRAM runtime / best plan's runtime (1 = as fast as all-DRAM)")
                         .Register(r).Add(base);
    last_episode_time = &BuildGauge().Name("tensortier_learner_last_episode_timestamp_seconds")
                             .Help("Unix time of the latest episode report (start-up time before the first)")
                             .Register(r).Add(base);
    last_episode_time->Set(UnixSeconds());

    // Baselines on the cost model, so that dashboards draw the learned
    // plans against them.
    auto& baseline = BuildGauge().Name("tensortier_learner_baseline_runtime_seconds")
                         .Help("Cost-model runtime of reference placements: policy=all-dram (no limit), first-touch, all-slow")
                         .Register(r);
    all_dram_s = EvaluatePlan(w, PlacementPlan::Uniform(w, Tier::kDram, 0)).total_ns / 1e9;
    PlacementPlan first_touch = FirstTouchPlan(w, env.dram_limit_bytes);
    first_touch.mode = env.mode;
    baseline.Add({{"workload", w.name}, {"policy", "all-dram"}}).Set(all_dram_s);
    baseline.Add({{"workload", w.name}, {"policy", "first-touch"}}).Set(EvaluatePlan(w, first_touch).total_ns / 1e9);
    baseline.Add({{"workload", w.name}, {"policy", "all-slow"}})
        .Set(EvaluatePlan(w, PlacementPlan::Uniform(w, Tier::kSlow, env.dram_limit_bytes)).total_ns / 1e9);
    BuildGauge().Name("tensortier_learner_dram_limit_bytes").Help("DRAM limit of the task").Register(r)
        .Add({{"workload", w.name}}).Set(static_cast<double>(env.dram_limit_bytes));
    BuildGauge().Name("tensortier_learner_workload_peak_bytes").Help("Peak live bytes of the workload's iteration")
        .Register(r).Add({{"workload", w.name}}).Set(static_cast<double>(w.peak_live_bytes()));

    replay_size = &BuildGauge().Name("tensortier_learner_replay_size").Help("Transitions in the replay buffer")
                       .Register(r).Add(base);
    BuildGauge().Name("tensortier_learner_replay_capacity").Help("Capacity of the replay buffer (transitions)")
        .Register(r).Add(base).Set(static_cast<double>(replay_capacity));
    transitions = &BuildCounter().Name("tensortier_learner_transitions_total")
                       .Help("Transitions ingested into replay").Register(r).Add(base);
    policy_version = &BuildGauge().Name("tensortier_learner_policy_version")
                          .Help("Version of the weights the learner publishes").Register(r).Add(base);
    policy_lag = &BuildGauge().Name("tensortier_learner_episode_policy_lag")
                      .Help("Policy versions between the weights that acted in the latest episode and the learner's")
                      .Register(r).Add(base);
    workers_connected = &BuildGauge().Name("tensortier_learner_workers_connected")
                             .Help("Workers registered and alive").Register(r).Add({});
    workers_registered = &BuildCounter().Name("tensortier_learner_workers_registered_total")
                              .Help("Worker registrations").Register(r).Add({});
    workers_expired = &BuildCounter().Name("tensortier_learner_workers_expired_total")
                           .Help("Workers dropped after missing heartbeats").Register(r).Add({});
    connections_closed = &BuildCounter().Name("tensortier_learner_fleet_connections_closed_total")
                              .Help("Fleet connections closed by the transport: a peer that went away, or one "
                                    "that sent a frame over the 64 MiB limit (libzmq does not say which)")
                              .Register(r).Add({});
    frames = &BuildCounter().Name("tensortier_learner_frames_received_total").Help("Frames received from workers")
                  .Register(r).Add({});
    heartbeats = &BuildCounter().Name("tensortier_learner_heartbeats_received_total")
                      .Help("Heartbeats received from workers").Register(r).Add({});
    auto& errors = BuildCounter().Name("tensortier_learner_message_errors_total")
                       .Help("Frames refused or errors reported, by reason").Register(r);
    for (const char* reason : {"malformed", "oversized", "wrong_version", "amplified", "non_finite", "multipart", "unknown_worker", "duplicate_batch",
                               "unexpected_message", "worker_error"})
      error[reason] = &errors.Add({{"reason", reason}});
    // The fleet socket's CURVE handshakes (transport/security.h; 0 in plain text).
    auto& handshakes = BuildCounter().Name("tensortier_learner_fleet_handshakes_total")
                           .Help("CURVE handshakes on the fleet socket by result: accepted, refused (any failure), "
                                 "refused_unknown_key (of those, keys not in the allow-list)")
                           .Register(r);
    for (const char* result : {"accepted", "refused", "refused_unknown_key"})
      handshake[result] = &handshakes.Add({{"result", result}});
  }

  Histogram& RuntimeChild(const std::string& backend) {
    auto it = runtime.find(backend);
    if (it != runtime.end()) return *it->second;
    Labels l = base;
    l["backend"] = backend;
    return *(runtime[backend] = &runtime_family->Add(l, DurationBuckets()));
  }

  prometheus::Registry& registry;
  Labels base;
  std::mutex mu;
  Counter *episodes, *oom_episodes, *updates, *evaluations, *transitions, *workers_registered, *workers_expired,
      *connections_closed, *frames, *heartbeats;
  Gauge *normalised_cost, *epsilon, *loss, *q_value, *eval_runtime, *eval_cost, *eval_oom, *best_runtime,
      *best_relative, *last_episode_time, *replay_size, *policy_version, *policy_lag, *workers_connected;
  std::map<std::string, Gauge*> last_reward, avg_reward;
  std::map<std::string, MovingAverage> averages;
  std::map<std::string, Counter*> error;
  std::map<std::string, Counter*> handshake;
  AuthStats auth_seen;
  prometheus::Family<Histogram>* runtime_family;
  std::map<std::string, Histogram*> runtime;
  double all_dram_s = 0;
  LearnerCounters seen;
  uint64_t updates_seen = 0;
  uint64_t current_version = 0;
};

std::unique_ptr<LearnerMetrics> LearnerMetrics::Start(const std::string& address, const std::string& sd_dir,
                                                      const Workload& w, const EnvConfig& env,
                                                      const std::string& agent, const std::string& device,
                                                      uint64_t replay_capacity) {
  if (MetricsDisabled(address)) return nullptr;
  std::unique_ptr<LearnerMetrics> m(new LearnerMetrics);
  prometheus::Registry& registry = m->Serve(address);
  m->impl_ = std::make_unique<Impl>(registry, w, env, agent, device, replay_capacity);
  m->Advertise(sd_dir, "learner", "");
  return m;
}

LearnerMetrics::~LearnerMetrics() = default;

void LearnerMetrics::OnEpisode(const EpisodeRecord& rec) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  m.episodes->Increment();
  if (rec.oom) m.oom_episodes->Increment();
  const double values[3] = {rec.step_reward_sum, rec.episodic_reward, rec.step_reward_sum + rec.episodic_reward};
  const char* kinds[3] = {"step", "episodic", "return"};
  for (int i = 0; i < 3; ++i) {
    m.last_reward[kinds[i]]->Set(values[i]);
    m.avg_reward[kinds[i]]->Set(m.averages[kinds[i]].Add(values[i]));
  }
  m.normalised_cost->Set(rec.normalised_cost);
  if (rec.runtime_ns > 0) m.RuntimeChild(rec.backend.empty() ? "unknown" : rec.backend).Observe(rec.runtime_ns / 1e9);
  m.epsilon->Set(rec.epsilon);
  if (rec.loss != 0 || rec.mean_q != 0) {  // 0 and 0: no update ran yet
    m.loss->Set(rec.loss);
    m.q_value->Set(rec.mean_q);
  }
  if (rec.best_runtime_ns > 0) {
    m.best_runtime->Set(rec.best_runtime_ns / 1e9);
    m.best_relative->Set(m.all_dram_s * 1e9 / rec.best_runtime_ns);
  }
  if (m.current_version >= rec.policy_version)
    m.policy_lag->Set(static_cast<double>(m.current_version - rec.policy_version));
  m.last_episode_time->Set(UnixSeconds());
}

void LearnerMetrics::OnEvaluation(const EpisodeSummary& s) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  m.evaluations->Increment();
  m.eval_oom->Set(s.oom || s.cost.oom ? 1 : 0);
  m.eval_runtime->Set(s.cost.total_ns / 1e9);
  m.eval_cost->Set(s.normalised_cost);
}

void LearnerMetrics::Sync(const LearnerCounters& c, size_t workers_connected, size_t replay_size,
                          uint64_t policy_version, uint64_t updates) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  LearnerCounters& s = m.seen;
  AdvanceCounter(m.frames, c.frames_received, s.frames_received);
  AdvanceCounter(m.heartbeats, c.heartbeats_received, s.heartbeats_received);
  AdvanceCounter(m.transitions, c.transitions_ingested, s.transitions_ingested);
  AdvanceCounter(m.workers_registered, c.workers_registered, s.workers_registered);
  AdvanceCounter(m.workers_expired, c.workers_expired, s.workers_expired);
  AdvanceCounter(m.error["malformed"], c.malformed_frames, s.malformed_frames);
  AdvanceCounter(m.error["oversized"], c.oversized_frames, s.oversized_frames);
  AdvanceCounter(m.error["wrong_version"], c.wrong_version_frames, s.wrong_version_frames);
  AdvanceCounter(m.error["amplified"], c.amplified_frames, s.amplified_frames);
  AdvanceCounter(m.error["non_finite"], c.non_finite_frames, s.non_finite_frames);
  AdvanceCounter(m.error["multipart"], c.multipart_frames, s.multipart_frames);
  AdvanceCounter(m.connections_closed, c.connections_closed, s.connections_closed);
  AdvanceCounter(m.error["unknown_worker"], c.unknown_worker_frames, s.unknown_worker_frames);
  AdvanceCounter(m.error["duplicate_batch"], c.duplicate_batches, s.duplicate_batches);
  AdvanceCounter(m.error["unexpected_message"], c.unexpected_messages, s.unexpected_messages);
  AdvanceCounter(m.error["worker_error"], c.worker_errors, s.worker_errors);
  AdvanceCounter(m.updates, updates, m.updates_seen);
  const AuthStats auth = ProcessAuthStats();
  AdvanceCounter(m.handshake["accepted"], auth.accepted, m.auth_seen.accepted);
  AdvanceCounter(m.handshake["refused"], auth.refused, m.auth_seen.refused);
  AdvanceCounter(m.handshake["refused_unknown_key"], auth.refused_unknown_key, m.auth_seen.refused_unknown_key);
  m.workers_connected->Set(static_cast<double>(workers_connected));
  m.replay_size->Set(static_cast<double>(replay_size));
  m.policy_version->Set(static_cast<double>(policy_version));
  m.current_version = policy_version;
}

}  // namespace tensortier
