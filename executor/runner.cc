#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

#include "common/log.h"
#include "common/stats.h"
#include "envs/cost_model.h"
#include "executor/copy_calibration.h"
#include "executor/executor.h"
#include "executor/migration_plans.h"
#include "executor/plan_executor.h"
#include "executor/subnormals.h"
#include "profiler/graph_capture.h"

namespace tensortier {

namespace {

std::atomic<bool> g_runner_alive{false};

// 0 where the host does not say.
double LoadAverage1m() {
  double load[1];
  return getloadavg(load, 1) == 1 ? load[0] : 0;
}

}  // namespace

struct RealWorkloadRunner::Impl {
  RunnerOptions o;
  std::shared_ptr<MemoryTier> dram, slow;
  std::unique_ptr<TieredAllocator> alloc;
  std::unique_ptr<TrainingTask> task;
  bool profiled = false;
  ProfileReport report;

  explicit Impl(const RunnerOptions& opts) : o(opts) {
    dram = MakeDramTier();
    slow = MakeSlowTier(o.slow_tier, o.slow_capacity_bytes);
    if (g_runner_alive.exchange(true)) throw std::runtime_error("RealWorkloadRunner: another runner is alive");
    try {
      alloc = std::make_unique<TieredAllocator>(dram, slow);
      alloc->Install();
      if (o.threads > 0) at::set_num_threads(o.threads);
      BuildTask();
    } catch (...) {
      task.reset();
      alloc.reset();
      g_runner_alive = false;
      throw;
    }
  }

  ~Impl() {
    task.reset();
    alloc.reset();  // uninstalls; storages still alive keep the tiers alive
    g_runner_alive = false;
  }

  std::unique_ptr<TrainingTask> NewTask() {
    alloc->set_dram_limit(0);
    auto t = MakeTrainingTask(o.model);
    t->Step();  // creates gradients and optimizer state: the persistent set is complete after it
    return t;
  }

  void BuildTask() {
    task.reset();
    task = NewTask();
  }

  // A kernel's time from its samples. A thread that was switched out comes
  // back to caches another process has filled, and the refill costs CPU time
  // too: with CPU times, the median of the rounds in which the thread ran
  // the kernel (and the gap before it) without a switch, when there are any.
  static double KernelTime(const std::vector<double>& samples, const std::vector<uint8_t>& switched, bool cpu_time,
                           uint64_t* switched_samples) {
    std::vector<double> clean;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (switched[i])
        ++*switched_samples;
      else
        clean.push_back(samples[i]);
    }
    if (!cpu_time) return UndisturbedTime(samples);
    return clean.empty() ? UndisturbedTime(samples) : Median(clean);
  }

  // Kernel times of the all-DRAM and the all-slow plan, measured in
  // alternating rounds so that a change of load falls on both alike. With one
  // intra-op thread a kernel's time is the thread's CPU time in it (plus what
  // an emulated tier adds), which other processes do not stretch (KernelTime
  // for the rounds a switch disturbed); with several threads the CPU time of the calling
  // thread misses the others' work, so it is the wall time, and the lower
  // quartile (UndisturbedTime): what the kernel takes when nothing interrupts it.
  void TimeKernels(const Workload& w, uint32_t P, ProfileReport* r, std::string* difference) {
    const PlacementPlan dram_plan = PlacementPlan::Uniform(w, Tier::kDram, 0);
    const PlacementPlan slow_plan = PlacementPlan::Uniform(w, Tier::kSlow, 0);
    PlanExecutor::Config cfg;
    cfg.emulate_timing = o.emulate_slow_timing;
    cfg.record_kernel_times = true;
    cfg.aggregation = o.aggregation;
    PlanExecutor dram_ex(*alloc, w, P, dram_plan, cfg);
    PlanExecutor slow_ex(*alloc, w, P, slow_plan, cfg);
    const bool cpu_time = o.threads == 1;
    const int rounds = std::max(1, o.profile_timing_iterations);
    const size_t K = w.num_kernels();
    std::vector<std::vector<double>> dram_samples(K), slow_samples(K), slow_charges(K);
    std::vector<std::vector<uint8_t>> dram_switched(K), slow_switched(K);
    std::vector<double> dram_iters, slow_iters;
    auto run = [&](PlanExecutor& ex, std::vector<std::vector<double>>& samples,
                   std::vector<std::vector<uint8_t>>& switched, std::vector<double>& iters) {
      double loss;
      IterationCounters c = ex.RunIteration(*task, &loss);
      if (!c.graph_matches && difference->empty()) *difference = c.graph_difference;
      iters.push_back(c.iteration_ns);
      const std::vector<double>& times = cpu_time ? ex.kernel_cpu_times_ns() : ex.kernel_times_ns();
      for (size_t k = 0; k < K; ++k) {
        samples[k].push_back(times[k]);
        switched[k].push_back(ex.kernel_switched()[k]);
      }
    };
    for (int i = 0; i < rounds; ++i) {
      run(dram_ex, dram_samples, dram_switched, dram_iters);
      run(slow_ex, slow_samples, slow_switched, slow_iters);
      for (size_t k = 0; k < K; ++k) slow_charges[k].push_back(slow_ex.kernel_emulated_ns()[k]);
    }
    r->kernel_dram_ns.resize(K);
    r->kernel_slow_ns.resize(K);
    uint64_t switched_samples = 0;
    for (size_t k = 0; k < K; ++k) {
      r->kernel_dram_ns[k] = KernelTime(dram_samples[k], dram_switched[k], cpu_time, &switched_samples);
      r->kernel_slow_ns[k] = KernelTime(slow_samples[k], slow_switched[k], cpu_time, &switched_samples);
    }
    if (slow->emulation() != nullptr && o.emulate_slow_timing) {
      r->kernel_slow_charged_ns.resize(K);
      for (size_t k = 0; k < K; ++k) r->kernel_slow_charged_ns[k] = Median(slow_charges[k]);
    }
    r->switched_kernel_fraction = static_cast<double>(switched_samples) / static_cast<double>(2 * K * rounds);
    r->iteration_dram_ns = Median(dram_iters);
    r->iteration_slow_ns = Median(slow_iters);
    r->timing_rounds = rounds;
    r->kernel_timing = std::string(cpu_time ? "thread-cpu+emulated, median" : "wall, lower quartile") + " of " +
                       std::to_string(rounds) + " interleaved rounds" +
                       (cpu_time ? " (rounds with a context switch left out)" : "") +
                       (o.flush_subnormals ? "; subnormals flushed" : "");
  }

  const ProfileReport& Profile() {
    if (profiled) return report;
    const SubnormalsFlushed flushed(o.flush_subnormals);
    ProfileReport r;
    r.backend = slow->backend();
    r.dram_backend = dram->backend();
    r.load_average_start = LoadAverage1m();
    const double t0 = SteadyNowNs();
    CapturedIteration a = CaptureIteration(*task, *alloc);
    r.capture_iteration_ns = SteadyNowNs() - t0;
    CapturedIteration b = CaptureIteration(*task, *alloc);
    r.graph_difference = CompareGraphs(a, b);
    // A graph may settle only after a few iterations (TorchScript's profiling
    // executor specialises its graph after the first runs): capture until two
    // consecutive iterations agree, up to kMaxCaptures.
    constexpr int kMaxCaptures = 6;
    r.captures = 2;
    while (!r.graph_difference.empty() && r.captures < kMaxCaptures) {
      if (r.first_difference.empty()) r.first_difference = r.graph_difference;
      a = std::move(b);
      b = CaptureIteration(*task, *alloc);
      ++r.captures;
      r.graph_difference = CompareGraphs(a, b);
    }
    r.deterministic = r.graph_difference.empty();
    r.num_persistent = b.num_persistent;
    r.untracked_persistent = b.untracked_persistent;
    r.alive_at_end = b.alive_at_end;
    r.captured_loss = b.loss;
    Workload w = std::move(b.workload);
    const uint32_t P = r.num_persistent;

    std::string diff;
    TimeKernels(w, P, &r, &diff);
    if (!diff.empty() && r.deterministic) {
      r.deterministic = false;
      r.graph_difference = "timing iterations: " + diff;
    }
    const AccessWeight weight = SlowTierAccessWeight(*slow, o.emulate_slow_timing);
    AssignKernelTimes(w, r.kernel_dram_ns, r.kernel_slow_ns, weight, r.kernel_slow_charged_ns);
    r.kernel_timing += weight ? "; each slow-tier access priced at the device's latency and bytes for it alone, "
                                "the rest of a kernel's measured extra spread by them"
                              : "; slow-tier time spread over accesses by bytes";
    w.device.name = slow->backend();
    w.device.slow_capacity_bytes = o.slow_capacity_bytes;
    // Copies priced as the executor pays them on this host (an emulated
    // device's pace, but never faster than the host's copy into fresh pages).
    const DeviceProfile* pace = o.emulate_slow_timing ? slow->emulation() : nullptr;
    const CopyCost to_slow = MeasureCopyCost(*dram, *slow, pace, /*to_slow=*/true, o.copy_calibration_rounds);
    const CopyCost to_dram = MeasureCopyCost(*slow, *dram, pace, /*to_slow=*/false, o.copy_calibration_rounds);
    w.device.dram_to_slow_bytes_per_second = to_slow.bytes_per_second;
    w.device.dram_to_slow_copy_setup_ns = to_slow.setup_ns;
    w.device.slow_to_dram_bytes_per_second = to_dram.bytes_per_second;
    w.device.slow_to_dram_copy_setup_ns = to_dram.setup_ns;
    w.source = "libtorch:" + o.model.name + " batch=" + std::to_string(o.model.batch_size) +
               " image=" + std::to_string(o.model.image_size) + " slow=" + slow->backend();
    w.model.name = o.model.name;
    // Absolute, so that the workload file works from any directory (bench,
    // train and workers run where they are started, not where it was profiled).
    if (!o.model.torchscript_path.empty())
      w.model.torchscript_path =
          std::filesystem::absolute(o.model.torchscript_path).lexically_normal().string();
    w.model.batch_size = static_cast<uint32_t>(o.model.batch_size);
    w.model.image_size = static_cast<uint32_t>(o.model.image_size);
    w.model.num_classes = static_cast<uint32_t>(o.model.num_classes);
    w.model.optimizer = o.model.optimizer;
    w.model.seed = o.model.seed;
    w.profile.kernel_timing = r.kernel_timing;
    w.profile.timing_rounds = static_cast<uint32_t>(r.timing_rounds);
    w.profile.copy_rounds = static_cast<uint32_t>(std::max(1, o.copy_calibration_rounds));
    w.profile.copy_timing = "undisturbed (the device's time or the memcpy's CPU time), lower quartile of " +
                            std::to_string(w.profile.copy_rounds) + " rounds";
    w.profile.load_average_start = r.load_average_start;
    w.profile.load_average_end = LoadAverage1m();
    w.profile.online_cpus = static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    w.profile.dram_iteration_wall_ns = r.iteration_dram_ns;
    w.profile.slow_iteration_wall_ns = r.iteration_slow_ns;
    w.Finalize();
    r.workload = std::move(w);
    report = std::move(r);
    profiled = true;
    if (o.exposure_calibration_rounds > 0) CalibrateAsyncCopyExposure();
    LogInfo("profiled")
        .kv("model", o.model.name)
        .kv("kernels", report.workload.num_kernels())
        .kv("tensors", report.workload.num_tensors())
        .kv("peak_bytes", report.workload.peak_live_bytes())
        .kv("pinned_dram_bytes", report.workload.pinned_dram_bytes())
        .kv("deterministic", report.deterministic)
        .kv("backend", report.backend)
        .kv("aggregation", o.aggregation.Describe());
    return report;
  }

  // DeviceModel::async_copy_exposure, on the executor's own path: a plan of
  // copies and nothing else the model prices (EvictBetweenUsesPlan: no
  // slow-tier access, no copies that contiguous migration merges), run
  // asynchronously, and all-DRAM, in turn. Per round, what the plan took
  // beyond all-DRAM (undisturbed medians of the same round) less what the
  // cost model with copies hidden entirely says it takes beyond, over the
  // copy time it hides under kernels; the median of the rounds, clamped to
  // [0, 1]. Plans with slow-tier accesses or merged copies bring the
  // model's other errors in (a prefetch-evict plan read -1.2 on
  // Inception-v3). What asynchronous copies cost beyond their standalone
  // price (a wake-up, a page fault, caches refilled) lands here too, so the
  // model charges it where it is paid; scaling every copy's price by the
  // same plan run blocking was tried and predicted plans no better
  // (docs/results/executor.md).
  void CalibrateAsyncCopyExposure() {
    Workload& w = report.workload;
    w.device.async_copy_exposure = 0;
    const PlacementPlan dram = PlacementPlan::Uniform(w, Tier::kDram, 0);
    const PlacementPlan async = EvictBetweenUsesPlan(w);
    const CostReport cost = EvaluatePlan(w, async);
    const double dram_ns = MinCostNs(w);
    const double exposed_ns = cost.total_ns - dram_ns;  // the copies' time beyond their kernels
    // Under a twentieth of an iteration the share would be the rounds' noise
    // (a millisecond or two here) over a little copy time: not measured.
    const double hidden_share = cost.overlapped_ns / dram_ns;
    if (hidden_share < kMinHiddenShare) {
      w.profile.copy_timing += "; async copy exposure not measured (the kernels hide copies of " +
                               std::to_string(100 * hidden_share).substr(0, 4) + "% of an iteration): 0";
      LogInfo("async_copy_exposure_not_measured").kv("hidden_share", hidden_share);
      return;
    }
    std::vector<double> shares;
    for (int round = 0; round < o.exposure_calibration_rounds; ++round) {
      const int warmup = round == 0 ? 1 : 0;
      bool broken = false;
      const ExecutionReport a = Run(*task, dram, warmup, kExposureRepeats, &broken);
      if (broken) BuildTask();
      const ExecutionReport b = Run(*task, async, warmup, kExposureRepeats, &broken);
      if (broken) BuildTask();
      if (!a.ok || !b.ok) continue;
      const double extra_ns = b.undisturbed_median_ns - a.undisturbed_median_ns;
      shares.push_back((extra_ns - exposed_ns) / cost.overlapped_ns);
    }
    if (shares.empty()) {
      w.profile.copy_timing += "; async copy exposure not measured (no round ran): 0";
      return;
    }
    const double raw_share = Median(shares);
    const double share = std::clamp(raw_share, 0.0, 1.0);
    w.device.async_copy_exposure = share;
    w.profile.copy_timing += "; async copy exposure " + std::to_string(share).substr(0, 5) + ", median of " +
                             std::to_string(shares.size()) + " rounds of copies between uses against all-DRAM";
    LogInfo("async_copy_exposure_calibrated")
        .kv("hidden_ms", cost.overlapped_ns / 1e6)
        .kv("exposed_ms", exposed_ns / 1e6)
        .kv("rounds", shares.size())
        .kv("raw_median", raw_share)
        .kv("exposure", share);
  }
  static constexpr int kExposureRepeats = 3;
  static constexpr double kMinHiddenShare = 0.05;

  ExecutionReport Run(TrainingTask& t, const PlacementPlan& plan, int warmup, int repeats, bool* task_broken) {
    if (!profiled) throw std::logic_error("RealWorkloadRunner: Profile() before Execute()");
    const SubnormalsFlushed flushed(o.flush_subnormals);
    const Workload& w = report.workload;
    ExecutionReport r;
    r.model = o.model.name;
    r.backend = slow->backend();
    r.mode = MigrationModeName(plan.mode);
    r.plan_hash = plan.Hash();
    r.aggregation = o.aggregation.Describe();
    PlanExecutor::Config cfg;
    cfg.emulate_timing = o.emulate_slow_timing;
    cfg.aggregation = o.aggregation;
    PlanExecutor ex(*alloc, w, report.num_persistent, plan, cfg);  // throws invalid_argument for a bad plan
    alloc->set_dram_limit(plan.dram_limit_bytes);
    alloc->set_overflow_policy(o.overflow_policy);
    const uint64_t failed0 = alloc->counters().failed_allocations;
    try {
      for (int i = 0; i < warmup + repeats; ++i) {
        double loss = 0;
        IterationCounters c = ex.RunIteration(t, &loss);
        if (!c.graph_matches) {
          r.ok = false;
          r.failure = "graph changed: " + c.graph_difference;
          break;
        }
        if (o.overflow_policy == DramOverflowPolicy::kFail && c.migration_oom_events > 0) {
          // The step ran to the end (with the tensors left in the slow tier):
          // the task is intact, the episode is failed.
          r.ok = false;
          r.failure = "DRAM OOM: " + std::to_string(c.migration_oom_events) +
                      " migrations into DRAM would exceed the limit of " + std::to_string(plan.dram_limit_bytes) +
                      " bytes";
          break;
        }
        if (i >= warmup) {
          r.iteration_ns.push_back(c.iteration_ns);
          r.undisturbed_ns.push_back(c.undisturbed_iteration_ns);
          r.losses.push_back(loss);
          r.counters.push_back(std::move(c));
        }
      }
    } catch (const std::exception& e) {
      r.ok = false;
      const bool oom = alloc->counters().failed_allocations > failed0;
      r.failure = std::string(oom ? "DRAM OOM: " : "iteration failed: ") + e.what();
      *task_broken = true;
    }
    alloc->set_dram_limit(0);
    if (!r.iteration_ns.empty()) {
      r.median_ns = Median(r.iteration_ns);
      r.undisturbed_median_ns = Median(r.undisturbed_ns);
      r.min_ns = *std::min_element(r.iteration_ns.begin(), r.iteration_ns.end());
      r.max_ns = *std::max_element(r.iteration_ns.begin(), r.iteration_ns.end());
      r.spread = r.median_ns > 0 ? (r.max_ns - r.min_ns) / r.median_ns : 0;
    }
    return r;
  }
};

RealWorkloadRunner::RealWorkloadRunner(const RunnerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
RealWorkloadRunner::~RealWorkloadRunner() = default;

const ProfileReport& RealWorkloadRunner::Profile() { return impl_->Profile(); }
bool RealWorkloadRunner::profiled() const { return impl_->profiled; }
const Workload& RealWorkloadRunner::workload() const {
  if (!impl_->profiled) throw std::logic_error("RealWorkloadRunner: Profile() first");
  return impl_->report.workload;
}

ExecutionReport RealWorkloadRunner::Execute(const PlacementPlan& plan) {
  return Execute(plan, impl_->o.warmup_iterations, impl_->o.repeats);
}

ExecutionReport RealWorkloadRunner::Execute(const PlacementPlan& plan, int warmup, int repeats) {
  bool broken = false;
  ExecutionReport r = impl_->Run(*impl_->task, plan, warmup, repeats, &broken);
  if (broken) impl_->BuildTask();
  return r;
}

TrainingSnapshot RealWorkloadRunner::RunFresh(const PlacementPlan& plan, int iterations, ExecutionReport* report) {
  // The runner's task is replaced (not kept beside the fresh one: its live
  // storages would count as untracked persistent tensors of the fresh one).
  impl_->BuildTask();
  TrainingTask* fresh = impl_->task.get();
  bool broken = false;
  ExecutionReport r = impl_->Run(*fresh, plan, 0, iterations, &broken);
  TrainingSnapshot s;
  s.losses = r.losses;
  if (r.ok) {
    const auto params = fresh->Parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      for (int g = 0; g < 2; ++g) {
        at::Tensor t = g == 0 ? params[i] : params[i].grad();
        if (!t.defined()) continue;
        at::Tensor c = t.detach().contiguous();
        s.names.push_back((g == 0 ? "param" : "grad") + std::to_string(i));
        s.bytes.emplace_back(static_cast<const char*>(c.data_ptr()), c.nbytes());
      }
    }
  }
  if (report) *report = std::move(r);
  if (broken) impl_->BuildTask();
  return s;
}

ProfilerOverhead RealWorkloadRunner::MeasureProfilerOverhead(int rounds) {
  Impl& m = *impl_;
  if (!m.profiled) throw std::logic_error("RealWorkloadRunner: Profile() before MeasureProfilerOverhead()");
  const Workload& w = m.report.workload;
  const PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kDram, 0);
  PlanExecutor::Config cfg;
  cfg.emulate_timing = m.o.emulate_slow_timing;
  cfg.aggregation = m.o.aggregation;
  PlanExecutor ex(*m.alloc, w, m.report.num_persistent, plan, cfg);
  const SubnormalsFlushed flushed(m.o.flush_subnormals);
  auto cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  };
  std::vector<double> plain, executor, capture, plain_cpu, executor_cpu, capture_cpu;
  for (int i = 0; i < std::max(1, rounds); ++i) {
    double t0 = SteadyNowNs(), c0 = cpu_ns();
    m.task->Step();
    plain.push_back(SteadyNowNs() - t0);
    plain_cpu.push_back(cpu_ns() - c0);
    double loss;
    c0 = cpu_ns();
    executor.push_back(ex.RunIteration(*m.task, &loss).iteration_ns);
    executor_cpu.push_back(cpu_ns() - c0);
    t0 = SteadyNowNs();
    c0 = cpu_ns();
    CaptureIteration(*m.task, *m.alloc);
    capture.push_back(SteadyNowNs() - t0);
    capture_cpu.push_back(cpu_ns() - c0);
  }
  ProfilerOverhead o;
  o.plain_step_ns = Median(plain);
  o.executor_step_ns = Median(executor);
  o.capture_step_ns = Median(capture);
  o.plain_step_cpu_ns = Median(plain_cpu);
  o.executor_step_cpu_ns = Median(executor_cpu);
  o.capture_step_cpu_ns = Median(capture_cpu);
  o.rounds = std::max(1, rounds);
  return o;
}

std::string RealWorkloadRunner::backend() const { return impl_->slow->backend(); }
void RealWorkloadRunner::set_aggregation(const AggregationOptions& aggregation) { impl_->o.aggregation = aggregation; }
TieredAllocator& RealWorkloadRunner::allocator() { return *impl_->alloc; }
const RunnerOptions& RealWorkloadRunner::options() const { return impl_->o; }

ModelOptions ModelOptionsFor(const ModelSpec& spec) {
  ModelOptions m;
  m.name = spec.name;
  m.torchscript_path = spec.torchscript_path;
  m.batch_size = spec.batch_size;
  m.image_size = spec.image_size;
  m.num_classes = spec.num_classes;
  m.optimizer = spec.optimizer;
  m.seed = spec.seed;
  return m;
}

RunnerOptions ZooRunnerOptions(const std::string& model, int64_t batch_size, int64_t image_size,
                               const std::string& slow_tier) {
  RunnerOptions o;
  o.model.name = model;
  o.model.batch_size = batch_size;
  o.model.image_size = image_size;
  o.slow_tier = slow_tier;
  return o;
}

}  // namespace tensortier
