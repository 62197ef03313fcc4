#include "envs/plan_polish.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "envs/async_response.h"
#include "envs/copy_schedule.h"
#include "envs/plan_relaxation.h"

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

// DRAM bytes over the plan's limit, summed over the kernels: how far a plan
// is from fitting. A room edit that frees part of what one kernel needs
// brings it closer without moving the first kernel over the limit.
uint64_t DramOverflowBytes(const KernelLedger& ledger, uint64_t dram_limit_bytes) {
  uint64_t sum = 0;
  for (uint64_t bytes : ledger.dram_bytes)
    if (bytes > dram_limit_bytes) sum += bytes - dram_limit_bytes;
  return sum;
}

// DRAM bytes over the limit at kernel k (0 where k is not over it).
uint64_t ExcessAt(const KernelLedger& ledger, int32_t k, uint64_t dram_limit_bytes) {
  if (k < 0 || static_cast<size_t>(k) >= ledger.dram_bytes.size()) return 0;
  const uint64_t bytes = ledger.dram_bytes[static_cast<size_t>(k)];
  return bytes > dram_limit_bytes ? bytes - dram_limit_bytes : 0;
}

// (ns, tensor) pairs, the most ns first, ties by tensor index.
void SortCostliestFirst(std::vector<std::pair<double, uint32_t>>& tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
}

// `plan` with tensor t out of DRAM around kernel k, which does not use it:
// put in the slow tier after its last use before k and fetched back for its
// first use after k where the plan had it in DRAM there (in async mode one
// kernel early, so that the copy lands before that use); the rest of its
// schedule as the plan has it. A tensor with no use before k is in the slow
// tier from the iteration's start, one with none after until its end. Empty
// where t is used at k, or where k would not see its DRAM freed.
std::optional<PlacementPlan> OutOfDramAround(const Workload& w, const PlacementPlan& plan, uint32_t t, uint32_t k) {
  const Tensor& x = w.tensors[t];
  const std::vector<uint32_t>& uses = w.kernels_of_tensor(t);
  const auto after = std::upper_bound(uses.begin(), uses.end(), k);
  if (after != uses.begin() && *(after - 1) == k) return std::nullopt;
  const int64_t K = static_cast<int64_t>(w.num_kernels());
  const int64_t lead = plan.mode == MigrationMode::kAsync ? 1 : 0;
  // A copy between kernels b and b + 1 needs t live across that boundary
  // (PlacementPlan::Validate).
  auto live_across = [&](int64_t b) { return x.alloc_kernel <= b && b + 1 <= x.free_kernel; };
  int64_t evict_after = -1, fetch_after = K - 1;  // t is out of DRAM after the boundaries [evict_after, fetch_after)
  if (after != uses.begin()) {
    evict_after = *(after - 1);
    if (!live_across(evict_after)) return std::nullopt;
  }
  if (after != uses.end()) {
    fetch_after = static_cast<int64_t>(*after) - 1 - lead;
    if (fetch_after < 0 || !live_across(fetch_after)) return std::nullopt;
  }
  const int64_t freed_from = evict_after < 0 ? 0 : evict_after + 1 + lead;
  if (static_cast<int64_t>(k) < freed_from || static_cast<int64_t>(k) > fetch_after) return std::nullopt;
  // t's tier after each boundary, [b + 1] for the boundary after kernel b
  // ([0]: the iteration's start).
  std::vector<Tier> tier(static_cast<size_t>(K + 1), plan.initial_tiers[t]);
  PlacementPlan edited = plan;
  edited.migrations.clear();
  size_t next = 0;
  std::vector<Migration> own;
  for (const Migration& m : plan.migrations)
    (m.tensor == t ? own : edited.migrations).push_back(m);
  for (int64_t b = 0; b < K; ++b) {
    tier[b + 1] = tier[b];
    for (; next < own.size() && own[next].after_kernel <= b; ++next) tier[b + 1] = own[next].to;
  }
  const int64_t back_after = after != uses.end() ? fetch_after : K;  // no fetch where no use follows
  for (int64_t b = evict_after; b < back_after; ++b) tier[b + 1] = Tier::kSlow;
  edited.initial_tiers[t] = tier[0];
  for (int64_t b = 0; b < K; ++b)
    if (tier[b + 1] != tier[b]) edited.migrations.push_back({static_cast<int32_t>(b), t, tier[b + 1]});
  edited.Normalize();
  if (edited == plan) return std::nullopt;
  return edited;
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
  auto consider = [&](BestEdit& best, PlacementPlan edited, KernelLedger* kernels = nullptr) -> const CostReport& {
    ++result.edits_tried;
    EvaluateValidPlan(w, edited, candidate_cost, kernels);
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
  // The copy schedule in place (async); true where it paid.
  auto reschedule = [&] {
    if (!options.reschedule_copies || result.plan.mode != MigrationMode::kAsync || result.cost.oom) return false;
    CopyScheduleResult scheduled = ScheduleValidAsyncCopies(w, result.plan);
    if (scheduled.moved == 0) return false;  // it returns a plan only where it is faster
    result.plan = std::move(scheduled.plan);
    result.cost = std::move(scheduled.cost);
    result.copies_moved += scheduled.moved;
    return true;
  };
  // Best responses in place; true where they paid.
  auto respond = [&] {
    if (!options.best_responses || result.cost.oom) return false;
    AsyncResponseOptions async_options;
    if (options.max_seconds > 0)
      async_options.max_seconds =
          std::max(options.max_seconds - std::chrono::duration<double>(Clock::now() - start).count(), 1e-3);
    BestResponseResult responded = result.plan.mode == MigrationMode::kSync
                                       ? RespondPerTensor(w, result.plan)
                                       : RespondPerTensorAsync(w, result.plan, async_options);
    if (!(responded.cost.total_ns < result.cost.total_ns)) return false;
    result.plan = std::move(responded.plan);
    result.cost = std::move(responded.cost);
    result.tensors_responded += responded.tensors_moved;
    return true;
  };
  bool kept_any = !result.cost.oom;
  while (kept_any && result.passes < options.max_passes && !out_of_time()) {
    ++result.passes;
    kept_any = respond();
    if (kept_any) EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
    // The tensors the plan copies, the costliest first (their slow-tier
    // reads and copies on the plan at the pass's start).
    std::vector<std::pair<double, uint32_t>> copied;
    std::vector<uint8_t> seen(w.num_tensors(), 0);
    for (const Migration& m : result.plan.migrations)
      if (m.tensor < seen.size() && !seen[m.tensor] && !w.tensors[m.tensor].pinned_dram) {
        seen[m.tensor] = 1;
        copied.push_back({ledger.slow_penalty_ns[m.tensor] + ledger.copy_ns[m.tensor], m.tensor});
      }
    SortCostliestFirst(copied);
    for (const auto& [ns, t] : copied) {
      if (out_of_time()) break;
      BestEdit best;
      for (Tier tier : {Tier::kSlow, Tier::kDram}) consider(best, InOneTier(result.plan, t, tier));
      if (keep(best)) kept_any = true;
    }
    if (kept_any) EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
    // Room: the tensors read from the slow tier or copied, the costliest
    // first, in DRAM all iteration; where that overfills DRAM, room made at
    // the first kernel over the limit: one of the largest tensors DRAM holds
    // there in the slow tier all iteration or only around it, or the tensor
    // itself out of DRAM around it. One tensor's DRAM for another's, the
    // trade the search's MDP moves make one decision at a time.
    std::vector<std::pair<double, uint32_t>> room_candidates;
    for (uint32_t t = 0; t < w.num_tensors(); ++t) {
      const double ns = ledger.slow_penalty_ns[t] + ledger.copy_ns[t];
      if (ns > 0 && !w.tensors[t].pinned_dram) room_candidates.push_back({ns, t});
    }
    SortCostliestFirst(room_candidates);
    if (room_candidates.size() > static_cast<size_t>(std::max(options.room_tensors, 0)))
      room_candidates.resize(static_cast<size_t>(std::max(options.room_tensors, 0)));
    bool room_kept = false;
    KernelLedger chain_kernels;
    for (const auto& [ns, t] : room_candidates) {
      if (out_of_time()) break;
      // t in DRAM all iteration; while that overfills DRAM, the room edits
      // at the first kernel over the limit, each priced; one that fits is a
      // candidate, and of those that still overfill but by fewer bytes, the
      // one that frees them cheapest (ns added per byte of overflow removed)
      // is the chain's next step: several small tensors can make the room
      // one large one needs. Every edit adds slow-tier time, so a chain
      // already dearer than the plan stops.
      BestEdit best;
      PlacementPlan chain = InOneTier(result.plan, t, Tier::kDram);
      CostReport chain_cost = consider(best, chain, &chain_kernels);
      uint64_t chain_overflow = DramOverflowBytes(chain_kernels, chain.dram_limit_bytes);
      uint64_t chain_excess = ExcessAt(chain_kernels, chain_cost.oom_kernel, chain.dram_limit_bytes);
      for (int depth = 0; depth < std::max(options.room_depth, 1) && chain_cost.oom && chain_cost.oom_kernel >= 0 &&
                          chain_overflow > 0 && chain_cost.total_ns < result.cost.total_ns;
           ++depth) {
        const auto oom_kernel = static_cast<uint32_t>(chain_cost.oom_kernel);
        std::optional<PlacementPlan> next;
        CostReport next_cost;
        uint64_t next_overflow = 0, next_excess = 0;
        double next_ns_per_byte = 0;
        auto step = [&](PlacementPlan edited) {
          const CostReport& c = consider(best, edited, &chain_kernels);
          if (!c.oom) return;
          const uint64_t overflow = DramOverflowBytes(chain_kernels, edited.dram_limit_bytes);
          if (overflow >= chain_overflow) return;
          const double ns_per_byte =
              (c.total_ns - chain_cost.total_ns) / static_cast<double>(chain_overflow - overflow);
          if (next && next_ns_per_byte <= ns_per_byte) return;
          next_cost = c;
          next_overflow = overflow;
          next_excess = ExcessAt(chain_kernels, c.oom_kernel, edited.dram_limit_bytes);
          next_ns_per_byte = ns_per_byte;
          next = std::move(edited);
        };
        if (options.gap_edits)
          if (auto gap = OutOfDramAround(w, chain, t, oom_kernel)) step(std::move(*gap));
        // The largest tensors DRAM holds there, and the smallest of those
        // that alone free the kernel's excess: the last bytes of a chain are
        // often cheapest to free with a tensor no larger than they are.
        const std::vector<uint32_t> held = InDramAt(w, chain, oom_kernel);
        const auto blockers = static_cast<size_t>(std::max(options.room_blockers, 0));
        std::vector<uint32_t> tried;
        size_t largest_end = 0;
        for (; largest_end < held.size() && tried.size() < blockers; ++largest_end)
          if (held[largest_end] != t) tried.push_back(held[largest_end]);
        size_t enough = largest_end;  // held[i] alone frees the excess for i < enough
        while (enough < held.size() && w.tensors[held[enough]].size_bytes >= chain_excess) ++enough;
        for (size_t i = enough; i > largest_end && tried.size() < 2 * blockers;)
          if (held[--i] != t) tried.push_back(held[i]);
        for (uint32_t b : tried) {
          step(InOneTier(chain, b, Tier::kSlow));
          if (options.gap_edits)
            if (auto gap = OutOfDramAround(w, chain, b, oom_kernel)) step(std::move(*gap));
        }
        if (!next) break;
        chain = std::move(*next);
        chain_cost = std::move(next_cost);
        chain_overflow = next_overflow;
        chain_excess = next_excess;
      }
      if (keep(best)) kept_any = room_kept = true;
    }
    if (room_kept) EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
    // Once the edits stop, not before each pass: there it changed which edits paid, and on
    // synthetic ResNet-like graphs the polish ended slower. Where it moved copies, the edits get
    // another pass.
    if (!kept_any && reschedule()) {
      EvaluateValidPlan(w, result.plan, result.cost, nullptr, &ledger);
      kept_any = true;
    }
  }
  reschedule();  // where the passes ran out with edits still paying
  respond();
  result.saved_ns = before_ns - result.cost.total_ns;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

PlanPolishResult FinishEpisodePlan(const Workload& w, const PlacementPlan& plan, bool schedule_copies,
                                   const PlanPolishOptions* polish) {
  const auto start = std::chrono::steady_clock::now();
  PlanPolishResult result;
  result.plan = plan;
  EvaluateValidPlan(w, result.plan, result.cost);
  if (result.cost.oom) return result;
  const double before_ns = result.cost.total_ns;
  if (schedule_copies && plan.mode == MigrationMode::kAsync) {
    CopyScheduleResult scheduled = ScheduleValidAsyncCopies(w, result.plan);
    if (scheduled.moved > 0) {
      result.plan = std::move(scheduled.plan);
      result.cost = std::move(scheduled.cost);
      result.copies_moved = scheduled.moved;
    }
  }
  if (polish) {
    const int scheduled_moves = result.copies_moved;
    PlanPolishResult polished = PolishValidPlan(w, result.plan, *polish);
    if (polished.changes() > 0) {
      result = std::move(polished);
      result.copies_moved += scheduled_moves;
    } else {
      result.edits_tried = polished.edits_tried;
      result.passes = polished.passes;
    }
  }
  result.saved_ns = before_ns - result.cost.total_ns;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tensortier
