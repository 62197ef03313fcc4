// The bridge from a lookup file to the plan a host executes: the file's plan
// table when it has one for the model, batch and DRAM budget, otherwise the
// generalised lookup rolled out over the model's placement MDP. Uses the
// host runtime and envs/ only (no LibTorch), so an executor can call it after
// profiling one iteration into a Workload.
#pragma once

#include <cstdint>

#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "hostrt/tensortier_lookup.h"

namespace tensortier {

struct AppliedPlan {
  PlacementPlan plan;
  bool from_plan_table = false;  // else from the generalised lookup
  uint32_t decisions = 0;        // generalised lookups made
};

// `env` gives the scope, OOM handling and migration mode of the rollout (its
// DRAM limit is replaced by dram_budget_bytes). Throws std::runtime_error when
// the file has no plan for the key and no generalised lookup, or when its
// observations do not match this build's MDP.
AppliedPlan PlanFromLookup(const tt_lookup* lookup, const Workload& w, uint64_t dram_budget_bytes,
                           EnvConfig env = {});

}  // namespace tensortier
