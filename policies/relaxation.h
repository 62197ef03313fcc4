// The DRAM limit priced per kernel (envs/plan_relaxation.h), as a policy: no
// solver, no network. Sync mode: the relaxation's plan within
// ctx.solver_time_limit_seconds (90% of it; the polish gets the rest), its
// bound reported as a solver's (it holds for every sync plan under the cost
// model). Async mode: the sync plan's tiers (60% of the time) as the async
// plan that follows them (TimelineToPlan), repaired to fit, its copies
// scheduled and polished; the bound reported is envs/async_bound.h's (30%),
// which holds for every async plan.
#pragma once

#include "envs/workload.h"
#include "policies/policy.h"

namespace tensortier {

PolicyResult DecideRelaxation(const Workload& w, const PolicyContext& ctx);
// The same without the async bound, its time the plan's (90%, as in sync
// mode): for a caller that wants only the plan, such as the plan-time search
// that starts from it (bench's dqn+relax+search). Sync mode: the same as
// DecideRelaxation.
PolicyResult DecideRelaxationPlan(const Workload& w, const PolicyContext& ctx);

}  // namespace tensortier
