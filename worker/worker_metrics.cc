#include "worker/worker_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "metrics/metrics_server.h"
#include "metrics/service_metrics.h"

namespace tensortier {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;
using Clock = std::chrono::steady_clock;

}  // namespace

struct WorkerMetrics::Impl {
  Impl(prometheus::Registry& r, const std::string& backend)
      : info(BuildGauge().Name("tensortier_worker_info")
                 .Help("The worker's slow-tier backend (always 1)").Register(r)),
        task_info(BuildGauge().Name("tensortier_worker_task_info")
                      .Help("The task the worker runs: workload and agent (always 1)").Register(r)),
        episodes(BuildCounter().Name("tensortier_worker_episodes_total").Help("Episodes run").Register(r)),
        iteration(BuildHistogram().Name("tensortier_worker_iteration_seconds")
                      .Help("Training-iteration time measured on real tiers: one observation per real "
                            "evaluation, the median of its measured iterations")
                      .Register(r)),
        evaluation(BuildHistogram().Name("tensortier_worker_evaluation_seconds")
                       .Help("Wall time of one plan evaluation (warm-up and measured iterations, or the cost model)")
                       .Register(r)),
        reference(BuildGauge().Name("tensortier_worker_reference_iteration_seconds")
                      .Help("Iteration time of reference placements the reward is normalised by: "
                            "policy=all-dram, all-slow (measured, or modelled when backend=cost-model)")
                      .Register(r)),
        dram_limit(BuildGauge().Name("tensortier_worker_dram_limit_bytes").Help("DRAM limit of the task")
                       .Register(r)),
        tier_peak(BuildGauge().Name("tensortier_worker_tier_peak_bytes")
                      .Help("Peak bytes in each tier during the latest evaluated iteration").Register(r)),
        migrated(BuildCounter().Name("tensortier_worker_migrated_bytes_total")
                     .Help("Bytes migrated between tiers by evaluated iterations (measured: every measured "
                           "iteration; cost-model: the one modelled iteration)")
                     .Register(r)),
        migrations(BuildCounter().Name("tensortier_worker_migrations_total")
                       .Help("Tensor migrations by evaluated iterations, by direction").Register(r)),
        oom_events(BuildCounter().Name("tensortier_worker_oom_events_total")
                       .Help("DRAM over-limit events in evaluated iterations (allocations or moves into DRAM "
                             "beyond the limit; on the cost model: plans that run out of DRAM)")
                       .Register(r)),
        limit_events(BuildCounter().Name("tensortier_worker_limit_events_total")
                         .Help("DRAM-limit events while building plans, by reason (placement_spill: a DRAM "
                               "choice that did not fit went to the slow tier)")
                         .Register(r)),
        page_faults(BuildCounter().Name("tensortier_worker_page_faults_total")
                        .Help("Page faults during measured iterations, by type (minor, major)").Register(r)),
        measured_iterations(BuildCounter().Name("tensortier_worker_measured_iterations_total")
                                .Help("Training iterations measured on real tiers").Register(r)),
        exposed_migration(BuildCounter().Name("tensortier_worker_exposed_migration_seconds_total")
                              .Help("Migration time the measured iterations waited for").Register(r)),
        emulated_delay(BuildCounter().Name("tensortier_worker_emulated_delay_seconds_total")
                           .Help("Delay added to kernels for slow-tier accesses on emulated tiers").Register(r)) {
    info.Add({{"backend", backend}}).Set(1);
    oom_episodes = &BuildCounter().Name("tensortier_worker_oom_episodes_total")
                        .Help("Episodes whose plan ran out of DRAM").Register(r).Add({});
    transitions = &BuildCounter().Name("tensortier_worker_transitions_sent_total")
                       .Help("Transitions sent to the learner").Register(r).Add({});
    connected = &BuildGauge().Name("tensortier_worker_connected")
                     .Help("1 while registered with a learner").Register(r).Add({});
    policy_version = &BuildGauge().Name("tensortier_worker_policy_version")
                          .Help("Version of the weights the worker acts with").Register(r).Add({});
    weights_loaded = &BuildCounter().Name("tensortier_worker_weights_loaded_total")
                          .Help("Weight updates loaded").Register(r).Add({});
    reconnects = &BuildCounter().Name("tensortier_worker_reconnects_total")
                      .Help("Reconnections after the learner fell silent").Register(r).Add({});
    auto& hb = BuildCounter().Name("tensortier_worker_heartbeats_total")
                   .Help("Heartbeats, by direction (sent, received)").Register(r);
    heartbeats_sent = &hb.Add({{"direction", "sent"}});
    heartbeats_received = &hb.Add({{"direction", "received"}});
    auto& errors = BuildCounter().Name("tensortier_worker_errors_total").Help("Errors, by reason").Register(r);
    for (const char* reason : {"bad_frame", "learner_error", "episode_failed", "task_refused"})
      error[reason] = &errors.Add({{"reason", reason}});
    flow_waits = &BuildCounter().Name("tensortier_worker_flow_control_waits_total")
                      .Help("Times flow control held the worker back (too many episodes unacknowledged)")
                      .Register(r).Add({});
    flow_wait_seconds = &BuildCounter().Name("tensortier_worker_flow_control_wait_seconds_total")
                             .Help("Time flow control held the worker back").Register(r).Add({});
    flow_blocked = &BuildGauge().Name("tensortier_worker_flow_control_blocked")
                        .Help("1 while flow control holds the worker back").Register(r).Add({});
    // Children that do not depend on the task.
    for (const char* reason : {"placement_spill"}) limit_events.Add({{"reason", reason}});
    for (const char* type : {"minor", "major"}) page_faults.Add({{"type", type}});
  }

  // Makes every child of a (workload, backend) pair, so that series exist
  // before the first event.
  void Touch(const std::string& backend) {
    if (backend != "cost-model")  // measured backends only
      iteration.Add({{"workload", workload}, {"policy", agent}, {"backend", backend}}, DurationBuckets());
    evaluation.Add({{"workload", workload}, {"backend", backend}}, DurationBuckets());
    for (const char* tier : {"dram", "slow"}) tier_peak.Add({{"tier", tier}, {"backend", backend}});
    for (const char* d : {"to_slow", "to_dram"}) {
      migrated.Add({{"direction", d}, {"backend", backend}});
      migrations.Add({{"direction", d}, {"backend", backend}});
    }
    oom_events.Add({{"backend", backend}});
    if (backend != "cost-model") {
      measured_iterations.Add({{"backend", backend}});
      exposed_migration.Add({{"backend", backend}});
      emulated_delay.Add({{"backend", backend}});
    }
  }

  std::mutex mu;
  Family<Gauge>& info;
  Family<Gauge>& task_info;
  Family<Counter>& episodes;
  Family<Histogram>& iteration;
  Family<Histogram>& evaluation;
  Family<Gauge>& reference;
  Family<Gauge>& dram_limit;
  Family<Gauge>& tier_peak;
  Family<Counter>& migrated;
  Family<Counter>& migrations;
  Family<Counter>& oom_events;
  Family<Counter>& limit_events;
  Family<Counter>& page_faults;
  Family<Counter>& measured_iterations;
  Family<Counter>& exposed_migration;
  Family<Counter>& emulated_delay;
  Counter *oom_episodes, *transitions, *weights_loaded, *reconnects, *heartbeats_sent, *heartbeats_received,
      *flow_waits, *flow_wait_seconds;
  Gauge *connected, *policy_version, *flow_blocked;
  Gauge* task = nullptr;  // the task_info child of the current task
  std::map<std::string, Counter*> error;
  std::string workload = "none", agent = "none";
  WorkerStats seen;
  bool blocked = false;
  Clock::time_point blocked_since;
};

std::unique_ptr<WorkerMetrics> WorkerMetrics::Start(const std::string& address, const std::string& sd_dir,
                                                    const std::string& name, const std::string& backend) {
  if (MetricsDisabled(address)) return nullptr;
  std::unique_ptr<WorkerMetrics> m(new WorkerMetrics);
  prometheus::Registry& registry = m->Serve(address);
  m->impl_ = std::make_unique<Impl>(registry, backend);
  m->Advertise(sd_dir, "worker", name, {{"worker", name}});
  return m;
}

WorkerMetrics::~WorkerMetrics() = default;

void WorkerMetrics::OnTask(const std::string& workload, const std::string& agent, const std::string& backend,
                           uint64_t dram_limit_bytes) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.task != nullptr) m.task_info.Remove(m.task);
  m.workload = workload;
  m.agent = agent;
  m.task = &m.task_info.Add({{"workload", workload}, {"agent", agent}});
  m.task->Set(1);
  m.episodes.Add({{"workload", workload}});
  m.dram_limit.Add({{"workload", workload}}).Set(static_cast<double>(dram_limit_bytes));
  m.Touch(backend);
  m.Touch("cost-model");
}

void WorkerMetrics::OnEpisode(const EpisodeSummary& s, const PlanMeasurement& pm, double evaluation_seconds) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  const std::string backend = pm.backend.empty() ? "unknown" : pm.backend;
  const MemoryCounters& c = pm.counters;
  m.Touch(backend);
  m.episodes.Add({{"workload", m.workload}}).Increment();
  if (s.oom || pm.oom) m.oom_episodes->Increment();
  if (s.spills > 0) m.limit_events.Add({{"reason", "placement_spill"}}).Increment(s.spills);
  m.evaluation.Add({{"workload", m.workload}, {"backend", backend}}, DurationBuckets()).Observe(evaluation_seconds);
  if (pm.min_runtime_ns > 0)
    m.reference.Add({{"workload", m.workload}, {"policy", "all-dram"}, {"backend", backend}})
        .Set(pm.min_runtime_ns / 1e9);
  if (pm.max_runtime_ns > 0)
    m.reference.Add({{"workload", m.workload}, {"policy", "all-slow"}, {"backend", backend}})
        .Set(pm.max_runtime_ns / 1e9);
  m.oom_events.Add({{"backend", backend}}).Increment(c.oom_events);
  // Bytes and moves of one iteration; measured evaluations ran `repeats` of them.
  const double iterations = c.measured ? std::max<uint32_t>(c.repeats, 1) : 1;
  m.migrated.Add({{"direction", "to_slow"}, {"backend", backend}}).Increment(iterations * c.bytes_to_slow);
  m.migrated.Add({{"direction", "to_dram"}, {"backend", backend}}).Increment(iterations * c.bytes_to_dram);
  m.migrations.Add({{"direction", "to_slow"}, {"backend", backend}}).Increment(iterations * c.migrations_to_slow);
  m.migrations.Add({{"direction", "to_dram"}, {"backend", backend}}).Increment(iterations * c.migrations_to_dram);
  if (c.dram_peak_bytes > 0 || c.slow_peak_bytes > 0) {
    m.tier_peak.Add({{"tier", "dram"}, {"backend", backend}}).Set(static_cast<double>(c.dram_peak_bytes));
    m.tier_peak.Add({{"tier", "slow"}, {"backend", backend}}).Set(static_cast<double>(c.slow_peak_bytes));
  }
  if (!c.measured) return;
  m.measured_iterations.Add({{"backend", backend}}).Increment(static_cast<double>(c.repeats));
  m.page_faults.Add({{"type", "minor"}}).Increment(iterations * static_cast<double>(std::max<int64_t>(c.minor_faults, 0)));
  m.page_faults.Add({{"type", "major"}}).Increment(iterations * static_cast<double>(std::max<int64_t>(c.major_faults, 0)));
  m.exposed_migration.Add({{"backend", backend}}).Increment(iterations * c.exposed_migration_ns / 1e9);
  m.emulated_delay.Add({{"backend", backend}}).Increment(iterations * c.emulated_delay_ns / 1e9);
  if (!pm.oom && pm.runtime_ns > 0)
    m.iteration.Add({{"workload", m.workload}, {"policy", m.agent}, {"backend", backend}}, DurationBuckets())
        .Observe(pm.runtime_ns / 1e9);
}

void WorkerMetrics::FlowControl(bool blocked) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  const auto now = Clock::now();
  if (m.blocked) m.flow_wait_seconds->Increment(std::chrono::duration<double>(now - m.blocked_since).count());
  if (blocked && !m.blocked) m.flow_waits->Increment();
  m.blocked = blocked;
  m.blocked_since = now;
  m.flow_blocked->Set(blocked ? 1 : 0);
}

void WorkerMetrics::Sync(const WorkerStats& s, bool registered, uint64_t weights_version) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  WorkerStats& p = m.seen;
  AdvanceCounter(m.transitions, s.transitions_sent, p.transitions_sent);
  AdvanceCounter(m.weights_loaded, s.weights_loaded, p.weights_loaded);
  AdvanceCounter(m.reconnects, s.reconnects, p.reconnects);
  AdvanceCounter(m.heartbeats_sent, s.heartbeats_sent, p.heartbeats_sent);
  AdvanceCounter(m.heartbeats_received, s.heartbeats_received, p.heartbeats_received);
  AdvanceCounter(m.error["bad_frame"], s.bad_frames, p.bad_frames);
  AdvanceCounter(m.error["learner_error"], s.errors_from_learner, p.errors_from_learner);
  AdvanceCounter(m.error["episode_failed"], s.episodes_failed, p.episodes_failed);
  AdvanceCounter(m.error["task_refused"], s.tasks_refused, p.tasks_refused);
  m.connected->Set(registered ? 1 : 0);
  m.policy_version->Set(static_cast<double>(weights_version));
}

}  // namespace tensortier
