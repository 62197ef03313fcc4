// DeepTM's cost model (eq. 1-7): execution time from the additive kernel-time
// model, migration time from the device's copy bandwidths, a per-kernel DRAM
// limit that counts copies in flight, and out-of-memory detection.
#pragma once

#include <cstdint>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

struct CostReport {
  double total_ns = 0;           // C_total = C_e + C_m (exposed)
  double exec_ns = 0;            // C_e
  double migration_ns = 0;       // C_m: blocking copies (sync) or exposed copy time (async)
  double raw_migration_ns = 0;   // every copy's duration, overlapped or not
  // Async copy time under the kernels it overlaps (sum over kernels of
  // min(copies, kernel)); migration_ns holds DeviceModel::async_copy_exposure of it.
  double overlapped_ns = 0;
  uint64_t dram_peak_bytes = 0;
  uint64_t slow_peak_bytes = 0;
  uint64_t bytes_to_slow = 0;
  uint64_t bytes_to_dram = 0;
  uint32_t migrations_to_slow = 0;
  uint32_t migrations_to_dram = 0;
  bool oom = false;
  int32_t oom_kernel = -1;        // first kernel over the limit
  uint64_t oom_excess_bytes = 0;  // by how much
  std::vector<double> kernel_ns;  // per kernel, exec + exposed migration after it
};

// Scores `plan` on `w` with DRAM limited to plan.dram_limit_bytes (0 = no
// limit). Tensors that are persistent and end the iteration in another tier
// than they started are moved back after the last kernel, as the next
// iteration needs them where the plan starts them.
CostReport EvaluatePlan(const Workload& w, const PlacementPlan& plan);
// EvaluatePlan without plan.Validate(w), which hashes the whole workload:
// for callers that score many plans valid by construction (PlacementEnv,
// once per episode). Reuses out's buffers; `w` must be finalized.
//
// With `ledger`, also what each kernel adds up (KernelLedger), for a caller
// that changes a plan one copy at a time and prices each change locally;
// with `tensors`, what each tensor costs (TensorLedger).
struct KernelLedger;
struct TensorLedger;
void EvaluateValidPlan(const Workload& w, const PlacementPlan& plan, CostReport& out,
                       KernelLedger* ledger = nullptr, TensorLedger* tensors = nullptr);

// Per kernel k, the terms of EvaluateValidPlan's sum: kernel_ns[k] =
// exec_ns[k] + blocking_ns[k] + ExposedAsyncCopyNs(overlapped_ns[k],
// exec_ns[k]) (plus, on the last kernel, the copies back of persistent
// tensors). dram_bytes and slow_bytes are what the limits are checked
// against: live tensors in each tier, a copy in flight in both.
struct KernelLedger {
  std::vector<double> exec_ns;
  std::vector<double> blocking_ns;    // sync copies, and async ones of a tensor the kernel writes
  std::vector<double> overlapped_ns;  // async copies issued at the boundary before the kernel
  std::vector<uint64_t> dram_bytes;
  std::vector<uint64_t> slow_bytes;
};

// Per tensor t, what EvaluateValidPlan charged to it: the slow penalties of
// its accesses in the slow tier (their sum over tensors plus the kernels'
// DRAM times is exec_ns) and its copies, the copy back after the last kernel
// included, at their whole duration (raw_migration_ns sums them; in async
// mode a kernel hides part of the copies under it, which is the kernel's,
// not a tensor's). Where a plan loses time, by tensor (bench_plan_attribution).
struct TensorLedger {
  std::vector<double> slow_penalty_ns;
  std::vector<uint32_t> slow_accesses;
  std::vector<double> copy_ns;
  std::vector<uint32_t> copies;
};

// Time of a copy of `bytes` towards `to` on the workload's device: its fixed
// setup cost plus bytes over its bandwidth.
double CopyTimeNs(const Workload& w, uint64_t bytes, Tier to);

// What an asynchronous copy of `copy_ns` costs the iteration when it runs
// alone under a kernel of `kernel_ns`: all of it beyond the kernel, and
// w.device.async_copy_exposure of the part under it.
double ExposedAsyncCopyNs(const Workload& w, double copy_ns, double kernel_ns);

// C_min (all DRAM, no migrations) and C_max (all slow).
double MinCostNs(const Workload& w);
double MaxCostNs(const Workload& w);
// (C - C_min) / (C_max - C_min), not clamped.
double NormalisedCost(const Workload& w, double cost_ns);

}  // namespace tensortier
