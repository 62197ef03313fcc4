// What the polish, copy schedule and search tests share: a finalized
// synthetic graph of eight layers, their DRAM limit, heat order's scores and
// a search's small budgets.
#pragma once

#include <utility>

#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/synthetic.h"
#include "envs/workload.h"

namespace tensortier::testing {

inline Workload Synthetic(SyntheticShape shape) {
  SyntheticOptions so;
  so.shape = shape;
  so.layers = 8;
  Workload w = GenerateSynthetic(so);
  w.Finalize();
  return w;
}

// The tests' DRAM limit: a fifth of the graph's peak, where most choices matter.
inline EnvConfig FifthOfPeak(const Workload& w, MigrationMode mode) {
  EnvConfig c;
  c.dram_limit_bytes = static_cast<uint64_t>(0.2 * static_cast<double>(w.peak_live_bytes()));
  c.mode = mode;
  return c;
}

// Heat order as action scores: DRAM where the tensor is hotter than a fixed bar.
inline std::pair<float, float> HeatScores(const Observation& x) { return {x[kObsHeat], 0.3f}; }

// Replay budgets a search on these graphs spends in a fraction of a second.
inline PlanSearchOptions SmallSearch() {
  PlanSearchOptions o;
  o.max_replays = 64;
  o.max_tensor_replays = 64;
  o.max_room_replays = 16;
  o.max_window_replays = 64;
  return o;
}

}  // namespace tensortier::testing
