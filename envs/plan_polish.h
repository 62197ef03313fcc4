// Edits of a finished plan, priced by the cost model alone.
// The plan-time search changes a plan through the placement MDP, where
// freeing a tensor's DRAM lets later requests the incumbent had clipped take
// it, and one change cascades into others; a move that would pay on its own
// can lose so. On ResNet-152 (default scale, sync, DRAM 0.2) the searched
// plan ended with five 2.3 MB gradients fetched, evicted and read from the
// slow tier between: 2.4 ms each where the slow tier throughout costs 1.8
// (docs/results/learning.md, session forty-two). This pass edits the plan
// itself: for each tensor the plan copies between tiers, the costliest
// first, the same plan with that tensor in one tier all iteration (the slow
// tier, which only frees DRAM, or DRAM where it still fits), kept where it
// is faster; then the tensors read from the slow tier or copied in DRAM all
// iteration, with room made where DRAM overfills (another tensor in the slow
// tier, all iteration or around the kernel over the limit, or the tensor
// itself out of DRAM around it; step after step while the plan still
// overfills DRAM); in passes until one keeps none.
#pragma once

#include "envs/cost_model.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

struct PlanPolishOptions {
  int max_passes = 4;      // over the copied tensors; stops early when a pass keeps no edit
  double max_seconds = 0;  // 0 = no limit; checked between edits
  // Then, each pass: the `room_tensors` tensors read from the slow tier or
  // copied that cost the most so, each tried in DRAM all iteration, and where
  // that overfills DRAM, room made there: one of the `room_blockers`
  // largest tensors DRAM holds at the first kernel over the limit, or of as
  // many of the smallest that alone free its excess, in the slow tier all
  // iteration (ResNet-152, default sync: 64 and 8 kept 8 edits, 1,024 and
  // 16 kept 11; the largest blockers together as well found nothing more;
  // docs/results/learning.md, session forty-two). 0 = none.
  int room_tensors = 1024;
  int room_blockers = 16;
  // With the room edits: the tensor, and each blocker, also tried out of
  // DRAM around the kernel over the limit only (put in the slow tier after
  // its last use before it, fetched for its first use after, the rest of its
  // schedule kept): two copies where the slow tier throughout costs more.
  bool gap_edits = true;
  // Where every room edit still overfills DRAM, the one that removes the
  // most overflow (bytes over the limit, summed over the kernels) per ns it
  // adds is taken and the room edits are tried again at the first kernel
  // still over the limit, up to this many steps: several small tensors can
  // make the room one large one needs.
  int room_depth = 4;
  // At each pass's start and at the end: every tensor moved to its cheapest
  // schedule in the DRAM the others leave it. Sync mode: RespondPerTensor
  // (envs/plan_relaxation.h); ResNet-152, default sync: the searched plan
  // 61.48 -> 61.68% in 0.01 s, where the edits below take seconds
  // (docs/results/learning.md, session forty-five). Async mode:
  // RespondPerTensorAsync (envs/async_response.h), copy timing included;
  // paper-scale async, the relaxation's plan: ResNet-152 83.12 -> 87.48%,
  // Inception-v3 77.19 -> 80.71%, MobileNetV2 68.18 -> 71.03% (session
  // forty-nine). Within max_seconds.
  bool best_responses = true;
  // Async mode, when the edits' passes end: the plan's copies moved to where
  // they are exposed least (envs/copy_schedule.h), and where that moved
  // any, the edits get another pass (within max_passes). An edit issues its
  // copies where its tiers change, crowded or not: on paper-scale
  // ResNet-152 async the searched plan, polished, went 85.59 -> 86.10% of
  // all-DRAM by this alone, MobileNetV2's relaxation 67.10 -> 68.16%
  // (docs/results/learning.md, session forty-eight). Not before each pass:
  // there it changed which edits paid, and the polish ended slower on a
  // synthetic ResNet-like graph.
  bool reschedule_copies = true;
};

struct PlanPolishResult {
  PlacementPlan plan;      // the input when no edit paid
  CostReport cost;         // of `plan`
  double saved_ns = 0;     // the input's cost less `cost`
  int edits_tried = 0;
  int edits_kept = 0;
  int tensors_responded = 0;  // tensors the best responses moved
  int copies_moved = 0;       // by the copy schedules (reschedule_copies)
  int passes = 0;
  double seconds = 0;
  // Everything the polish changed: edits, best responses, copies moved.
  int changes() const { return edits_kept + tensors_responded + copies_moved; }
};

// Without plan.Validate(w), as EvaluateValidPlan: for a plan valid by
// construction (a PlacementEnv episode's). A plan over its DRAM limit is
// returned as it is.
PlanPolishResult PolishValidPlan(const Workload& w, const PlacementPlan& plan, const PlanPolishOptions& options = {});

// An episode's plan finished as the plan-time pipelines finish one: in
// async mode its copies moved to where they are exposed least
// (ScheduleValidAsyncCopies; `schedule_copies`), then the polish (none
// where `polish` is null). The "+polish" pipeline's plan (the greedy
// episode's), and the price imitation chooses its expert by
// (ImitationConfig::expert_choice): a demonstration's MDP replay loses the
// copy timing the plan was made with, so what counts is where the product's
// own finish takes it. saved_ns, copies_moved and seconds count both steps.
// An episode that ran out of memory is returned as it is.
PlanPolishResult FinishEpisodePlan(const Workload& w, const PlacementPlan& plan, bool schedule_copies,
                                   const PlanPolishOptions* polish);

}  // namespace tensortier
