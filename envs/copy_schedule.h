// When an asynchronous plan issues its copies. A copy issued after kernel k
// hides under kernel k+1 alone (cost_model.h), so copies that crowd under
// one kernel are exposed while the kernels before it sit idle. The placement
// MDP issues a prefetch at the kernel before the use (or where a decision
// falls), and cannot say "earlier": on default-scale MobileNetV2 the guided
// ILP's plan, played through the MDP with the same copies, loses 1.2 of its
// 60.5 ms to that timing alone. This pass keeps every copy and every tier a
// kernel that touches the tensor sees, and moves each copy to the boundary,
// between the tensor's neighbouring uses, where it is exposed least and
// both tiers still fit. Priced locally (KernelLedger), so a pass costs
// about the copies times the kernels they may move over.
#pragma once

#include "envs/cost_model.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

struct CopyScheduleOptions {
  int max_passes = 8;  // over all copies; stops early when a pass moves none
};

struct CopyScheduleResult {
  PlacementPlan plan;       // the input when nothing moved, or when it is not async or runs out of memory
  CostReport cost;          // of `plan`, EvaluatePlan's
  double saved_ns = 0;      // the input's cost less `cost`
  int moved = 0;            // copies moved (a copy moved twice counts twice)
  int passes = 0;
  double seconds = 0;
};

// Throws what EvaluatePlan throws for a plan that does not fit `w`.
CopyScheduleResult ScheduleAsyncCopies(const Workload& w, const PlacementPlan& plan,
                                       const CopyScheduleOptions& options = {});
// Without plan.Validate(w), as EvaluateValidPlan: for a plan valid by
// construction (a PlacementEnv episode's), scheduled many times in a search.
CopyScheduleResult ScheduleValidAsyncCopies(const Workload& w, const PlacementPlan& plan,
                                            const CopyScheduleOptions& options = {});

}  // namespace tensortier
