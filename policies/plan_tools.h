// Pieces the heuristic baselines share: DRAM bookkeeping per kernel, turning
// a "tier of every tensor at every kernel" timeline into a plan under either
// migration mode, and a last-resort repair that makes any plan fit the DRAM
// limit under the cost model.
#pragma once

#include <cstdint>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

// Page size behind Sentinel's and DeepTM's "small tensor" class.
constexpr uint64_t kPageBytes = 4096;

// The limit a policy plans against: 0 means unlimited.
inline uint64_t EffectiveLimit(uint64_t dram_limit_bytes) {
  return dram_limit_bytes == 0 ? UINT64_MAX : dram_limit_bytes;
}

// Whether kernel k writes tensor t / touches it at all.
bool KernelWrites(const Workload& w, size_t k, uint32_t t);
bool KernelTouches(const Workload& w, size_t k, uint32_t t);
// reads + writes over the iteration (Sentinel's "number of accesses").
uint64_t AccessCount(const Workload& w, uint32_t t);
// First kernel > k that touches t, or UINT32_MAX.
uint32_t NextUse(const Workload& w, uint32_t t, uint32_t k);

// Bytes reserved in DRAM per kernel, for policies that decide tensor by
// tensor whether something still fits.
class DramLedger {
 public:
  DramLedger(const Workload& w, uint64_t dram_limit_bytes);
  // Whether `bytes` more fit at every kernel of [first, last].
  bool Fits(uint32_t first, uint32_t last, uint64_t bytes) const;
  void Add(uint32_t first, uint32_t last, uint64_t bytes);
  void Remove(uint32_t first, uint32_t last, uint64_t bytes);
  uint64_t used(uint32_t k) const { return used_[k]; }
  uint64_t free_at(uint32_t k) const { return used_[k] >= limit_ ? 0 : limit_ - used_[k]; }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t limit_;
  std::vector<uint64_t> used_;
};

// Tier of every tensor during each kernel of its lifetime:
// timeline[t][k - alloc_kernel].
using TierTimeline = std::vector<std::vector<Tier>>;

// The plan that follows `timeline` as closely as `mode` allows.
//  - sync: exact; a change at kernel k is a migration after k-1.
//  - async: a change at k is a copy overlapping k-1 (issued after k-2), which
//    keeps the timeline exact and holds both copies during k-1; where that is
//    impossible (k-1 writes the tensor, or it was allocated at k-1) a copy
//    into DRAM lands one kernel early and a copy out one kernel late.
// The plan may exceed the limit in async mode; follow with RepairToLimit.
PlacementPlan TimelineToPlan(const Workload& w, const TierTimeline& timeline, MigrationMode mode,
                             uint64_t dram_limit_bytes);

// Replays a plan the way EvaluatePlan does: tier of every tensor during every
// kernel, and which tensors are being copied into DRAM during each kernel
// (async copies hold DRAM space before the tensor can be used there).
struct PlanReplay {
  std::vector<std::vector<Tier>> tier;              // [kernel][tensor]
  std::vector<std::vector<uint32_t>> copying_in;    // [kernel] -> tensors
  std::vector<uint64_t> dram_bytes;                 // [kernel], as the cost model counts
};
PlanReplay ReplayPlan(const Workload& w, const PlacementPlan& plan);

// Makes `plan` fit its DRAM limit under EvaluatePlan by, at the first kernel
// over the limit, delaying an async copy into DRAM by one kernel or taking a
// tensor's DRAM stay around that kernel away entirely (cheapest slow-penalty
// per byte first). Never raises DRAM use anywhere, so it ends; all-slow always
// fits. Returns how many changes it made (0 when the plan already fit).
int RepairToLimit(const Workload& w, PlacementPlan* plan);

}  // namespace tensortier
