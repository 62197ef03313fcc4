// The learner's stopping rule (LearnerConfig::converge_window): training has
// converged when the last `window` greedy evaluations after the first
// gradient step lie within tolerance * max(1, |best|) of each other and none
// beats the best evaluation before them by more than that.
#pragma once

#include <cstdint>
#include <vector>

namespace tensortier {

// `rewards[i]` is evaluation i's reward, `updates[i]` the agent's gradient
// steps when its weights were taken (the two line up). Evaluations before
// the first gradient step do not count: an untrained policy is perfectly
// stable. window 0: never.
bool Converged(const std::vector<double>& rewards, const std::vector<uint64_t>& updates, uint32_t window,
               double tolerance);

}  // namespace tensortier
