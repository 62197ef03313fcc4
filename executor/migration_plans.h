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

}  // namespace tensortier
