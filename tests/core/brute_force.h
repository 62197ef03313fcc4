// The best undiscounted return of a placement MDP, by enumerating every
// action sequence (for graphs small enough: tests/core/hand_graph.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "envs/placement_env.h"

namespace tensortier::testing {

// Plays `actions` from the start: the return, or NaN when the episode
// needs more actions than given.
inline double PlayActions(PlacementEnv& env, const std::vector<int>& actions) {
  env.Reset();
  double total = 0;
  size_t i = 0;
  while (!env.done() && i < actions.size()) total += env.Step(actions[i++]).reward;
  return env.done() ? total : std::numeric_limits<double>::quiet_NaN();
}

// Depth-first over every action sequence; `leaves` counts whole episodes.
inline double BestReturn(PlacementEnv& env, std::vector<int>& prefix, int* leaves) {
  double r = PlayActions(env, prefix);
  if (!std::isnan(r)) {
    ++*leaves;
    return r;
  }
  double best = -std::numeric_limits<double>::infinity();
  for (int a : {0, 1}) {
    prefix.push_back(a);
    best = std::max(best, BestReturn(env, prefix, leaves));
    prefix.pop_back();
  }
  return best;
}

// The same from the start of an episode.
inline double BestReturn(PlacementEnv& env, int* leaves) {
  std::vector<int> prefix;
  return BestReturn(env, prefix, leaves);
}

}  // namespace tensortier::testing
