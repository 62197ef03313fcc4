// Runs training iterations of a task under a PlacementPlan (internal; the
// public entry point is executor.h's RealWorkloadRunner).
//
// Per iteration:
//  1. Persistent tensors (ids 0..P-1, see profiler/graph_capture.h) are moved
//     to their initial tier (untimed setup).
//  2. The allocator routes the n-th allocation of the step to the tier of
//     tensor P+n and checks its size against the profile.
//  3. At the end of top-level kernel k: (a) on an emulated slow tier, owe
//     the extra time the kernel's slow-tier accesses would take on the device
//     (profile accesses x DeviceProfile::ExtraAccessNs) and wait what is owed
//     before a copy starts or is finished and at the end of the step (only a
//     copy can tell when the thread waited; one wait per kernel cost more
//     than its length); (b) async mode:
//     finish the copies started after kernel k-1 (exposed time = what is left
//     of them) and swap their storages; (c) start the migrations planned after
//     kernel k: sync = copy now (paced at the device bandwidth when emulated)
//     and swap; async = hand the copy to the copy thread. A move that finds
//     no room waits for kernel k+1's start: the step frees some tensors
//     between two kernels, and the profile counts those frees in kernel k.
//     Before a kernel that writes a tensor whose async copy is still open,
//     the copy is finished first (so data never changes under a copy:
//     results stay bit-identical).
// Aggregation (Config::aggregation, docs/aggregation.md): the executor
// decides each tensor's block class from the workload (small / long-lived /
// own), lays persistent tensors out in their regions at step 1, routes
// dynamic ones to their class, and moves tensors that are adjacent in a
// region and migrate at the same boundary in the same direction as one copy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "executor/counters.h"
#include "allocator/tiered_allocator.h"
#include "models/training_task.h"

namespace tensortier {

class PlanExecutor {
 public:
  struct Config {
    bool emulate_timing = true;  // only has an effect on an emulated slow tier
    bool record_kernel_times = false;
    AggregationOptions aggregation;
  };
  // `workload` and `plan` must outlive the executor; plan validated here.
  PlanExecutor(TieredAllocator& alloc, const Workload& workload, uint32_t num_persistent, const PlacementPlan& plan,
               Config config);
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // One task.Step() under the plan. DramOomError (fail policy) propagates
  // after the executor has cleaned up; the task is then unusable.
  IterationCounters RunIteration(TrainingTask& task, double* loss);
  // Per-kernel durations of the last iteration (Config::record_kernel_times).
  const std::vector<double>& kernel_times_ns() const;
  // The same as the calling thread's CPU time in each kernel plus the time an
  // emulated slow tier added to it: what the kernel takes on a core of its
  // own, however busy the host is (with one intra-op thread, all of a
  // kernel's work is on the calling thread).
  const std::vector<double>& kernel_cpu_times_ns() const;
  // Whether the calling thread was switched out (preempted, or asleep in an
  // emulated wait) between the end of the previous kernel's work and the end
  // of this one's: its caches may have been someone else's meanwhile.
  const std::vector<uint8_t>& kernel_switched() const;
  // What an emulated slow tier charged each kernel for its slow-tier
  // accesses (part of both times above; 0 on a real tier).
  const std::vector<double>& kernel_emulated_ns() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How a profile prices each access in the slow tier on `slow`
// (AssignKernelTimes): by the emulated device's cost of the access (a
// latency per read and write, plus its bytes) when its timing is emulated;
// by bytes (an empty weight) on a real tier, whose latency is not known here.
AccessWeight SlowTierAccessWeight(const MemoryTier& slow, bool emulate_timing);

// Copies n bytes taking at least target_ns (0 = as fast as possible);
// returns the time taken.
// `undisturbed_ns`, when given: how long the copy takes on an idle core,
// max(target_ns, the memcpy's CPU time).
double PacedCopy(void* dst, const void* src, size_t n, double target_ns, double* undisturbed_ns = nullptr);
// Waits (sleeping, then spinning) until steady_clock reaches deadline_ns.
void WaitUntilNs(double deadline_ns);
double SteadyNowNs();
// CPU time of the calling thread (user and system), in ns.
double ThreadCpuNowNs();
// Context switches of the calling thread so far (voluntary and involuntary).
long ThreadContextSwitches();

}  // namespace tensortier
