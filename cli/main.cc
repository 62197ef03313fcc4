// tensortier: parses the command line (and an optional config file) and
// dispatches to the library. No logic of its own beyond presentation.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <map>
#include <optional>
#include <set>

#include <unistd.h>

#include "agents/dqn_agent.h"
#include "agents/policy_portfolio.h"
#include "cli/config_file.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/keys.h"
#include "cli/run_config.h"
#include "cli/usage.h"
#include "cli/training_flags.h"
#include "common/files.h"
#include "common/log.h"
#include "envs/describe.h"
#include "envs/synthetic.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"
#include "learner/checkpoint_store.h"
#include "learner/checkpoint_summary.h"
#include "learner/local_fleet.h"
#include "learner/metrics_csv.h"
#include "learner/run_legend.h"
#include "learner/run_supervisor.h"
#include "learner/training_run.h"
#include "metrics/metrics_server.h"
#include "report/report.h"
#include "evaluation/benchmark.h"
#include "exporter/export.h"
#include "hostrt/tensortier_lookup.hpp"
#include "policies/policy.h"
#include "executor/executor.h"
#include "tiers/memory_tier.h"
#include "worker/real_evaluator.h"
#include "worker/worker.h"

namespace tensortier {
namespace {

struct ModelFlags {
  std::string model;
  std::string torchscript;
  int64_t batch_size = 2;
  int64_t image_size = 32;
  int64_t num_classes = 10;
  std::string optimizer = "sgd";
  uint64_t seed = 1;
};

void AddModelOptions(CLI::App* cmd, ModelFlags& m) {
  cmd->add_option("--model", m.model, "A model of the zoo: " + [] {
    std::string names;
    for (const std::string& n : ZooModelNames()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }());
  cmd->add_option("--torchscript", m.torchscript, "A TorchScript module whose forward(x) maps [B,3,S,S] to logits")
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch", m.batch_size, "Batch size")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--image-size", m.image_size, "Input images are S x S x 3")->check(CLI::Range(16, 4096))
      ->capture_default_str();
  cmd->add_option("--classes", m.num_classes, "Classes")->check(CLI::Range(2, 1000000))->capture_default_str();
  cmd->add_option("--optimizer", m.optimizer, "sgd (with momentum) or adam")->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
}

struct WorkerFlags {
  std::string slow_tier = "auto";
  uint32_t measure_every = 10;
  int repeats = 3;
  int warmup = 1;
  bool cost_model_only = false;
};

void AddWorkerExecutionOptions(CLI::App* cmd, WorkerFlags& f) {
  cmd->add_option("--slow-tier", f.slow_tier, SlowTierSpecHelp())->capture_default_str();
  cmd->add_option("--measure-every", f.measure_every,
                  "Run real iterations every N-th episode, the cost model in between (models only)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--repeats", f.repeats, "Measured iterations per real evaluation (the median counts)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--warmup", f.warmup, "Warm-up iterations before measuring")->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_flag("--cost-model-only", f.cost_model_only, "Score every plan with the cost model, even for models");
}

std::vector<std::string> WorkerArgs(const WorkerFlags& f) {
  std::vector<std::string> args = {"--slow-tier", f.slow_tier, "--measure-every", std::to_string(f.measure_every),
                                   "--repeats", std::to_string(f.repeats), "--warmup", std::to_string(f.warmup)};
  if (f.cost_model_only) args.push_back("--cost-model-only");
  return args;
}

// Profiles a model of the zoo (or a TorchScript module) on this host.
Workload ProfileModel(const ModelFlags& m, const std::string& slow_tier,
                      const AggregationOptions& aggregation = AggregationOptions(),
                      int exposure_rounds = RunnerOptions::kProfileExposureRounds) {
  RunnerOptions o;
  o.exposure_calibration_rounds = exposure_rounds;
  o.aggregation = aggregation;
  o.model.name = m.torchscript.empty() ? m.model : "torchscript";
  o.model.torchscript_path = m.torchscript;
  o.model.batch_size = m.batch_size;
  o.model.image_size = m.image_size;
  o.model.num_classes = m.num_classes;
  o.model.optimizer = m.optimizer;
  o.model.seed = m.seed;
  o.slow_tier = slow_tier;
  o.threads = 1;
  RealWorkloadRunner runner(o);
  const ProfileReport& p = runner.Profile();
  if (!p.deterministic)
    throw std::runtime_error("the graph of " + p.workload.name + " changes between iterations: " + p.graph_difference);
  std::printf("profiled %s: %zu kernels, %zu tensors, peak %s; iteration %.1f ms all-DRAM, %.1f ms all-slow (%s)\n",
              p.workload.name.c_str(), p.workload.num_kernels(), p.workload.num_tensors(),
              FormatBytes(p.workload.peak_live_bytes()).c_str(), p.iteration_dram_ns / 1e6,
              p.iteration_slow_ns / 1e6, p.backend.c_str());
  if (p.workload.pinned_dram_bytes() > 0)
    std::printf("  %s held in DRAM by the framework outside any tensor (pinned: no plan can move it)\n",
                FormatBytes(p.workload.pinned_dram_bytes()).c_str());
  if (!std::isfinite(p.captured_loss))
    std::printf("  warning: the step's loss is %g: the model's numbers are not finite, but its memory accesses "
                "and kernel times were measured as they are\n",
                p.captured_loss);
  std::fflush(stdout);
  return p.workload;
}

// --resume RUN_DIR is the run directory, and its workload unless one is given.
// A run directory that already holds a run is refused: its checkpoints,
// metrics and plan would be mixed with the new run's.
bool HoldsSomething(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) && !std::filesystem::is_empty(dir, ec);
}

void RefuseUsedRunDir(const TrainingFlags& o) {
  if (!o.resume_dir.empty() || o.force || o.out.empty()) return;
  if (HoldsSomething(o.out))
    throw std::invalid_argument("--out " + o.out + " is not empty: continue that run with --resume " + o.out +
                                ", choose another directory, or pass --force to write into it");
}

void ApplyResume(TrainingFlags& o) {
  RefuseUsedRunDir(o);
  if (o.resume_dir.empty()) return;
  if (!o.out.empty() && o.out != o.resume_dir)
    throw std::invalid_argument("--resume continues the run in its own directory: drop --out or give the same one");
  o.out = o.resume_dir;
  if (o.workload.empty()) o.workload = o.resume_dir + "/workload.ttwl";
}

// A workload spec or file: a bad spec is a usage error (std::invalid_argument),
// a file that cannot be read or parsed an InputError.
Workload LoadWorkloadInput(const std::string& spec) {
  try {
    return LoadWorkloadSpec(spec);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
}

std::string DefaultRunDir() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The baselines a run compares with and learns from; sets c.expert_plans.
std::vector<BaselinePlan> PrepareBaselines(const TrainingFlags& o, LearnerConfig& c) {
  std::vector<std::string> demos = o.demonstrations;
  demos.erase(std::remove(demos.begin(), demos.end(), "none"), demos.end());
  if (c.agent == AgentKind::kSac && !demos.empty()) {
    LogInfo("demonstrations_skipped").kv("reason", "sac does not learn from demonstrations");
    demos.clear();
  }
  if (c.resume) demos.clear();  // the checkpoint has the imitated weights
  std::vector<std::string> names = ComparisonBaselines(o, c.env.mode);
  names.erase(std::remove(names.begin(), names.end(), "none"), names.end());
  for (const std::string& d : demos)
    if (std::find(names.begin(), names.end(), d) == names.end()) names.push_back(d);
  std::vector<BaselinePlan> baselines =
      ComputeBaselines(c.workload, c.env, names, o.solver_seconds, [](const std::string& name) {
        std::printf("baseline %s ...\n", name.c_str());
        std::fflush(stdout);
      });
  for (const BaselinePlan& b : baselines)
    if (std::find(demos.begin(), demos.end(), b.policy) != demos.end()) c.expert_plans.push_back(b.plan);
  if (o.search_from_baseline) {
    const BaselinePlan* fastest = FastestBaseline(c.workload, baselines);
    if (fastest) {
      c.search_starts.push_back(fastest->plan);
      c.search_starts.back().produced_by = fastest->policy;
    }
  }
  if (!c.expert_plans.empty())
    std::printf("imitating the fastest plan of: %s (DQfD, %d DAgger rounds, %d polish steps) ...\n",
                JoinNames(demos).c_str(), c.imitation.dagger_rounds, c.imitation.polish_updates);
  return baselines;
}

// --init PATH: an agent checkpoint file as it is; a run directory, the
// agent's fastest evaluated policy there (what `export` takes), else its
// final network.
// The file is read here as well as by the learner so that a bad one fails
// before the baselines' ILPs run, not after: a file that is not an agent
// checkpoint is bad input (exit 3); one of the other agent family is refused
// by the learner (a usage error).
std::string ResolveInitCheckpoint(const std::string& path, AgentKind agent) {
  if (path.empty()) return path;
  std::error_code ec;
  std::string file = path;
  // A portfolio: pretrain's run directory (its checkpoints/portfolio), or a
  // directory of agent checkpoints.
  for (const std::string& dir : {path + "/checkpoints/portfolio", path}) {
    if (!std::filesystem::is_directory(dir, ec)) continue;
    try {
      PortfolioCheckpoints({dir});
    } catch (const std::runtime_error&) {
      continue;  // no .ckpt directly in it
    }
    try {
      LoadPortfolio({dir});  // every member loads, all of one family
    } catch (const std::exception& e) {
      throw InputError("--init " + dir + ": " + e.what());
    }
    return dir;
  }
  if (std::filesystem::is_directory(path, ec)) {
    const std::string stem = path + "/checkpoints/" + AgentKindName(agent);
    file.clear();
    for (const std::string& candidate : {stem + "-fastest.ckpt", stem + ".ckpt"})
      if (file.empty() && std::filesystem::is_regular_file(candidate, ec)) file = candidate;
    if (file.empty())
      throw InputError("--init " + path + ": no " + stem + "-fastest.ckpt or " + stem + ".ckpt there (a run of --agent " +
                       AgentKindName(agent) + ")");
  }
  try {
    LoadAgentCheckpoint(file);
  } catch (const std::exception& e) {
    throw InputError("--init " + file + ": " + e.what());
  }
  return file;
}

// The bound settings, completed with what depends on the workload.
LearnerConfig BuildLearnerConfig(const TrainingFlags& o, const std::string& bind, const Workload* profiled) {
  LearnerConfig c = o.learner;
  c.bind_endpoint = bind;
  c.workload = profiled ? *profiled : LoadWorkloadInput(o.workload);
  c.env.dram_limit_bytes = o.dram_limit_bytes > 0
                               ? o.dram_limit_bytes
                               : static_cast<uint64_t>(std::llround(o.dram_fraction * c.workload.peak_live_bytes()));
  if (c.env.dram_limit_bytes == 0) throw std::invalid_argument("the DRAM limit works out at 0 bytes");
  if (MetricsDisabled(c.metrics_address)) c.metrics_address.clear();
  c.resume = !o.resume_dir.empty();
  // A resumed run has its own weights: --init (in its config.toml too) is
  // not read, so a starting checkpoint deleted since does not block it.
  c.init_checkpoint = c.resume ? std::string() : ResolveInitCheckpoint(c.init_checkpoint, c.agent);
  return c;
}

// What a learner does after its last episode and before its results.
// Rounds of the final plan's measurement after training (each all-DRAM,
// all-slow and the plan, in a rotating order, as bench measures): a few, since
// `make run` ends with it, and the median of per-round ratios.
constexpr int kFinalPlanRounds = 3;

// The final plan on real iterations in this process (the workers have exited
// by then), on the workers' slow tier, as `bench` measures plans.
FinalPlanMeasurement MeasureFinalPlan(const Workload& w, const PlacementPlan& plan, const WorkerFlags& flags) {
  BenchmarkOptions b;
  b.slow_tier = flags.slow_tier;
  b.rounds = kFinalPlanRounds;
  b.warmup_iterations = flags.warmup;
  b.repeats = 1;
  LogInfo("final_plan_measuring").kv("plan", plan.produced_by).kv("slow_tier", b.slow_tier).kv("rounds", b.rounds);
  const BenchmarkRow row = MeasurePlans(w, b, {{plan.produced_by, plan}}).front();
  FinalPlanMeasurement m;
  m.plan_name = plan.produced_by;
  m.backend = row.backend;
  if (!row.measured) {
    m.not_measured_reason = "final plan not measured: its real iterations failed after training (" + row.note + ")";
    return m;
  }
  m.measured = true;
  m.method = "after training, " + std::to_string(row.measured_rounds) +
             " rounds of all-DRAM, all-slow and the final plan (warm-up " + std::to_string(b.warmup_iterations) +
             ", 1 measured iteration each, " + row.measured_clock +
             " clock as bench's --clock); medians, the plan's ratio a median of per-round ratios";
  m.runtime_ns = row.measured_ns;
  m.all_dram_ns = row.measured_all_dram_ns;
  m.all_slow_ns = row.measured_all_slow_ns;
  m.relative_performance = row.measured_relative;
  m.normalised_cost = MeasuredNormalisedCost(m.runtime_ns, m.all_dram_ns, m.all_slow_ns);
  LogInfo("final_plan_measured").kv("backend", m.backend).kv("runtime_ms", m.runtime_ns / 1e6)
      .kv("all_dram_ms", m.all_dram_ns / 1e6).kv("all_slow_ms", m.all_slow_ns / 1e6)
      .kv("relative_performance", m.relative_performance);
  return m;
}

std::string AfterTraining(const LearnerConfig& c, bool measure_final_plan = false) {
  std::string text;
  if (c.plan_ilp.time_limit_seconds > 0)
    text = "the ILP the fastest policy's network guides (up to " +
           std::to_string(static_cast<int>(c.plan_ilp.time_limit_seconds)) + " s)";
  if (c.plan_search.max_rollouts > 1)
    text += std::string(text.empty() ? "" : ", then ") + "plan-time search from the fastest policy" +
            (c.plan_ilp.time_limit_seconds > 0 ? ", the ILP's plan" : "") +
            (c.search_starts.empty() ? "" : ", " + c.search_starts.front().produced_by + "'s plan") +
            (c.plan_search.max_seconds > 0
                 ? " (up to " + std::to_string(static_cast<int>(c.plan_search.max_seconds)) + " s)"
                 : std::string());
  if (measure_final_plan)
    text += std::string(text.empty() ? "" : ", then ") + "the final plan on real iterations (" +
            std::to_string(kFinalPlanRounds) + " rounds with all-DRAM and all-slow)";
  return text.empty() ? text : text + " ...";
}

// The progress display (common/log.h ShowProgressLine): on a terminal one
// line redrawn twice a second, elsewhere a line every 2 s; both on the first
// and the last episode, after which `after_last` (what runs before the
// results: the search and the ILP the network guides take up to minutes).
class Progress {
 public:
  Progress(uint64_t total, double ideal_ns, std::string after_last)
      : total_(total), ideal_ns_(ideal_ns), after_last_(std::move(after_last)),
        every_(::isatty(STDOUT_FILENO) == 1 ? std::chrono::milliseconds(500) : std::chrono::milliseconds(2000)) {}
  ~Progress() { EndProgressLine(); }
  void operator()(const EpisodeRecord& r) {
    reward_ = reward_ == 0 ? r.step_reward_sum + r.episodic_reward
                           : 0.9 * reward_ + 0.1 * (r.step_reward_sum + r.episodic_reward);
    auto now = std::chrono::steady_clock::now();
    if (r.episode != total_ && now - last_ < every_ && r.episode != 1) return;
    last_ = now;
    char line[256];
    std::snprintf(line, sizeof line,
                  "episode %6llu/%llu  worker %u  return(avg) %8.2f  loss %8.4f  epsilon %.3f  best %.3f ms (%.1f%% of all-DRAM)  %.0fs",
                  static_cast<unsigned long long>(r.episode), static_cast<unsigned long long>(total_), r.worker_id,
                  reward_, r.loss, r.epsilon, r.best_runtime_ns / 1e6,
                  r.best_runtime_ns > 0 ? 100.0 * ideal_ns_ / r.best_runtime_ns : 0.0, r.wall_seconds);
    ShowProgressLine(line);
    if (r.episode == total_ && !after_last_.empty()) {
      EndProgressLine();
      std::printf("%s\n", after_last_.c_str());
      std::fflush(stdout);
    }
  }

 private:
  uint64_t total_;
  double ideal_ns_;
  std::string after_last_;
  std::chrono::steady_clock::duration every_;
  double reward_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

// How RUN_DIR/config.toml names the workload: a synthetic spec as given,
// anything else (a file, a profiled model) as the run's own copy.
std::string RecordedWorkload(const std::string& workload, const std::string& run_dir) {
  if (workload.rfind("synthetic:", 0) == 0) return workload;
  return std::filesystem::absolute(run_dir + "/workload.ttwl").lexically_normal().string();
}

// What the comparison table's figures are, after "final plan: ...; ".
std::string TableSays(const FinalPlanMeasurement& m) {
  if (m.measured) return "the table is the cost model's, and its last three rows measured on " + m.backend;
  return "the table is the cost model's (the final plan was not measured on real iterations)";
}

// After SIGINT or SIGTERM: what was saved, and the command that goes on.
int ReportInterrupted(int sig, const char* subcommand, const std::string& out, uint64_t episodes, uint64_t total) {
  std::printf("\ninterrupted by %s after %llu of %llu episodes; the final checkpoint, metrics.csv, summary.json and "
              "the comparison are in %s/\ncontinue with:\n  tensortier --config %s/config.toml %s --resume %s\n",
              SignalName(sig), static_cast<unsigned long long>(episodes), static_cast<unsigned long long>(total),
              out.c_str(), out.c_str(), subcommand, out.c_str());
  std::fflush(stdout);
  return 128 + sig;
}

int RunTrain(TrainingFlags& o, const ModelFlags& model, const WorkerFlags& worker_flags, int workers,
             const CLI::App& app, bool prometheus) {
  ApplyResume(o);
  if (o.out.empty()) o.out = DefaultRunDir();
  std::unique_ptr<Workload> profiled;
  if (!o.workload.empty() && (!model.model.empty() || !model.torchscript.empty()))
    throw std::invalid_argument("give either --workload or --model/--torchscript, not both");
  if (o.workload.empty()) {
    ModelFlags m = model;
    if (m.model.empty() && m.torchscript.empty()) m.model = "resnet18";  // the embedded default: a real model
    profiled = std::make_unique<Workload>(ProfileModel(m, worker_flags.slow_tier));
  }
  TrainingRunOptions opts;
  opts.learner = BuildLearnerConfig(o, "tcp://127.0.0.1:*", profiled.get());
  opts.learner.run_dir = o.out;
  opts.learner.min_workers = static_cast<uint32_t>(workers);
  opts.workers = workers;
  opts.worker_executable = SelfExecutable();
  opts.worker_args = WorkerArgs(worker_flags);
  opts.config_toml = RunConfigToml(app, "train", RecordedWorkload(o.workload, o.out));
  opts.baselines = PrepareBaselines(o, opts.learner);
  if (!opts.learner.metrics_address.empty()) {  // every process registers its metrics port for Prometheus
    opts.learner.metrics_sd_dir = o.out + "/prometheus/targets";
    opts.worker_args.insert(opts.worker_args.end(), {"--metrics-address", "127.0.0.1:0", "--metrics-sd-dir",
                                                     opts.learner.metrics_sd_dir});
  } else if (prometheus) {
    throw std::invalid_argument("--prometheus needs the metrics endpoints: drop --metrics-address off");
  } else {
    opts.worker_args.insert(opts.worker_args.end(), {"--metrics-address", "off"});
  }
  opts.prometheus = prometheus;
  const bool real_iterations = !worker_flags.cost_model_only && !opts.learner.workload.model.empty();
  if (real_iterations)
    opts.measure_final_plan = [&worker_flags](const Workload& w, const PlacementPlan& plan) {
      return MeasureFinalPlan(w, plan, worker_flags);
    };
  opts.on_started = [](const std::string& metrics_url, const std::string& prometheus_url) {
    if (!metrics_url.empty()) std::printf("learner metrics: %s\n", metrics_url.c_str());
    if (!prometheus_url.empty())
      std::printf("Prometheus: %s (dashboards: docs/observability.md)\n", prometheus_url.c_str());
    std::fflush(stdout);
  };
  const Workload& w = opts.learner.workload;
  std::printf("TensorTier train: %s (%zu kernels, %zu tensors, peak %s), DRAM limit %s, %d workers, %llu episodes\n",
              w.name.c_str(), w.num_kernels(), w.num_tensors(), FormatBytes(w.peak_live_bytes()).c_str(),
              FormatBytes(opts.learner.env.dram_limit_bytes).c_str(), workers,
              static_cast<unsigned long long>(opts.learner.episodes));
  // Info logs in the run directory, the progress here; warnings and errors in both.
  MakeDirectories(o.out);
  SetLogFile(o.out + "/train.log");
  std::printf("run directory: %s (log: %s/train.log, worker logs in %s/logs)\n", o.out.c_str(), o.out.c_str(),
              o.out.c_str());
  std::fflush(stdout);
  InterruptWatch watch;  // from here on, SIGINT/SIGTERM stop the run and save it
  opts.interrupt = &watch.interrupt();
  TrainingRunOutcome out;
  {
    Progress progress(opts.learner.episodes, w.total_dram_time_ns(), AfterTraining(opts.learner, real_iterations));
    out = RunTraining(opts, [&](const EpisodeRecord& r) { progress(r); });
  }
  std::printf("\nfinished: %llu episodes, %llu updates, %llu transitions in %.1f s; %d/%d workers exited cleanly\n",
              static_cast<unsigned long long>(out.result.episodes), static_cast<unsigned long long>(out.result.updates),
              static_cast<unsigned long long>(out.result.counters.transitions_ingested), out.result.wall_seconds,
              out.workers_exited_cleanly, workers);
  if (!out.result.initialized_from.empty())
    std::printf("started from the network of %s (its greedy plan here: %.2f ms, cost model)\n",
                out.result.initialized_from.c_str(), out.result.initialized_runtime_ns / 1e6);
  if (out.result.resumed)
    std::printf("resumed from %s at episode %llu (weights v%llu)\n", out.result.resumed_from.c_str(),
                static_cast<unsigned long long>(out.result.resumed_at_episode),
                static_cast<unsigned long long>(out.result.resumed_weights_version));
  if (out.result.converged)
    std::printf("converged after %llu episodes, %.1f s\n",
                static_cast<unsigned long long>(out.result.converged_at_episode), out.result.converged_at_seconds);
  std::map<std::string, int> backends;
  for (const EpisodeRecord& r : out.result.records) ++backends[r.backend];
  std::string scored_by;
  for (const auto& [name, n] : backends) scored_by += (scored_by.empty() ? "" : ", ") + name + " " + std::to_string(n);
  if (out.result.imitated)
    std::printf("imitation: %s's plan (%.3f ms), greedy policy after the best of %zu rounds %.3f ms, %.1f s\n",
                out.result.imitation.expert.c_str(), out.result.imitation.expert_cost_ns / 1e6,
                out.result.imitation.rounds.size(), out.result.imitation.best_cost_ns / 1e6,
                out.result.imitation.seconds);
  if (!out.result.self_imitation.rounds.empty())
    std::printf("self-imitation: greedy policy %.3f ms -> %.3f ms in %zu rounds of imitating its own search, %.1f s\n",
                out.result.self_imitation.start_cost_ns / 1e6,
                out.result.self_imitation.best_greedy.cost.total_ns / 1e6, out.result.self_imitation.rounds.size(),
                out.result.self_imitation.seconds);
  std::vector<std::string> backend_names;
  for (const auto& [name, n] : backends) backend_names.push_back(name);
  std::printf("episodes scored by: %s\nfinal plan: %s, from the %s; %s\n\n%s\n%s\n\n%s"
              "written to %s/\n",
              scored_by.c_str(), out.final_plan.plan.produced_by.c_str(), out.final_plan.source.c_str(),
              TableSays(out.measured).c_str(), ComparisonMarkdown(out.comparison, out.measured).c_str(),
              ComparisonVerdict(out.comparison).c_str(),
              ComparisonLegend(backend_names, out.final_plan.source, out.measured).c_str(), o.out.c_str());
  if (prometheus)
    std::printf("Prometheus stopped; serve its data again with\n  prometheus --config.file=%s/prometheus/prometheus.yml "
                "--storage.tsdb.path=%s/prometheus/data --web.listen-address=127.0.0.1:9090\n",
                o.out.c_str(), o.out.c_str());
  if (out.interrupted_by)
    return ReportInterrupted(out.interrupted_by, "train", o.out, out.result.episodes, opts.learner.episodes);
  if (!out.result.failure.empty()) {
    std::fprintf(stderr, "training failed: %s\n", out.result.failure.c_str());
    return kExitFailure;
  }
  if (out.result.episodes == 0) {
    std::fprintf(stderr, "training failed: no episode arrived\n");
    return kExitFailure;
  }
  return kExitOk;
}

int RunLearner(TrainingFlags& o, const std::string& bind, uint32_t min_workers, const CLI::App& app,
               const std::string& metrics_sd_dir) {
  ApplyResume(o);
  if (o.out.empty()) o.out = DefaultRunDir();
  if (o.workload.empty()) throw std::invalid_argument("the learner needs --workload (see tensortier profile)");
  LearnerConfig c = BuildLearnerConfig(o, bind, nullptr);
  c.min_workers = min_workers;
  c.run_dir = o.out;
  c.metrics_sd_dir = metrics_sd_dir;
  const std::vector<BaselinePlan> baselines = PrepareBaselines(o, c);
  const std::string config_toml = RunConfigToml(app, "learner", RecordedWorkload(o.workload, o.out));
  InterruptWatch watch;  // from here on, SIGINT/SIGTERM stop the run and save it
  Learner learner(c);
  if (!c.resume) WriteFileAtomically(o.out + "/config.toml", config_toml);  // a killed run resumes with it
  std::printf("learner listening on %s; run directory %s\n", learner.endpoint().c_str(), o.out.c_str());
  if (!learner.metrics_address().empty())
    std::printf("learner metrics: http://%s/metrics\n", learner.metrics_address().c_str());
  std::fflush(stdout);
  // Every log line in the run directory too; info lines stay on stderr, which
  // a service's collector reads (docker logs, journald).
  SetLogFile(o.out + "/learner.log", /*info_to_stderr=*/true);
  auto progress = std::make_unique<Progress>(c.episodes, c.workload.total_dram_time_ns(), AfterTraining(c));
  RunSupervisor supervisor(&watch.interrupt(), nullptr, [&learner] { learner.Stop(); });
  std::unique_ptr<MetricsCsvAppender> csv = std::make_unique<MetricsCsvAppender>(o.out + "/metrics.csv");
  LearnerResult r = learner.Run([&](const EpisodeRecord& rec) {
    csv->Append(rec);  // as episodes arrive: a killed learner keeps its rows
    (*progress)(rec);
  });
  csv.reset();
  progress.reset();
  supervisor.Finish();
  if (r.converged)
    std::printf("converged after %llu episodes, %.1f s\n", static_cast<unsigned long long>(r.converged_at_episode),
                r.converged_at_seconds);
  FinalPlanChoice final_plan = ChooseFinalPlan(c.workload, r);
  auto comparison = ComparePlans(c.workload, c.env, r, final_plan, baselines);
  // The fleet's workers are remote and gone: only what they measured in training.
  const FinalPlanMeasurement measured = FinalPlanMeasuredInTraining(r, final_plan.plan);
  WriteRunDirectory(o.out, config_toml, c.workload, c.env, r, final_plan, comparison, measured);
  std::set<std::string> scored_by;
  for (const EpisodeRecord& rec : r.records) scored_by.insert(rec.backend);
  std::printf("\nfinal plan: %s, from the %s; %s\n%s\n%s\n\n%swritten to %s/\n", final_plan.plan.produced_by.c_str(),
              final_plan.source.c_str(), TableSays(measured).c_str(), ComparisonMarkdown(comparison, measured).c_str(),
              ComparisonVerdict(comparison).c_str(),
              ComparisonLegend({scored_by.begin(), scored_by.end()}, final_plan.source, measured).c_str(),
              o.out.c_str());
  if (supervisor.interrupted_by())
    return ReportInterrupted(supervisor.interrupted_by(), "learner", o.out, r.episodes, c.episodes);
  if (!r.failure.empty()) {
    std::fprintf(stderr, "training failed: %s\n", r.failure.c_str());
    return kExitFailure;
  }
  return 0;
}

Worker* g_worker = nullptr;
void OnSignal(int) {
  if (g_worker) g_worker->Stop();
}

int RunWorker(WorkerConfig config, const WorkerFlags& flags) {
  if (MetricsDisabled(config.metrics_address)) config.metrics_address.clear();
  if (!flags.cost_model_only) {
    RealEvaluatorOptions real;
    real.slow_tier = flags.slow_tier;
    real.measure_every = flags.measure_every;
    real.repeats = flags.repeats;
    real.warmup_iterations = flags.warmup;
    config.registered_backend = RealIterationEvaluator(real).backend();
    config.make_real_evaluator = [real] { return std::make_unique<RealIterationEvaluator>(real); };
  }
  Worker worker(config, std::make_unique<CostModelEvaluator>());
  g_worker = &worker;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  WorkerStats s = worker.Run();
  g_worker = nullptr;
  LogInfo("worker_finished").kv("episodes", s.episodes).kv("transitions", s.transitions_sent)
      .kv("reconnects", s.reconnects).kv("weights_loaded", s.weights_loaded);
  return 0;
}

int RunPretrain(const CorpusPretrainingOptions& o, bool force) {
  if (!force && HoldsSomething(o.out_dir))
    throw std::invalid_argument("--out " + o.out_dir + " is not empty: choose another directory, or pass --force");
  MakeDirectories(o.out_dir);
  SetLogFile(o.out_dir + "/pretrain.log");
  std::string fractions;
  for (double f : o.dram_fractions) {
    char one[32];
    std::snprintf(one, sizeof one, "%s%.2f", fractions.empty() ? "" : " ", f);
    fractions += one;
  }
  std::printf("TensorTier pretrain: %zu workloads, DRAM %s x each one's peak, %s; run directory %s\n",
              o.workloads.size(), fractions.c_str(), MigrationModeName(o.env.mode), o.out_dir.c_str());
  std::fflush(stdout);
  const CorpusPretrainingResult r = PretrainOnCorpus(o, [](const std::string& line) {
    std::printf("  %s\n", line.c_str());
    std::fflush(stdout);
  });
  std::printf("\n%s\nnetwork: %s (%.1f s in all)\nplace a model it never saw:  tensortier bench --workload M.ttwl "
              "--policies sentinel autotm-sync dqn dqn+search --checkpoint %s --dram-fractions %s --mode %s\nfine-tune on "
              "it:  tensortier train --workload M.ttwl --init %s --mode %s\n  (with no baseline plan of M: add "
              "--demonstrations none --self-imitation-rounds 10 --episodes 50)\n",
              CorpusMarkdown(r).c_str(), r.checkpoint_path.c_str(), r.seconds, r.checkpoint_path.c_str(),
              fractions.c_str(), MigrationModeName(o.env.mode), o.out_dir.c_str(), MigrationModeName(o.env.mode));
  if (!r.weight_mean_checkpoint_path.empty())
    std::printf("the mean of the rounds' weights, kept whether or not it was the best round: %s\n",
                r.weight_mean_checkpoint_path.c_str());
  return 0;
}

int RunInspect(const std::string& path) try {
  std::string head = ReadFile(path).substr(0, 8);
  if (IsLookupFile(path)) {
    std::cout << DescribeLookupFile(path);
  } else if (head == "TTWKLD01") {
    std::cout << DescribeWorkload(ReadWorkloadFile(path));
  } else if (head == "TTPLAN01") {
    std::cout << DescribePlan(ReadPlanFile(path));
  } else if (LooksLikeLearnerCheckpoint(head)) {
    std::cout << DescribeLearnerCheckpoint(path);
  } else if (LooksLikeAgentCheckpoint(head) || std::filesystem::path(path).extension() == ".ckpt") {
    std::cout << DescribeAgentCheckpoint(path);  // a .ckpt from before the frame too
  } else {
    throw std::runtime_error("'" + path + "' is none of: a workload (.ttwl), a plan (.ttplan), an agent checkpoint "
                             "(.ckpt), a learner checkpoint (.ttckpt)");
  }
  return 0;
} catch (const std::runtime_error& e) {
  throw InputError(e.what());
}

int Main(int argc, char** argv) {
  CLI::App app{"TensorTier: learns where the tensors of a training job live (DRAM or a slow tier)"};
  app.require_subcommand(1);
  app.fallthrough();  // --log-level and --config after the subcommand too (subcommands inherit it when added)
  SetStrictConfig(app, "Read settings from a TOML file ([train], [learner], [worker] sections; README: Config files)");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();

  TrainingFlags train_opts;
  ModelFlags train_model;
  WorkerFlags train_worker;
  int workers = 2;
  auto* train = app.add_subcommand("train", "Train on this host: a learner and N worker processes on loopback");
  AddTrainingOptions(train, train_opts);
  AddModelOptions(train, train_model);
  AddWorkerExecutionOptions(train, train_worker);
  train->add_option("--workers", workers, "Worker processes")->check(CLI::Range(1, 256))->capture_default_str();
  bool train_prometheus = false;
  train->add_flag("--prometheus", train_prometheus,
                  "Start a Prometheus (/usr/bin/prometheus) on loopback scraping the learner and the workers; "
                  "its configuration and data go to RUN_DIR/prometheus");
  PutInHelpGroups(train, {{"Fleet and metrics", {"--workers", "--prometheus"}},
                          {"Model (profiled when no --workload is given)",
                           {"--model", "--torchscript", "--batch", "--image-size", "--classes", "--optimizer"}},
                          {"Workers: how they score plans",
                           {"--slow-tier", "--measure-every", "--repeats", "--warmup", "--cost-model-only"}}});

  TrainingFlags learner_opts;
  std::string bind = "tcp://127.0.0.1:5555";
  auto* learner = app.add_subcommand("learner", "Run a learner for a fleet of workers on other hosts");
  AddTrainingOptions(learner, learner_opts);
  learner->add_option("--bind", bind, "ZeroMQ endpoint to bind")->capture_default_str();
  AddLearnerSecurityOptions(learner, learner_opts.learner.security);
  uint32_t min_workers = 1;
  learner->add_option("--min-workers", min_workers, "Hand out tasks once this many workers registered")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  std::string learner_sd_dir;
  learner->add_option("--metrics-sd-dir", learner_sd_dir,
                      "Write a Prometheus file_sd target file for the metrics endpoint into this directory");
  PutInHelpGroups(learner, {{"Fleet and metrics", {"--bind", "--min-workers", "--metrics-sd-dir", "--secret-key",
                                                   "--authorized-keys", "--insecure-plaintext"}}});

  WorkerConfig worker_config;
  auto* worker = app.add_subcommand("worker", "Run a worker against a learner");
  worker->add_option("--connect", worker_config.learner_endpoint, "Learner endpoint")->capture_default_str();
  AddWorkerSecurityOptions(worker, worker_config.security);
  worker->add_option("--name", worker_config.name, "Worker name (default host:pid)");
  worker->add_option("--max-episodes", worker_config.max_episodes, "Stop after this many episodes (0 = until told)");
  worker->add_option("--give-up-seconds", worker_config.give_up_seconds,
                     "Exit when no learner answered for this long (0 = retry forever)");
  WorkerFlags worker_flags;
  AddWorkerExecutionOptions(worker, worker_flags);
  worker_config.metrics_address = kDefaultMetricsAddress;
  worker->add_option("--metrics-address", worker_config.metrics_address,
                     "Serve Prometheus metrics on HOST:PORT (port 0: any free one; 'off': none)")
      ->capture_default_str();
  worker->add_option("--metrics-sd-dir", worker_config.metrics_sd_dir,
                     "Write a Prometheus file_sd target file for the metrics endpoint into this directory "
                     "(removed on a clean exit)");

  std::string report_dir, report_out;
  auto* report = app.add_subcommand("report", "Write RUN_DIR/report.html: convergence plots and the comparison, "
                                              "one self-contained page");
  report->add_option("run_dir", report_dir, "Run directory (from train or learner)")->required()
      ->check(CLI::ExistingDirectory);
  report->add_option("--out", report_out, "HTML file to write (default RUN_DIR/report.html)");

  ExportOptions export_opts;
  auto* exp = app.add_subcommand("export", "Export a trained policy as a compact lookup file for production hosts");
  exp->add_option("run_dir", export_opts.run_dir, "Run directory of train or learner")->check(CLI::ExistingDirectory);
  exp->add_option("--checkpoint", export_opts.checkpoint_path,
                  "Checkpoint (default: the run's fastest evaluated policy, RUN_DIR/checkpoints/AGENT-fastest.ckpt, else its final AGENT.ckpt; AGENT dqn or sac, whichever the run wrote); with --dram-fraction also a portfolio directory (pretrain's checkpoints/portfolio), whose member with the fastest greedy plan on --workload is exported");
  exp->add_option("--agent", export_opts.agent, "Agent family of the checkpoint (default: from the checkpoint's name)")
      ->check(CLI::IsMember({"dqn", "sac"}));
  exp->add_option("--workload", export_opts.workload, "Workload file or spec (default RUN_DIR/workload.ttwl)");
  exp->add_option("--plan", export_opts.plan_path, "Plan for the plan table (default RUN_DIR/final_plan.ttplan)");
  exp->add_option("--dram-fraction", export_opts.dram_fraction,
                  "Without a run directory or --plan (a network of pretrain): the generalised lookup alone, rolled "
                  "out on --workload at this fraction of its peak live bytes")
      ->check(CLI::Range(0.001, 1.0));
  exp->add_option("--coverage-workloads", export_opts.coverage_workloads,
                  "Other workloads the network is rolled out on to place the lookup's bins and fill its cells, so "
                  "that models without a plan in the file get the network's answers (for a network of pretrain: "
                  "its corpus)")
      ->capture_default_str();
  exp->add_flag("--no-network", [&export_opts](int64_t) { export_opts.network = false; },
                "Leave the policy's network out of the file: hosts then decide by the table's cells alone, which "
                "answer less like the network on models the export did not roll out (docs/lookup-format.md)");
  exp->add_option("--max-cells", export_opts.quantiser.max_cells,
                  "Cells of the generalised lookup at most (a bit each; the format takes up to 2^24)")
      ->check(CLI::Range(2u, 1u << 24))
      ->capture_default_str();
  AddMigrationModeOption(exp, export_opts.mode,
                         "With --dram-fraction: the migration mode the lookup is built in (the network's: pretrain's "
                         "--mode)");
  exp->add_option("--out", export_opts.output_path, "Lookup file to write (default RUN_DIR/policy.ttlookup)");
  AddDecisionScopeOption(exp, export_opts.env.scope)
      ->description("The MDP the network is rolled out in to build the lookup: the scope it was trained in "
                    "(train's --decision-scope); access-gaps, relevant or all-live");

  BenchmarkOptions bench_opts;
  std::vector<std::string> bench_workloads;
  std::string bench_out = "bench/results/latest", bench_mode = "sync";
  auto* bench = app.add_subcommand("bench", "Every chosen policy on the same workloads and DRAM budgets: cost model "
                                            "and, for profiled models, real iterations");
  bench->add_option("--workload", bench_workloads, "Workload files or synthetic specs (repeatable)")->required();
  bench->add_option("--policies", bench_opts.policies, "Policies: " + [] {
    std::string names;
    for (const std::string& n : PolicyNames()) names += n + ", ";
    // No captured default: CLI11 writes a list default into config.toml as one
    // space-separated string, which would not read back as a list.
    return names + "dqn, sac, dqn+search, sac+search, dqn+ilp, sac+ilp (the ILP with the network's surest "
                   "decisions fixed), dqn+ilp+measured, sac+ilp+measured, heat+ilp+measured (that ILP's candidate "
                   "plans measured on real iterations at plan time, the fastest kept), dqn+ilp+search, sac+ilp+search "
                   "(the plan-time search from the network's episodes and from that ILP's plan, the faster), "
                   "dqn+relax+search, sac+relax+search (the same from the relaxation's plan), "
                   "heat (the greedy episode with the constant DRAM action, heat order, in the network's place), "
                   "dqn+polish, sac+polish, heat+polish (the greedy plan with no search move: its async copies "
                   "scheduled and the polish, within --search-seconds), dqn+polish+search, sac+polish+search, "
                   "heat+polish+search (that plan polished in half of --search-seconds, then the search from it), "
                   "heat+search, heat+ilp+search, heat+relax+search (the plan-time search "
                   "with heat order in the network's place), untrained-dqn, untrained-sac and their +search, +polish, +polish+search, +ilp, +ilp+search "
                   "(the checkpoint's network with fresh weights: what training adds), dqn+portfolio, "
                   "sac+portfolio (the fastest of --portfolio's networks' greedy plans, chosen at plan time), "
                   "dqn+portfolio+search, sac+portfolio+search (the plan-time search from it), learned (every agent of "
                   "--checkpoint, greedy and searched), lookup:FILE (an exported lookup, as --lookup) [default: "
                   "all-slow first-touch sentinel autotm-sync deeptm-heuristic ca-lm learned]";
  }())->check(CLI::Validator(
            [](std::string& name) -> std::string {
              static const std::vector<std::string> learned = {
                  "dqn",     "sac",     "dqn+search",       "sac+search",       "dqn+ilp",
                  "sac+ilp", "learned", "dqn+ilp+measured", "sac+ilp+measured", "heat+ilp+measured",
                  "heat", "heat+search", "dqn+polish", "sac+polish", "heat+polish", "untrained-dqn+polish",
                  "untrained-sac+polish", "dqn+polish+search", "sac+polish+search", "heat+polish+search",
                  "untrained-dqn+polish+search", "untrained-sac+polish+search", "untrained-dqn", "untrained-sac", "untrained-dqn+search", "untrained-sac+search",
                  "untrained-dqn+ilp", "untrained-sac+ilp", "dqn+ilp+search", "sac+ilp+search", "heat+ilp+search",
                  "untrained-dqn+ilp+search", "untrained-sac+ilp+search", "dqn+relax+search", "sac+relax+search",
                  "heat+relax+search", "untrained-dqn+relax+search", "untrained-sac+relax+search", "dqn+portfolio", "sac+portfolio",
                  "dqn+portfolio+search", "sac+portfolio+search"};
              const std::vector<std::string>& baselines = PolicyNames();
              if (std::find(baselines.begin(), baselines.end(), name) != baselines.end() ||
                  std::find(learned.begin(), learned.end(), name) != learned.end() ||
                  (name.rfind(kLookupPolicyPrefix, 0) == 0 && name.size() > std::string(kLookupPolicyPrefix).size()))
                return "";
              std::string valid;
              for (const std::string& n : baselines) valid += n + ", ";
              for (const std::string& n : learned) valid += n + ", ";
              return "unknown policy '" + name + "' (valid: " + valid + "lookup:FILE)";
            },
            "POLICY"));
  bench->add_option("--dram-fractions", bench_opts.dram_fractions, "DRAM budgets as fractions of peak")
      ->capture_default_str();
  bench->add_option("--checkpoint", bench_opts.checkpoints,
                    "[WORKLOAD=]FILE: agent checkpoint (RUN_DIR/checkpoints/dqn.ckpt or sac.ckpt, not a learner .ttckpt) for the policies dqn and sac, for every workload or the "
                    "one named (repeatable: one agent per model)");
  bench->add_option("--portfolio", bench_opts.portfolio,
                    "Networks of the policies dqn+portfolio and dqn+portfolio+search: agent checkpoints, or "
                    "directories of them (pretrain's RUN_DIR/checkpoints/portfolio)");
  bench->add_option("--portfolio-search-starts", bench_opts.portfolio_search_starts,
                    "dqn+portfolio+search: search from this many members' greedy plans (the fastest first, each "
                    "guided by its own network, in turn while --search-seconds lasts) and keep the fastest result")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  std::vector<std::string> bench_lookups;
  bench->add_option("--lookup", bench_lookups,
                    "Lookup file of `tensortier export` to evaluate beside the policies, as a host applies it: its "
                    "plan table where it has one for the workload and budget, else its generalised lookup "
                    "(repeatable; the same as the policy lookup:FILE)")
      ->check(CLI::ExistingFile);
  AddDecisionScopeOption(bench, bench_opts.scope)
      ->description("The MDP that dqn, sac, their +search and lookup:FILE are rolled out in: the scope the network "
                    "was trained in (train's --decision-scope); access-gaps, relevant or all-live");
  bench->add_option("--mode", bench_mode, "sync or async")->check(CLI::IsMember({"sync", "async"}))->capture_default_str();
  bench->add_option("--slow-tier", bench_opts.slow_tier, SlowTierSpecHelp())->capture_default_str();
  bench->add_option("--repeats", bench_opts.repeats, "Measured iterations per plan and round")->capture_default_str();
  bench->add_option("--rounds", bench_opts.rounds,
                    "Rounds of all-slow and every plan in rotating order, each between two all-DRAM runs (median of per-round ratios to the mean of those two)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bench->add_option("--plan-time-rounds", bench_opts.plan_time_rounds,
                    "+ilp+measured policies: rounds of their candidate plans on real iterations at plan time")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bench->add_option("--clock", bench_opts.clock,
                    "undisturbed (thread CPU time, emulated waits as meant: moved by load in its computing part), "
                    "normalised (the same with its computing part at the profile's speed, by each round's all-DRAM "
                    "run: load moves it least) or wall")
      ->check(CLI::IsMember({"undisturbed", "normalised", "wall"}))
      ->capture_default_str();
  bench->add_option("--ilp-time-limit", bench_opts.solver_time_limit_seconds, "Seconds per ILP solve")
      ->capture_default_str();
  bench->add_option("--ilp-gap", bench_opts.mip_gap,
                    "Relative gap at which every ILP (AutoTM's, the guided ILP's) stops; AutoTM ran Gurobi to 1%. 0: "
                    "on to a proven optimum or --ilp-time-limit (the table's solver status line says which)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  bench->add_option("--ilp-fixed-shares", bench_opts.guided_ilp.fixed_shares,
                    "dqn+ilp, sac+ilp: shares of the network's surest decisions whose tiers are fixed, one ILP solve "
                    "each from the best plan so far, descending; together within --ilp-time-limit [default: " +
                        SharesText(GuidedIlpOptions{}.fixed_shares) + "]")
      ->check(CLI::Range(0.0, 1.0));
  bench->add_option("--search-rollouts", bench_opts.search.max_rollouts,
                    "every *+search policy: episodes of the plan-time search that follow the network after a "
                    "deviation (the greedy and biased ones included; 1: the greedy plan alone)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench->add_option("--search-candidates", bench_opts.search.candidates_per_round,
                    "every *+search policy: the network's least sure decisions a round of rollouts deviates at before "
                    "the search gives up on the rollouts")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench->add_option("--search-seconds", bench_opts.search.max_seconds,
                    "every *+search policy: time limit of the plan-time search per workload and budget (0: none; "
                    "the search also stops when no candidate improves)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench->add_option("--search-replays", bench_opts.search.max_replays,
                    "every *+search policy: episodes that flip one of the incumbent's least-sure decisions and keep "
                    "its others (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench->add_option("--search-replays-per-improvement", bench_opts.search.replays_per_improvement,
                    "every *+search policy: single flips added to --search-replays by each one that improves "
                    "(0: a fixed budget)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench->add_flag_callback("--no-copy-schedule", [&bench_opts] { bench_opts.search.schedule_async_copies = false; },
                           "every *+search policy, async mode: plans as the MDP "
                           "makes them, without moving each copy to the boundary where it is exposed least");
  bench->add_flag_callback("--no-plan-polish", [&bench_opts] { bench_opts.search.polish_plan = false; },
                           "every *+search policy: the search's plan as it ends, without the polish's edits on the plan "
                           "itself (a copied tensor in one tier all iteration; a tensor in DRAM with room made for it)");
  bench->add_option("--search-tensor-replays", bench_opts.search.max_tensor_replays,
                    "every *+search policy: when single flips improve nothing, episodes that put every decision "
                    "of one tensor in one tier, the least sure tensors first (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench->add_option("--search-room-replays", bench_opts.search.max_room_replays,
                    "every *+search policy: when single flips improve nothing, episodes that take one of the "
                    "costliest slow-tier uses to DRAM and evict tensors kept through their gap over its kernel until "
                    "they free its size (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench->add_option("--search-window-replays", bench_opts.search.max_window_replays,
                    "every *+search policy: when no other move improves, episodes that keep one tensor in the slow "
                    "tier over a stretch of its uses and in DRAM elsewhere, or the other way round, the costliest "
                    "tensors first (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench->add_flag_callback("--no-window-pricing", [&bench_opts] { bench_opts.search.price_windows = false; },
                           "every *+search policy: play every window replay, in order, instead of pricing each "
                           "first (the tensor's own reads and copies, the clipped requests where it frees DRAM) and "
                           "skipping those priced at no gain");
  bench->add_option("--search-polish-share", bench_opts.search.polish_share,
                    "every *+search policy: the polish of the searched plan gets at most this share of "
                    "--search-seconds")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  bench->add_option("--search-polished-restarts", bench_opts.search.max_polished_restarts,
                    "every *+search policy: where the search ends with more than a tenth of --search-seconds left, "
                    "search again from the polished plan, up to this many times while each is faster (0: none)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  bench->add_option("--search-kicks", bench_opts.search.max_kicks,
                    "every *+search policy: in the time still left after the polished restarts, up to this many "
                    "kicks: --search-kick-tensors tensors of the best plan, drawn at random from the "
                    "--search-kick-pool the policy was least sure of, moved wholly to the other tier and held there "
                    "while the search goes on from that plan; the faster plan kept (0: none)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  bench->add_option("--search-kick-tensors", bench_opts.search.kick_tensors,
                    "every *+search policy: tensors one kick moves (--search-kicks)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  bench->add_option("--search-kick-pool", bench_opts.search.kick_pool,
                    "every *+search policy: kicks draw from this many tensors the policy was least sure of (0: every "
                    "tensor)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  bench->add_option("--search-move-turn-share", bench_opts.search.move_turn_share,
                    "every *+search policy: each pass of single flips, room, tensor or window replays is a turn of at "
                    "most this share of --search-seconds; one cut short goes on at its next turn (0: a pass runs to "
                    "its end)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  bool bench_cost_model_only = false;
  bench->add_flag("--cost-model-only", bench_cost_model_only, "Do not run real iterations");
  std::optional<double> bench_exposure;
  bench->add_option("--async-copy-exposure", bench_exposure,
                    "Plan and predict as if this share (0-1) of an asynchronous copy's time under the kernel it "
                    "overlaps were paid, in place of the workload's measured one (0: DeepTM's model, copies hidden "
                    "entirely); real iterations are what they are")
      ->check(CLI::Range(0.0, 1.0));
  bench->add_option("--out", bench_out, "Directory for bench.{csv,json,md} and plots")->capture_default_str();

  ModelFlags profile_model;
  std::string profile_out, profile_slow_tier = "auto";
  auto* profile = app.add_subcommand("profile", "Profile a real training iteration into a workload file");
  AddModelOptions(profile, profile_model);
  profile->add_option("--slow-tier", profile_slow_tier, SlowTierSpecHelp())->capture_default_str();
  profile->add_option("--out", profile_out, "Workload file to write (.ttwl)")->required();
  int profile_exposure_rounds = RunnerOptions::kProfileExposureRounds;
  profile->add_option("--exposure-rounds", profile_exposure_rounds,
                      "Rounds of a plan of asynchronous copies against all-DRAM that measure how much of an "
                      "overlapped copy this host still pays (the cost model's async copy exposure); 0: none, "
                      "copies priced as hidden entirely")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  std::string profile_name;
  profile->add_option("--name", profile_name,
                      "The workload's name in tables, CSV and charts (default: the zoo model's, or the TorchScript "
                      "file's stem); letters, digits, '.', '_' and '-'")
      ->check(CLI::Validator(
          [](std::string& v) {
            const bool ok = !v.empty() && v.size() <= 128 && std::all_of(v.begin(), v.end(), [](unsigned char c) {
              return std::isalnum(c) || c == '.' || c == '_' || c == '-';
            });
            return ok ? std::string() : "a name of 1-128 letters, digits, '.', '_' and '-', not '" + v + "'";
          },
          "NAME"));
  AggregationOptions profile_aggregation;  // docs/aggregation.md; the switches are for ablation
  profile->add_flag_callback("--no-batching", [&] { profile_aggregation.batch_small_tensors = false; },
                             "Do not batch small tensors into shared pages");
  profile->add_flag_callback("--no-adjoining", [&] { profile_aggregation.adjoin_long_lived = false; },
                             "Do not adjoin long-lived tensors");
  profile->add_flag_callback("--no-contiguous-migration", [&] { profile_aggregation.contiguous_migration = false; },
                             "Copy every migrating tensor on its own");

  std::string inspect_path;
  auto* inspect = app.add_subcommand("inspect", "Summarise a workload (.ttwl), plan (.ttplan), agent checkpoint (.ckpt) or learner checkpoint (.ttckpt)");
  inspect->add_option("file", inspect_path, "File to summarise")->required()->check(CLI::ExistingFile);

  CorpusPretrainingOptions pretrain_opts;
  bool pretrain_force = false;
  auto* pretrain = app.add_subcommand(
      "pretrain", "One network for many models: imitate each workload's fastest baseline plan at once; the "
                  "network places models it never saw (bench --checkpoint) or starts a run (train --init)");
  AddPretrainOptions(pretrain, pretrain_opts);
  pretrain->add_flag("--force", pretrain_force, "Write into a non-empty --out");

  SyntheticOptions gen;
  std::string gen_shape = "resnet", gen_out;
  auto* generate = app.add_subcommand("generate", "Write a synthetic workload file");
  generate->add_option("--shape", gen_shape, "vgg, resnet, mobilenet, tiny, rnn or transformer")->capture_default_str();
  generate->add_option("--layers", gen.layers, "Layers")->check(CLI::Range(1, 4096))->capture_default_str();
  generate->add_option("--base-bytes", gen.base_bytes, "Scale of tensor sizes")->capture_default_str();
  generate->add_option("--seed", gen.seed, "Random seed")->capture_default_str();
  generate->add_option("--out", gen_out, "Output file")->required();

  KeysFlags keys_flags;
  auto* keys = AddKeysSubcommand(app, keys_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = ExitCodeOf(e);
    if (code == kExitOk) return app.exit(e);  // --help
    std::fprintf(stderr, "tensortier: error: %s\n", e.what());
    for (const std::string& hint : UnknownWordHints(app, std::vector<std::string>(argv + 1, argv + argc)))
      std::fprintf(stderr, "  %s\n", hint.c_str());
    std::fprintf(stderr, "Run with --help for more information.\n");
    return code;
  }
  SetLogLevel(ParseLogLevel(log_level));
  try {
    if (*train) {
      SetLogComponent("train");
      return RunTrain(train_opts, train_model, train_worker, workers, app, train_prometheus);
    }
    if (*learner) {
      SetLogComponent("learner");
      return RunLearner(learner_opts, bind, min_workers, app, learner_sd_dir);
    }
    if (*worker) {
      SetLogComponent("worker");
      return RunWorker(worker_config, worker_flags);
    }
    if (*pretrain) {
      SetLogComponent("pretrain");
      return RunPretrain(pretrain_opts, pretrain_force);
    }
    if (*keys) return RunKeys(keys_flags);
    if (*inspect) return RunInspect(inspect_path);
    if (*exp) {
      if (export_opts.run_dir.empty() && export_opts.checkpoint_path.empty())
        throw std::invalid_argument("export needs a run directory or --checkpoint with --workload and --plan");
      std::cout << ExportLookup(export_opts).Summary();
      return 0;
    }
    if (*bench) {
      bench_opts.mode = bench_mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync;
      bench_opts.measure = !bench_cost_model_only;
      for (const std::string& path : bench_lookups) bench_opts.policies.push_back(kLookupPolicyPrefix + path);
      std::vector<BenchmarkRow> rows;
      for (const std::string& spec : bench_workloads) {
        Workload w = LoadWorkloadInput(spec);
        if (bench_exposure) w.device.async_copy_exposure = *bench_exposure;
        std::printf("bench %s: %zu kernels, %zu tensors, peak %s; %.0f%% of an overlapped async copy paid%s\n",
                    w.name.c_str(), w.num_kernels(), w.num_tensors(), FormatBytes(w.peak_live_bytes()).c_str(),
                    100 * w.device.async_copy_exposure, bench_exposure ? " (--async-copy-exposure)" : "");
        std::fflush(stdout);
        std::vector<BenchmarkRow> more;
        try {
          more = RunBenchmark(w, bench_opts, [](const BenchmarkRow& r) {
            std::printf("  %-18s DRAM %.2f  predicted %6.1f%%  %s%s\n", r.policy.c_str(), r.dram_fraction,
                        100 * r.predicted_relative,
                        r.measured
                            ? ("measured " + std::to_string(100 * r.measured_relative).substr(0, 5) + "%").c_str()
                            : "",
                        r.note.empty() ? "" : ("  (" + r.note + ")").c_str());
            std::fflush(stdout);
          });
        } catch (const lookup::LookupError& e) {  // a lookup file that cannot be used is an input error
          throw InputError(e.what());
        }
        rows.insert(rows.end(), more.begin(), more.end());
      }
      WriteBenchmarkResults(bench_out, rows);
      std::printf("\n%s\nwritten to %s/\n", BenchmarkMarkdown(rows).c_str(), bench_out.c_str());
      return 0;
    }
    if (*report) {
      std::printf("written to %s\n", WriteRunReport(report_dir, report_out).c_str());
      return 0;
    }
    if (*profile) {
      if (profile_model.model.empty() == profile_model.torchscript.empty())
        throw std::invalid_argument("profile needs exactly one of --model and --torchscript");
      Workload w = ProfileModel(profile_model, profile_slow_tier, profile_aggregation, profile_exposure_rounds);
      if (!profile_name.empty()) w.name = profile_name;
      WriteWorkloadFile(w, profile_out);
      std::printf("written to %s\n", profile_out.c_str());
      return 0;
    }
    if (*generate) {
      gen.shape = ParseSyntheticShape(gen_shape);
      Workload w = GenerateSynthetic(gen);
      WriteWorkloadFile(w, gen_out);
      std::cout << DescribeWorkload(w) << "written to " << gen_out << "\n";
      return 0;
    }
  } catch (const std::invalid_argument& e) {  // a value or a combination of flags the library refuses
    std::fprintf(stderr, "tensortier: error: %s\n", e.what());
    return kExitUsage;
  } catch (const InputError& e) {
    std::fprintf(stderr, "tensortier: error: %s\n", e.what());
    return kExitInput;
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "tensortier: error: %s\n", e.what());
    return kExitInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensortier: error: %s\n", e.what());
    return kExitFailure;
  }
  return 0;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) { return tensortier::Main(argc, argv); }
