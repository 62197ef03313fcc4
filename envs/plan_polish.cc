#include "envs/plan_polish.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace tensortier {
namespace {

// `plan` with tensor t in `tier` all iteration.
PlacementPlan InOneTier(const PlacementPlan& plan, uint32_t t, Tier tier) {
  PlacementPlan edited = plan;
  edited.initial_tiers[t] = tier;
  edited.migrations.erase(std::remove_if(edited.migrations.begin(), edited.migrations.end(),
                                         [t](const Migration& m) { return m.tensor == t; }),
                          edited.migrations.end());
  return edited;
}

// The tensors live at kernel k that `plan` holds in DRAM there (the copies
// after the kernels before it landed), largest first.
std::vector<uint32_t> InDramAt(const Workload& w, const PlacementPlan& plan, uint32_t k) {
  std::vector<Tier> tier = plan.initial_tiers;
  for (const Migration& m : plan.migrations)
    if (m.after_kernel < static_cast<int32_t>(k)) tier[m.tensor] = m.to;
  std::vector<uint32_t> held;
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    const Tensor& x = w.tensors[t];
    if (tier[t] == Tier::kDram && !x.pinned_dram && x.alloc_kernel <= k && k <= x.free_kernel) held.push_back(t);
  }
  std::sort(held.begin(), held.end(), [&](uint32_t a, uint32_t b) {
    return w.tensors[a].size_bytes != w.tensors[b].size_bytes ? w.tensors[a].size_bytes > w.tensors[b].size_bytes
                                                              : a < b;
  });
  return held;
}

}  // namespace

PlanPolishResult PolishValidPlan(const Workload& w, const PlacementPlan& input, const PlanPolishOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >= options.max_seconds;
  };
  PlanPolishResult result;
  result.plan = input;
  result.plan.Normalize();
  TensorLedger ledger;
  EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
  const double before_ns = result.cost.total_ns;
  CostReport candidate_cost;
  // The fastest of one tensor's edits, kept where it fits and beats the plan.
  struct BestEdit {
    PlacementPlan plan;
    CostReport cost;
    bool found = false;
  };
  // Prices `edited`; returns its cost report (best.cost where it is the best now).
  auto consider = [&](BestEdit& best, PlacementPlan edited) -> const CostReport& {
    ++result.edits_tried;
    EvaluateValidPlan(w, edited, candidate_cost);
    if (candidate_cost.oom || candidate_cost.total_ns >= (best.found ? best.cost : result.cost).total_ns)
      return candidate_cost;
    best.plan = std::move(edited);
    std::swap(best.cost, candidate_cost);
    best.found = true;
    return best.cost;
  };
  auto keep = [&](BestEdit& best) {
    if (!best.found) return false;
    result.plan = std::move(best.plan);
    std::swap(result.cost, best.cost);
    ++result.edits_kept;
    return true;
  };
  bool kept_any = !result.cost.oom;
  while (kept_any && result.passes < options.max_passes && !out_of_time()) {
    ++result.passes;
    kept_any = false;
    // The tensors the plan copies, the costliest first (their slow-tier
    // reads and copies on the plan at the pass's start).
    std::vector<std::pair<double, uint32_t>> copied;
    std::vector<uint8_t> seen(w.num_tensors(), 0);
    for (const Migration& m : result.plan.migrations)
      if (m.tensor < seen.size() && !seen[m.tensor] && !w.tensors[m.tensor].pinned_dram) {
        seen[m.tensor] = 1;
        copied.push_back({ledger.slow_penalty_ns[m.tensor] + ledger.copy_ns[m.tensor], m.tensor});
      }
    std::sort(copied.begin(), copied.end(),
              [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    for (const auto& [ns, t] : copied) {
      if (out_of_time()) break;
      BestEdit best;
      for (Tier tier : {Tier::kSlow, Tier::kDram}) consider(best, InOneTier(result.plan, t, tier));
      if (keep(best)) kept_any = true;
    }
    if (kept_any) EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
    // Room: the tensors read from the slow tier, the costliest first, in
    // DRAM all iteration; where that overfills DRAM, with one of the
    // largest tensors DRAM holds at the first kernel over the limit put in
    // the slow tier all iteration. One tensor's DRAM for another's, the
    // trade the search's MDP moves make one decision at a time.
    std::vector<std::pair<double, uint32_t>> slow_read;
    for (uint32_t t = 0; t < w.num_tensors(); ++t)
      if (ledger.slow_penalty_ns[t] > 0 && !w.tensors[t].pinned_dram) slow_read.push_back({ledger.slow_penalty_ns[t], t});
    std::sort(slow_read.begin(), slow_read.end(),
              [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    if (slow_read.size() > static_cast<size_t>(std::max(options.room_tensors, 0)))
      slow_read.resize(static_cast<size_t>(std::max(options.room_tensors, 0)));
    bool room_kept = false;
    for (const auto& [ns, t] : slow_read) {
      if (out_of_time()) break;
      const PlacementPlan in_dram = InOneTier(result.plan, t, Tier::kDram);
      BestEdit best;
      const CostReport& alone = consider(best, in_dram);
      if (alone.oom && alone.oom_kernel >= 0) {
        int tried = 0;
        for (uint32_t b : InDramAt(w, in_dram, static_cast<uint32_t>(alone.oom_kernel))) {
          if (b == t) continue;
          if (tried++ >= options.room_blockers) break;
          consider(best, InOneTier(in_dram, b, Tier::kSlow));
        }
      }
      if (keep(best)) kept_any = room_kept = true;
    }
    if (room_kept) EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
  }
  result.saved_ns = before_ns - result.cost.total_ns;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tensortier
