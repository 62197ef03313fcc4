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
void EvaluateValidPlan(const Workload& w, const PlacementPlan& plan, CostReport& out);

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
