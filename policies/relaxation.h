// The DRAM limit priced per kernel (envs/plan_relaxation.h), as a policy: no
// solver, no network. Sync mode: the relaxation's plan within
// ctx.solver_time_limit_seconds (90% of it; the polish gets the rest), its
// bound reported as a solver's (it holds for every sync plan under the cost
// model). Async mode: the sync plan's tiers as the async plan that follows
// them (TimelineToPlan, 60% of the time), or the schedules of the async
// bound's prices (envs/async_bound.h, 30%), whichever is faster once
// repaired to fit and its copies scheduled, then polished; the bound
// reported is the async bound's, which holds for every async plan.
#pragma once

#include "envs/workload.h"
#include "policies/policy.h"

namespace tensortier {

PolicyResult DecideRelaxation(const Workload& w, const PolicyContext& ctx);

}  // namespace tensortier
