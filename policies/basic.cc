#include "policies/basic.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "envs/first_touch.h"
#include "policies/plan_tools.h"

namespace tensortier {

PolicyResult DecideAllDram(const Workload& w, const PolicyContext& ctx) {
  PolicyResult r;
  r.plan = PlacementPlan::Uniform(w, Tier::kDram, 0);
  r.plan.mode = ctx.mode;
  return r;
}

PolicyResult DecideAllSlow(const Workload& w, const PolicyContext& ctx) {
  PolicyResult r;
  r.plan = PlacementPlan::Uniform(w, Tier::kSlow, ctx.dram_limit_bytes);
  r.plan.mode = ctx.mode;
  return r;
}

PolicyResult DecideRandom(const Workload& w, const PolicyContext& ctx) {
  PolicyResult r;
  r.plan = PlacementPlan::Uniform(w, Tier::kSlow, ctx.dram_limit_bytes);
  r.plan.mode = ctx.mode;
  std::mt19937_64 rng(ctx.seed);
  std::vector<uint32_t> order(w.num_tensors());
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  std::bernoulli_distribution coin(0.5);
  DramLedger ledger(w, ctx.dram_limit_bytes);
  for (uint32_t t : order) {
    const Tensor& x = w.tensors[t];
    if (!coin(rng) || !ledger.Fits(x.alloc_kernel, x.free_kernel, x.size_bytes)) continue;
    ledger.Add(x.alloc_kernel, x.free_kernel, x.size_bytes);
    r.plan.initial_tiers[t] = Tier::kDram;
  }
  return r;
}

PolicyResult DecideFirstTouch(const Workload& w, const PolicyContext& ctx) {
  PolicyResult r;
  r.plan = FirstTouchPlan(w, ctx.dram_limit_bytes);
  r.plan.mode = ctx.mode;
  return r;
}

}  // namespace tensortier
