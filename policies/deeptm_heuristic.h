// DeepTM without its DRL optimizer (the paper's "SOTA optimizer" ablation):
// Algorithm 1's tensor heats with dynamic weights, and at every kernel the
// hot tensors (heat above the threshold) go to DRAM, hottest first, while
// they fit, and the rest to the slow tier; kernels whose live tensors all fit
// keep everything in DRAM. A tensor migrates whenever its tier changes
// between kernels.
#pragma once

#include "policies/policy.h"

namespace tensortier {

class DeepTmHeuristicPolicy : public PlacementPolicy {
 public:
  std::string name() const override { return "deeptm-heuristic"; }

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;
};

}  // namespace tensortier
