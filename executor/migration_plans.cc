#include "executor/migration_plans.h"

#include <algorithm>
#include <vector>

namespace tensortier {

PlacementPlan PrefetchEvictPlan(const Workload& w, MigrationMode mode, uint32_t min_gap_kernels) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kSlow, 0);
  p.mode = mode;
  p.produced_by = "prefetch-evict";
  std::vector<std::vector<uint32_t>> kernels_of(w.num_tensors());
  for (const Access& a : w.accesses) kernels_of[a.tensor].push_back(a.kernel);
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    std::vector<uint32_t>& ks = kernels_of[t];
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    const Tensor& x = w.tensors[t];
    Tier at = Tier::kSlow;
    for (size_t i = 0; i < ks.size(); ++i) {
      const uint32_t k = ks[i];
      if (at == Tier::kSlow && k > x.alloc_kernel) {
        p.migrations.push_back({static_cast<int32_t>(k) - 1, t, Tier::kDram});
        at = Tier::kDram;
      }
      if (at == Tier::kDram && i + 1 < ks.size() && ks[i + 1] - k >= min_gap_kernels) {
        p.migrations.push_back({static_cast<int32_t>(k), t, Tier::kSlow});
        at = Tier::kSlow;
      }
    }
  }
  p.Normalize();
  p.Validate(w);
  return p;
}

PlacementPlan EvictBetweenUsesPlan(const Workload& w) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kDram, 0);
  p.mode = MigrationMode::kAsync;
  p.produced_by = "evict-between-uses";
  // Boundaries (after kernel k) that already have a copy, by direction.
  std::vector<bool> evicting(w.num_kernels()), fetching(w.num_kernels());
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    if (w.tensors[t].pinned_dram) continue;
    const std::vector<uint32_t>& uses = w.kernels_of_tensor(t);
    for (size_t i = 0; i + 1 < uses.size(); ++i) {
      const uint32_t a = uses[i], b = uses[i + 1];
      if (b < a + 3 || evicting[a] || fetching[b - 2]) continue;
      evicting[a] = fetching[b - 2] = true;
      p.migrations.push_back({static_cast<int32_t>(a), t, Tier::kSlow});
      p.migrations.push_back({static_cast<int32_t>(b) - 2, t, Tier::kDram});
    }
  }
  p.Normalize();
  p.Validate(w);
  return p;
}

}  // namespace tensortier
