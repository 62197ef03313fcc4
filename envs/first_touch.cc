#include "envs/first_touch.h"

namespace tensortier {

PlacementPlan FirstTouchPlan(const Workload& w, uint64_t dram_limit_bytes) {
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, dram_limit_bytes);
  plan.produced_by = "first-touch";
  uint64_t dram_used = 0;
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    // Memory freed after kernel k-1 is available again at kernel k.
    if (k > 0)
      for (uint32_t t : w.live_at(k - 1))
        if (w.tensors[t].free_kernel == k - 1 && plan.initial_tiers[t] == Tier::kDram)
          dram_used -= w.tensors[t].size_bytes;
    for (uint32_t t : w.allocated_at(k)) {
      uint64_t size = w.tensors[t].size_bytes;
      if (dram_limit_bytes == 0 || dram_used + size <= dram_limit_bytes) {
        plan.initial_tiers[t] = Tier::kDram;
        dram_used += size;
      }
    }
  }
  return plan;
}

}  // namespace tensortier
