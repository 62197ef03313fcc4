// Real execution of training iterations on tiered memory: the public API.
//
//   RunnerOptions o;
//   o.model.name = "resnet18"; o.model.batch_size = 4; o.model.image_size = 32;
//   o.slow_tier = "auto";                       // --slow-tier
//   RealWorkloadRunner runner(o);               // installs the tiered allocator, builds the task
//   const ProfileReport& p = runner.Profile();  // the Workload of a real iteration
//   WriteWorkload(p.workload, ...);             // (envs/workload_io.h)
//   PlacementPlan plan = ...;                   // for p.workload
//   ExecutionReport r = runner.Execute(plan);   // warm-up, then `repeats` measured iterations
//   r.median_ns, r.spread, r.counters[i] ...    // r.backend names the slow tier and its profile
//
// One runner at a time per process: it owns the process's CPU allocator
// (c10::SetCPUAllocator) from construction to destruction. Not thread-safe;
// call it from one thread. LibTorch's intra-op threads are left as they are
// unless RunnerOptions::threads is set.
//
// Emulation: on an `emulated:PROFILE` slow tier the memory is DRAM; the
// executor adds the device model's extra time to every kernel for its
// slow-tier accesses and paces migration copies at the device bandwidth
// (docs/emulation.md). Reports say "emulated:PROFILE" in `backend`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "allocator/aggregation.h"
#include "executor/counters.h"
#include "allocator/overflow_policy.h"
#include "models/model_options.h"

namespace tensortier {

class TieredAllocator;  // allocator/tiered_allocator.h (LibTorch): the public API stays free of it

struct RunnerOptions {
  ModelOptions model;
  std::string slow_tier = "auto";   // see tiers/memory_tier.h
  uint64_t slow_capacity_bytes = 0; // 0 = unbounded
  DramOverflowPolicy overflow_policy = DramOverflowPolicy::kSpillToSlow;
  bool emulate_slow_timing = true;  // emulated tiers only; false = plain DRAM speed
  int warmup_iterations = 1;        // per Execute, before the measured ones
  int repeats = 5;                  // measured iterations per Execute
  int profile_timing_iterations = 5;  // rounds of one all-DRAM and one all-slow iteration, for kernel times
  int copy_calibration_rounds = 15;   // copies per size and direction, for copy prices
  // Rounds of one all-DRAM and one EvictBetweenUsesPlan run, for
  // DeviceModel::async_copy_exposure (0: leave it 0, copies hidden
  // entirely). Only a workload file's profile needs it: runners that profile
  // to run plans (bench, workers) leave it off; `tensortier profile` takes
  // kProfileExposureRounds.
  int exposure_calibration_rounds = 0;
  static constexpr int kProfileExposureRounds = 5;
  int threads = 0;                  // LibTorch intra-op threads; 0 = leave as is
  // Subnormal floats flushed to zero (FTZ/DAZ) on the thread that profiles
  // and runs iterations, while it does (x86; elsewhere no effect). They take
  // a slow path: a small model trained on one batch reaches them, and its
  // iterations then take several times longer until they underflow to zero,
  // whatever the placement (docs/emulation.md).
  bool flush_subnormals = true;
  AggregationOptions aggregation;   // DeepTM's batching / adjoining / contiguous migration (docs/aggregation.md)
};

struct ProfileReport {
  Workload workload;       // finalized; dram_time_ns and slow_penalty_ns measured
  uint32_t num_persistent = 0;
  std::string backend;     // the slow tier, e.g. "emulated:optane-dcpmm"
  std::string dram_backend;
  bool deterministic = false;     // two consecutive captured iterations gave the same graph
  std::string graph_difference;   // their first difference when not
  int captures = 0;               // iterations captured until two agreed (2 = at once)
  std::string first_difference;   // when captures > 2: how the first two differed
  uint32_t untracked_persistent = 0;
  uint32_t alive_at_end = 0;
  double captured_loss = 0;  // the captured step's loss: NaN says the model's numbers are not finite
  std::vector<double> kernel_dram_ns;  // per kernel_timing
  std::vector<double> kernel_slow_ns;  // the same, everything in the slow tier
  // What an emulated slow tier charged each kernel of the all-slow runs
  // (median; empty on a real tier): how the profile prices each access
  // (AssignKernelTimes).
  std::vector<double> kernel_slow_charged_ns;
  double iteration_dram_ns = 0;        // medians of whole iterations (wall clock)
  double iteration_slow_ns = 0;
  std::string kernel_timing;           // how kernel times were measured (Workload::profile)
  int timing_rounds = 0;
  double switched_kernel_fraction = 0;  // of the kernels' timing samples: thread switched out (KernelTime)
  double load_average_start = 0;       // 1-minute load average when profiling began
  double capture_iteration_ns = 0;     // the capture itself (with access tracing)
};

struct ExecutionReport {
  bool ok = true;
  std::string failure;       // why not ok: DRAM OOM under the fail policy, graph changed, ...
  std::string model;
  std::string backend;       // slow tier backend (+ profile)
  std::string mode;          // "sync" / "async"
  std::string aggregation;   // AggregationOptions::Describe() of the run
  uint64_t plan_hash = 0;
  std::vector<double> iteration_ns;  // measured iterations
  double median_ns = 0, min_ns = 0, max_ns = 0;
  double spread = 0;         // (max - min) / median
  // IterationCounters::undisturbed_iteration_ns of the measured iterations
  // and their median (with RunnerOptions::threads == 1: the load-independent
  // time; with more threads it misses the other threads' work).
  std::vector<double> undisturbed_ns;
  double undisturbed_median_ns = 0;
  std::vector<IterationCounters> counters;  // one per measured iteration
  std::vector<double> losses;
};

// Loss per iteration and the bytes of every parameter and gradient at the
// end: what bit-identity is checked on.
struct TrainingSnapshot {
  std::vector<double> losses;
  std::vector<std::string> names;
  std::vector<std::string> bytes;
};

// What profiling costs, per iteration (medians of interleaved rounds).
struct ProfilerOverhead {
  double plain_step_ns = 0;     // task.Step() alone: no tracer, no routing (allocator installed)
  double executor_step_ns = 0;  // one executor iteration, all-DRAM plan (kernel boundaries, storages observed)
  double capture_step_ns = 0;   // CaptureIteration: access counting, plus building the graph
  // The same in CPU time of the calling thread (with RunnerOptions::threads
  // = 1 all of the work; robust to other processes on a shared machine).
  double plain_step_cpu_ns = 0, executor_step_cpu_ns = 0, capture_step_cpu_ns = 0;
  int rounds = 0;
};

// The model options a workload was profiled with (Workload::model), so that
// a worker or a benchmark rebuilds the same training job.
ModelOptions ModelOptionsFor(const ModelSpec& spec);

// A zoo model at one batch and image size on `slow_tier`, every other
// setting at its default: the run benches and tests profile by name.
RunnerOptions ZooRunnerOptions(const std::string& model, int64_t batch_size, int64_t image_size,
                               const std::string& slow_tier);

class RealWorkloadRunner {
 public:
  // Throws std::invalid_argument (bad model options or --slow-tier) or
  // std::runtime_error (tier unavailable, another runner alive).
  explicit RealWorkloadRunner(const RunnerOptions& options);
  ~RealWorkloadRunner();
  RealWorkloadRunner(const RealWorkloadRunner&) = delete;
  RealWorkloadRunner& operator=(const RealWorkloadRunner&) = delete;

  // Captures the graph until two consecutive iterations agree (at most 6
  // captures; `deterministic` false if they never do), then times kernels with all
  // tensors in DRAM and all in the slow tier, in alternating rounds, so that
  // the times do not move with the host's load (kernel_timing says how; the
  // workload's `profile` records it with the load average). The extra time of a kernel in
  // the slow tier is split over the tensors it accesses in proportion to
  // size x (reads + writes): their slow_penalty_ns. Cached after the first call.
  const ProfileReport& Profile();
  bool profiled() const;
  const Workload& workload() const;  // Profile() first

  // Runs warm-up + measured iterations of the runner's task under `plan`
  // (for workload()). Never throws for OOM: a failed episode comes back with
  // ok = false, and the task is rebuilt for the next call. DRAM limit =
  // plan.dram_limit_bytes (0 = none). Under DramOverflowPolicy::kFail an
  // allocation or a migration into DRAM beyond the limit fails the episode;
  // under kSpillToSlow the allocation goes to the slow tier / the tensor
  // stays there, and counters say how often. Throws std::invalid_argument
  // for a plan that does not fit workload().
  ExecutionReport Execute(const PlacementPlan& plan);
  ExecutionReport Execute(const PlacementPlan& plan, int warmup_iterations, int repeats);

  // Rebuilds the runner's task (same seeds), one all-DRAM warm-up step, then
  // `iterations` steps under `plan`: for correctness checks against an
  // all-DRAM plan. The caller must not hold CPU tensors made after the
  // runner was built (they would count as untracked persistent tensors).
  TrainingSnapshot RunFresh(const PlacementPlan& plan, int iterations, ExecutionReport* report = nullptr);

  // Interleaves plain, executor and capture iterations `rounds` times (Profile() first).
  ProfilerOverhead MeasureProfilerOverhead(int rounds);

  std::string backend() const;
  // For the next Profile / Execute / RunFresh (ablations switch it between runs).
  void set_aggregation(const AggregationOptions& aggregation);
  TieredAllocator& allocator();
  const RunnerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortier
