// First-touch NUMA placement (AutoTM's baseline, DeepTM's "Origin-TF"):
// a tensor goes to DRAM when it is created if it fits under the limit at
// that moment, otherwise to the slow tier, and never moves.
#pragma once

#include <cstdint>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

PlacementPlan FirstTouchPlan(const Workload& w, uint64_t dram_limit_bytes);

}  // namespace tensortier
