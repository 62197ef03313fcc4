// A plan from the DRAM limit priced per kernel (Lagrangian relaxation), for
// synchronous copies, where the cost model is a sum over tensors: each
// tensor's slow-tier penalties at its uses, its copies, and the copy back of
// a persistent tensor that ends the iteration elsewhere. With a price per
// byte of DRAM at each kernel the limit leaves the sum, and each tensor's
// cheapest schedule is a small dynamic programme over its uses (in DRAM or
// the slow tier at each; between two, kept where it is, moved once, or
// evicted after the first and fetched for the second). Prices rise where the
// schedules together overfill DRAM (subgradient steps) until they fit.
//
// Why: a plan edited one tensor at a time (the search's MDP, the polish)
// cannot reach a trade that pays only whole, such as nine small gradients
// out of DRAM for most of the iteration to keep three large ones in it
// throughout (Inception-v3, default scale; docs/results/learning.md, session
// forty-five). Prices see every tensor's use of a kernel's DRAM at once.
#pragma once

#include <cstdint>
#include <vector>

#include "envs/cost_model.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

// Defaults: 1,000 steps, the schedules repaired at every third: Inception-v3
// at the default scale, sync, DRAM 0.2, 49.282% of all-DRAM in 10 s (a repair
// every step: the same in 23 s; heat+ilp 49.240-49.280% in 60 s of CBC),
// ResNet-152 61.740% in 44 s (134 s) (docs/results/learning.md, session
// forty-five).
struct PlanRelaxationOptions {
  int max_iterations = 1000;  // subgradient steps
  double max_seconds = 0;     // 0 = no limit; checked between steps
  int repair_every = 3;       // steps between repairs of the prices' schedules into a plan that fits
  int response_passes = 4;    // best responses after each repair (RespondPerTensor)
  double deflection = 0.8;    // share of the last step's direction kept in the next
  int patience = 20;          // steps without a better bound before the step halves
};

struct PlanRelaxationResult {
  bool found = false;         // a plan within the DRAM limit
  PlacementPlan plan;         // the cheapest such plan the prices gave
  CostReport cost;            // of `plan`
  double lower_bound_ns = 0;  // no plan costs less (the relaxation's best bound)
  int iterations = 0;
  double seconds = 0;
};

struct BestResponseResult {
  PlacementPlan plan;  // the input where nothing paid
  CostReport cost;
  int tensors_moved = 0;
};

// Each tensor of a plan that fits, the costliest first, moved to its
// cheapest schedule in the DRAM the others leave it (the plan's schedules
// tightened first: evicted right after a use, fetched right before one), in
// passes until one moves none. Sync mode only.
BestResponseResult RespondPerTensor(const Workload& w, const PlacementPlan& plan, int max_passes = 4);

// Per kernel, the DRAM left to the tensors a plan places: the limit less
// the pinned tensors live there (a limit of 0 is none: room for every tensor
// at once). Throws std::invalid_argument where the pinned tensors alone
// exceed it.
std::vector<int64_t> PlannableDramPerKernel(const Workload& w, uint64_t dram_limit_bytes);

// Sync mode only (std::invalid_argument otherwise): an async copy's cost
// depends on the kernel it overlaps and on the other copies there.
// `upper_bound_ns`, the cost of a plan known to fit (0: none), sizes the
// steps.
PlanRelaxationResult PlanByRelaxation(const Workload& w, uint64_t dram_limit_bytes, double upper_bound_ns,
                                      const PlanRelaxationOptions& options = {});

}  // namespace tensortier
