// Turns a greedy policy over observations into the generalised lookup: a
// bitmap indexed by per-feature bins (docs/lookup-format.md). No LibTorch:
// the policy is a callback, so tests can quantise any function.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "envs/placement_env.h"
#include "exporter/lookup_writer.h"

namespace tensortier {

struct LabelledObservation {
  Observation observation{};
  uint8_t action = 0;  // the policy's greedy action here
  // Visited by a greedy evaluation episode: its cell must answer `action`
  // (the fidelity target). Other samples (exploratory episodes) only guide
  // the choice of bins and fill cells no exact state reaches.
  bool exact = false;
  // Both actions place the tensor alike here: the environment would clip a
  // DRAM request to the slow tier (PlacementEnv::DramRequestWouldSpill), so
  // `action` is an arbitrary choice. Such a state places no bin edge, casts
  // no vote for its cell's answer, and agrees with any answer (it is still
  // counted in exact_states / coverage_states).
  bool dont_care = false;
};

// Greedy actions of `count` observations into `actions`. May be called with
// large batches; it is expected to parallelise itself.
using BatchGreedyPolicy = std::function<void(const Observation* observations, size_t count, uint8_t* actions)>;

struct QuantiserOptions {
  uint32_t max_cells = 1u << 18;  // a 32 KiB bitmap
  uint32_t fine_bins = 1024;   // resolution of bin edges over a feature's range
  uint32_t importance_samples = 4096;
  // The edge search costs O(states) per edge: beyond these it works on a
  // random subsample. Cells are still filled from every state.
  uint32_t max_exact_samples = 1000000;
  uint32_t max_other_samples = 200000;
  uint64_t seed = 1;
};

struct QuantiserStats {
  uint64_t exact_states = 0;
  uint64_t coverage_states = 0;
  uint64_t exact_dont_care = 0;         // of exact_states, those marked dont_care
  uint64_t coverage_dont_care = 0;
  // States whose cell answers another action than theirs; dont_care states
  // never count.
  uint64_t exact_disagreements = 0;
  uint64_t coverage_disagreements = 0;
  uint64_t cells = 0;
  uint64_t cells_from_exact = 0;        // filled from greedy-evaluation states
  uint64_t cells_from_coverage = 0;     // from exploratory states
  uint64_t cells_from_centres = 0;      // the network evaluated at the cell's centre
  uint64_t slow_cells = 0;
  std::vector<std::pair<int, int>> bins_by_feature;  // (observation index, bins), cell-number order
  std::vector<int> dropped_features;                 // constant over every sample
  std::vector<std::pair<int, double>> importance;    // (observation index, share of actions a shuffle flips)
};

// Chooses bin edges greedily: each step adds the edge (on any feature, at
// the middle of a gap between sample values; or two edges around one exact
// state) with the most gain per bit of cell count: gain = fewer samples whose
// cell answers another action than they have, exact states before the
// others. It stops when no edge helps or another would pass max_cells.
// Features without an edge are left out. Then every cell is filled: majority
// of its exact states, else of its other states, else the policy at the
// cell's centre. dont_care samples take part in none of this (they only
// widen the features' ranges and the centres' medians). Throws
// std::invalid_argument on empty input.
GeneralisedTable BuildGeneralisedTable(const std::vector<LabelledObservation>& samples,
                                       const BatchGreedyPolicy& policy, const QuantiserOptions& options,
                                       QuantiserStats* stats);

}  // namespace tensortier
