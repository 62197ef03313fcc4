// Each tensor of an async plan moved to its cheapest schedule, copy timing
// included, with every other tensor's kept: a best response under the cost
// model, exact for one tensor at a time.
//
// Why: in async mode a copy costs what the kernel it runs under cannot
// hide, given the other copies there, so one tensor's best schedule depends
// on the kernels it could copy under (the sync best responses,
// envs/plan_relaxation.h, price a copy at its whole duration and cannot be
// used here). The search's MDP issues a prefetch one kernel before the use
// and changes one decision at a time; the polish tries a tensor in one tier
// all iteration; the copy schedule moves copies without changing tiers. On
// paper-scale MobileNetV2 async the searched plan sat where none of them
// improved it while the async bound left 10 points (docs/results/
// learning.md, session forty-nine). A dynamic programme over the tensor's
// live kernels, with the kernel's other terms fixed (exec, blocking and
// overlapped copy time, DRAM and slow-tier bytes), prices every schedule
// of the tensor exactly as EvaluateValidPlan would.
#pragma once

#include "envs/cost_model.h"
#include "envs/placement_plan.h"
#include "envs/plan_relaxation.h"
#include "envs/workload.h"

namespace tensortier {

struct AsyncResponseOptions {
  int max_passes = 4;      // over the tensors; stops early when a pass moves none
  double max_seconds = 0;  // 0 = no limit; checked between tensors
};

// `plan` must be valid for `w` and in async mode (std::invalid_argument
// otherwise). The tensors with slow-tier reads or copies, the costliest
// first, each moved to its cheapest schedule where that is faster (priced by
// EvaluateValidPlan); a plan over a limit is returned as it is.
BestResponseResult RespondPerTensorAsync(const Workload& w, const PlacementPlan& plan,
                                         const AsyncResponseOptions& options = {});

}  // namespace tensortier
