// Plans that exercise migration, for the aggregation ablation
// (bench/bench_aggregation) and the executor's tests. No LibTorch.
#pragma once

#include <cstdint>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

// Every tensor starts in the slow tier, is brought to DRAM right before each
// kernel that accesses it (after the previous kernel) and sent back after
// the access when its next access is at least `min_gap_kernels` kernels
// away. Tensors used by the same kernel move at the same boundary in the same
// direction: what contiguous migration can merge. No DRAM limit.
PlacementPlan PrefetchEvictPlan(const Workload& w, MigrationMode mode, uint32_t min_gap_kernels = 2);

// Asynchronous copies and nothing else the cost model prices: every tensor
// in DRAM at each of its uses; between two uses at least three kernels
// apart it is evicted right after the first (the copy overlaps the next
// kernel) and fetched back to be there for the second (the copy overlaps
// the kernel before it), with at most one copy per kernel boundary and
// direction, so that contiguous migration merges none. The cost model
// predicts all-DRAM plus the copies' time beyond the kernels they overlap
// and the exposed share of the rest: what the profiler measures that share
// with (DeviceModel::async_copy_exposure). No DRAM limit.
PlacementPlan EvictBetweenUsesPlan(const Workload& w);

}  // namespace tensortier
