#include "policies/deeptm_heuristic.h"

#include <algorithm>
#include <numeric>

#include "envs/heat.h"
#include "policies/plan_tools.h"

namespace tensortier {

PolicyResult DecideDeepTmHeuristic(const Workload& w, const PolicyContext& ctx) {
  PolicyResult result;
  const uint64_t limit = EffectiveLimit(ctx.dram_limit_bytes);
  TierTimeline timeline(w.num_tensors());
  for (uint32_t t = 0; t < w.num_tensors(); ++t)
    timeline[t].assign(w.tensors[t].free_kernel - w.tensors[t].alloc_kernel + 1, Tier::kDram);
  if (ctx.dram_limit_bytes == 0) {
    result.plan = TimelineToPlan(w, timeline, ctx.mode, 0);
    return result;
  }

  const HeatWeights start;
  const std::vector<std::vector<double>> heats = ComputeAllHeats(w, ctx.dram_limit_bytes, start);
  int hot_left_out = 0;
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    // DeepTM decides only at kernels with a DRAM bottleneck; elsewhere every
    // live tensor stays in DRAM.
    if (w.live_bytes_at(k) <= ctx.dram_limit_bytes) continue;
    const auto& live = w.live_at(k);
    std::vector<size_t> order(live.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return heats[k][a] > heats[k][b]; });
    uint64_t used = 0;
    for (size_t i : order) {
      const uint32_t t = live[i];
      const uint64_t size = w.tensors[t].size_bytes;
      const bool hot = heats[k][i] > start.threshold;
      const bool fits = size <= limit - used;
      Tier& tier = timeline[t][k - w.tensors[t].alloc_kernel];
      tier = hot && fits ? Tier::kDram : Tier::kSlow;
      if (tier == Tier::kDram) used += size;
      if (hot && !fits) ++hot_left_out;
    }
  }
  result.plan = TimelineToPlan(w, timeline, ctx.mode, ctx.dram_limit_bytes);
  result.stats["repairs"] = RepairToLimit(w, &result.plan);
  result.stats["hot_left_out"] = hot_left_out;
  return result;
}

}  // namespace tensortier
