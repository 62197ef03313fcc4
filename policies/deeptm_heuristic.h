// DeepTM without its DRL optimizer (the paper's "SOTA optimizer" ablation):
// Algorithm 1's tensor heats with dynamic weights, and at every kernel the
// hot tensors (heat above the threshold) go to DRAM, hottest first, while
// they fit, and the rest to the slow tier; kernels whose live tensors all fit
// keep everything in DRAM. A tensor migrates whenever its tier changes
// between kernels.
#pragma once

#include "policies/policy.h"

namespace tensortier {

// The decision of the StatelessPolicy "deeptm-heuristic".
PolicyResult DecideDeepTmHeuristic(const Workload& w, const PolicyContext& ctx);

}  // namespace tensortier
