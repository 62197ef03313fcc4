// Sentinel (HPCA 2021), replayed on the static graph: tensor classes, a
// DRAM pool for short-lived tensors, layer-interval migration of long-lived
// tensors with the migration interval length (MIL) chosen by simulated
// exposed migration time, hottest-first prefetch for the next interval,
// eager eviction, and test-and-trial on late migrations.
//
// Our kernels play Sentinel's layers. The cost model stands in for the
// training steps Sentinel's test-and-trial runs.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "policies/policy.h"

namespace tensortier {

enum class SentinelClass : uint8_t {
  kShortLived = 0,      // alive in at most one kernel: the DRAM pool, never migrated
  kSmallLongLived = 1,  // under a page: packed with tensors alive in exactly the same kernels
  kLongLived = 2,
};
SentinelClass ClassifyForSentinel(const Workload& w, uint32_t t);

// What Sentinel migrates: one long-lived tensor, or the small long-lived
// tensors that share pages because they are alive in the same kernels.
struct SentinelUnit {
  std::vector<uint32_t> tensors;
  uint64_t size_bytes = 0;
  uint32_t alloc_kernel = 0, free_kernel = 0;
  bool persistent = false;
  std::vector<uint32_t> uses;  // kernels touching any member, ascending
  uint64_t accesses = 0;       // reads + writes of all members: the hotness order
};
std::vector<SentinelUnit> SentinelUnits(const Workload& w);

struct SentinelMilCandidate {
  int mil = 0;
  uint64_t tensor_bytes = 0;       // Tensor(MIL): largest interval working set + its incoming prefetch
  uint64_t short_lived_bytes = 0;  // RS(MIL): the short-lived pool
  bool feasible = false;           // Tensor(MIL) < S - RS(MIL)   (eq. 1)
  double exposed_ns = 0;           // sum_i max(0, incoming_{i+1} / BW - T_i)
};

struct SentinelMilChoice {
  std::vector<SentinelMilCandidate> candidates;  // MIL = 1, 2, ...
  int mil = 1;
  bool feasible = false;  // whether any candidate met eq. 1
};

// Eq. 1 narrows the lengths; among those left the least simulated exposed
// migration wins (ties: the longer interval, fewer migrations). The literal
// eq. 2 would always pick the longest feasible interval. With no feasible
// length (fast memory under Sentinel's lower bound) this returns the length
// closest to feasible; SentinelPolicy then picks by simulated step time.
SentinelMilChoice ChooseSentinelMil(const Workload& w, uint64_t dram_limit_bytes, int max_mil = 0);

struct SentinelRun {
  PlacementPlan plan;
  // Per interval i: the units whose prefetch for interval i+1 did not hide
  // behind interval i (Sentinel's Case 3; every prefetch in sync mode).
  std::vector<std::vector<uint32_t>> late_prefetches;
  int no_space = 0;  // Case 2: prefetches dropped for lack of DRAM
};

// One pass of Sentinel's runtime at a fixed MIL. `left_in_slow` holds the
// (unit, interval) prefetches test-and-trial decided against.
// What the paper leaves open about room to spare. Each switch keeps more in
// DRAM when it fits; SentinelPolicy tries them in turn (its test-and-trial)
// and keeps the fastest, so that Sentinel stops migrating when DRAM holds
// the whole iteration.
struct SentinelVariant {
  // A tensor no later interval keeps is evicted only when the DRAM it holds
  // until its next use is needed (otherwise right after its last use here).
  bool lazy_eviction = false;
  // Persistent units (weights, optimizer state), hottest first, start the
  // iteration in DRAM and stay when the whole iteration has room for them.
  bool pin_persistent = false;
  // A long-lived tensor its creating interval does not use waits in DRAM
  // for its first use when there is room.
  bool wait_in_dram = false;
};

SentinelRun SimulateSentinel(const Workload& w, const std::vector<SentinelUnit>& units, int mil,
                             MigrationMode mode, uint64_t dram_limit_bytes,
                             const std::set<std::pair<uint32_t, int>>& left_in_slow = {},
                             SentinelVariant variant = {});

PolicyResult DecideSentinel(const Workload& w, const PolicyContext& ctx);

class SentinelPolicy : public StatelessPolicy {
 public:
  SentinelPolicy() : StatelessPolicy("sentinel", DecideSentinel) {}
};

}  // namespace tensortier
