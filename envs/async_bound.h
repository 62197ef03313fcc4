// A lower bound on every async plan's cost under the cost model, by the
// same pricing as envs/plan_relaxation.h: a price per byte of DRAM at each
// kernel, and a second price per kernel for how much of the copies under it
// the kernel hides.
//
// Why a second price: a kernel with copies O under it and execution time E
// costs E + max(e O, O - (1 - e) E) (e = the device's async_copy_exposure),
// which couples every tensor copied under the kernel. That max is at least
// any mix of its two sides, mu e O + (1 - mu)(O - (1 - e) E) for mu in
// [0, 1], which is linear in each tensor's copies and slow-tier penalties.
// With both prices the cost is again a sum over tensors, each one's
// cheapest schedule a dynamic programme over the kernels of its life (in
// DRAM or the slow tier at each; a copy issued before a kernel is in flight
// under it, in both tiers, and lands after it; a copy before a kernel that
// writes the tensor blocks). Every price gives a bound; the steps move the
// prices to raise it.
//
// What it is for: how far any async planner, learned or not, could still
// go above a plan (docs/results/learning.md, session forty-six). It makes
// no plan: its prices' schedules, repaired to fit, were never a faster
// async plan than the sync relaxation's made async there.
#pragma once

#include <cstdint>

#include "envs/workload.h"

namespace tensortier {

struct AsyncBoundOptions {
  int max_iterations = 1000;  // subgradient steps
  double max_seconds = 0;     // 0 = no limit; checked between steps
  double deflection = 0.8;    // share of the last step's DRAM direction kept in the next
  int patience = 20;          // steps without a better bound before the step halves
};

struct AsyncBoundResult {
  double lower_bound_ns = 0;  // no async plan within the limit costs less
  int iterations = 0;
  double seconds = 0;
};

// `upper_bound_ns`: the cost of an async plan known to fit (0: none), to
// size the steps. A DRAM limit of 0 is none. Throws std::invalid_argument
// where the pinned tensors alone exceed the limit.
AsyncBoundResult AsyncLowerBound(const Workload& w, uint64_t dram_limit_bytes, double upper_bound_ns,
                                 const AsyncBoundOptions& options = {});

}  // namespace tensortier
