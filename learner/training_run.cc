#include "learner/training_run.h"

#include "common/files.h"
#include "common/log.h"
#include "learner/local_fleet.h"
#include "learner/metrics_csv.h"
#include "learner/run_supervisor.h"
#include "metrics/prometheus_server.h"
#include "policies/policy.h"

#include <signal.h>

namespace tensortier {

std::vector<BaselinePlan> ComputeBaselines(const Workload& workload, const EnvConfig& env,
                                           const std::vector<std::string>& policies, double solver_seconds,
                                           const std::function<void(const std::string&)>& on_policy) {
  std::vector<std::unique_ptr<PlacementPolicy>> made;
  for (const std::string& name : policies) made.push_back(MakePolicy(name));  // every name checked first
  PolicyContext ctx;
  ctx.dram_limit_bytes = env.dram_limit_bytes;
  ctx.mode = env.mode;
  ctx.solver_time_limit_seconds = solver_seconds;
  std::vector<BaselinePlan> out;
  for (const auto& policy : made) {
    if (on_policy) on_policy(policy->name());
    PolicyResult r = policy->Decide(workload, ctx);
    out.push_back({policy->name(), std::move(r.plan), r.decision_seconds, r.solver ? r.solver->status : ""});
  }
  return out;
}

TrainingRunOutcome RunTraining(const TrainingRunOptions& options,
                               const std::function<void(const EpisodeRecord&)>& on_episode) {
  const std::string& dir = options.learner.run_dir;
  if (!dir.empty()) MakeDirectories(dir + "/logs");
  // At the start too, so that a killed run can be resumed with --config RUN_DIR/config.toml.
  if (!dir.empty() && !options.learner.resume) WriteFileAtomically(dir + "/config.toml", options.config_toml);
  Learner learner(options.learner);
  std::unique_ptr<PrometheusServer> prometheus;
  if (options.prometheus) {
    // Prometheus inherits this thread's signal mask, in which `train` blocks
    // SIGINT and SIGTERM (cli/interrupt.h): it must get SIGTERM to stop.
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, &before);
    try {
      prometheus = StartRunPrometheus((dir.empty() ? std::string("/tmp") : dir) + "/prometheus",
                                      options.learner.metrics_sd_dir, options.prometheus_binary);
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  if (options.on_started)
    options.on_started(learner.metrics_address().empty() ? "" : "http://" + learner.metrics_address() + "/metrics",
                       prometheus ? prometheus->url() : "");
  std::vector<WorkerProcess> workers =
      SpawnWorkers(options.worker_executable, learner.endpoint(), options.workers, options.worker_args,
                   dir.empty() ? "/tmp" : dir + "/logs");
  TrainingRunOutcome out;
  {
    RunSupervisor supervisor(options.interrupt, &workers, [&learner] { learner.Stop(); });
    try {
      // metrics.csv grows as episodes arrive: a killed run keeps its rows.
      std::unique_ptr<MetricsCsvAppender> csv;
      if (!dir.empty()) csv = std::make_unique<MetricsCsvAppender>(dir + "/metrics.csv");
      out.result = learner.Run([&](const EpisodeRecord& r) {
        if (csv) csv->Append(r);
        if (on_episode) on_episode(r);
      });
    } catch (...) {
      supervisor.Finish();
      ReapWorkers(workers, 0);
      throw;
    }
    supervisor.Finish();
    out.interrupted_by = supervisor.interrupted_by();
    // (Workers that fail after a run that ended by itself do not make it fail.)
    const bool ended_early = out.result.episodes < options.learner.episodes && !out.result.converged;
    if (out.result.failure.empty() && ended_early) out.result.failure = supervisor.workers_failure();
  }
  out.workers_exited_cleanly = ReapWorkers(workers, 10.0);
  const Workload& w = options.learner.workload;
  out.final_plan = ChooseFinalPlan(w, out.result);
  out.comparison = ComparePlans(w, options.learner.env, out.result, out.final_plan, options.baselines);
  out.measured = FinalPlanMeasuredInTraining(out.result, out.final_plan.plan);
  if (options.measure_final_plan && !out.interrupted_by && out.result.failure.empty() && out.result.episodes > 0) {
    try {
      FinalPlanMeasurement after = options.measure_final_plan(w, out.final_plan.plan);
      if (after.measured || !out.measured.measured) out.measured = std::move(after);
    } catch (const std::exception& e) {
      LogWarn("final_plan_not_measured").kv("detail", e.what());
      if (!out.measured.measured)
        out.measured.not_measured_reason += std::string("; measuring it after training failed: ") + e.what();
    }
  }
  if (!dir.empty())
    WriteRunDirectory(dir, options.config_toml, w, options.learner.env, out.result, out.final_plan, out.comparison,
                      out.measured);
  if (prometheus) prometheus->StopAfter(2.5);  // a last scrape of the learner's final values
  return out;
}

}  // namespace tensortier
