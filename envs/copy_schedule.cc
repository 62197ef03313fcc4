#include "envs/copy_schedule.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tensortier {
namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

}  // namespace

CopyScheduleResult ScheduleAsyncCopies(const Workload& w, const PlacementPlan& plan,
                                       const CopyScheduleOptions& options) {
  if (!w.finalized()) throw std::logic_error("ScheduleAsyncCopies: workload not finalized");
  plan.Validate(w);
  return ScheduleValidAsyncCopies(w, plan, options);
}

CopyScheduleResult ScheduleValidAsyncCopies(const Workload& w, const PlacementPlan& input,
                                            const CopyScheduleOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  CopyScheduleResult result;
  result.plan = input;
  result.plan.Normalize();
  KernelLedger ledger;
  EvaluateValidPlan(w, result.plan, result.cost, &ledger);
  const double before_ns = result.cost.total_ns;
  auto finish = [&]() -> CopyScheduleResult& {
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  };
  if (input.mode != MigrationMode::kAsync || result.cost.oom || result.plan.migrations.empty()) return finish();

  PlacementPlan plan = result.plan;
  const int64_t K = static_cast<int64_t>(w.num_kernels());
  const uint64_t dram_cap = plan.dram_limit_bytes > 0 ? plan.dram_limit_bytes : kNoLimit;
  const uint64_t slow_cap = w.device.slow_capacity_bytes > 0 ? w.device.slow_capacity_bytes : kNoLimit;
  auto occupancy = [&](Tier tier) -> std::vector<uint64_t>& {
    return tier == Tier::kDram ? ledger.dram_bytes : ledger.slow_bytes;
  };
  auto cap = [&](Tier tier) { return tier == Tier::kDram ? dram_cap : slow_cap; };
  auto kernel_cost = [&](int64_t k, double blocking, double overlapped) {
    return blocking + ExposedAsyncCopyNs(w, overlapped, ledger.exec_ns[k]);
  };
  // A move must save more than rounding: the ledger's sums drift by ulps.
  const double min_saving_ns = 1e-9 * std::max(before_ns, 1.0);

  for (int pass = 0; pass < std::max(options.max_passes, 0); ++pass) {
    ++result.passes;
    // Each copy's neighbours among its tensor's copies (kNone: none); a move
    // keeps a copy between them, so they hold through the pass. (Flat: the
    // search prices every candidate so, and per-tensor lists were a tenth
    // of its time.)
    constexpr size_t kNone = std::numeric_limits<size_t>::max();
    const size_t M = plan.migrations.size();
    std::vector<size_t> previous_copy(M, kNone), next_copy(M, kNone), last_copy(w.num_tensors(), kNone);
    for (size_t i = 0; i < M; ++i) {
      size_t& last = last_copy[plan.migrations[i].tensor];
      if (last != kNone) {
        previous_copy[i] = last;
        next_copy[last] = i;
      }
      last = i;
    }
    int moved = 0;
    for (size_t i = 0; i < plan.migrations.size(); ++i) {
      Migration& m = plan.migrations[i];
      const Tensor& tensor = w.tensors[m.tensor];
      if (tensor.pinned_dram) continue;
      const int64_t a = m.after_kernel;
      int64_t lo = std::max<int64_t>(tensor.alloc_kernel,
                                     previous_copy[i] != kNone ? plan.migrations[previous_copy[i]].after_kernel + 1 : 0);
      int64_t hi = std::min<int64_t>(static_cast<int64_t>(tensor.free_kernel) - 1,
                                     next_copy[i] != kNone ? plan.migrations[next_copy[i]].after_kernel - 1 : K - 1);
      const bool blocking = w.KernelWrites(static_cast<size_t>(a + 1), m.tensor);
      // The first kernel that sees the new tier: a + 2 under an async copy,
      // a + 1 under a blocking one. The moved copy (async) sees it at a' + 2,
      // which must not pass a kernel that touches the tensor.
      const int64_t sees = blocking ? a + 1 : a + 2;
      // The kernels that touch the tensor, ascending: a copy may not cross
      // one (the tier that kernel sees would change).
      const std::vector<uint32_t>& uses = w.kernels_of_tensor(m.tensor);
      auto first_at_or_after = std::lower_bound(uses.begin(), uses.end(), sees,
                                                [](uint32_t k, int64_t v) { return static_cast<int64_t>(k) < v; });
      if (first_at_or_after != uses.end()) hi = std::min(hi, static_cast<int64_t>(*first_at_or_after) - 2);
      // Only that last kernel before may touch the tensor under the moved
      // copy (it reads the source); one that writes it would block.
      const int64_t touched_before =
          first_at_or_after != uses.begin() ? static_cast<int64_t>(*std::prev(first_at_or_after)) : -2;
      lo = std::max(lo, touched_before - 1);
      if (lo > hi) continue;

      const Tier to = m.to, from = to == Tier::kDram ? Tier::kSlow : Tier::kDram;
      const uint64_t size = tensor.size_bytes;
      const double copy_ns = CopyTimeNs(w, size, to);
      const int64_t x = a + 1;
      const double removed_ns =
          (blocking ? kernel_cost(x, ledger.blocking_ns[x] - copy_ns, ledger.overlapped_ns[x])
                    : kernel_cost(x, ledger.blocking_ns[x], ledger.overlapped_ns[x] - copy_ns)) -
          kernel_cost(x, ledger.blocking_ns[x], ledger.overlapped_ns[x]);
      auto added_ns = [&](int64_t y) {
        return kernel_cost(y, ledger.blocking_ns[y], ledger.overlapped_ns[y] + copy_ns) -
               kernel_cost(y, ledger.blocking_ns[y], ledger.overlapped_ns[y]);
      };
      // No kernel hides a copy better than one with room for all of it
      // (exposure share x copy): a scan stops at the first.
      const double least_added_ns = w.device.async_copy_exposure * copy_ns + min_saving_ns;
      double best_delta = -min_saving_ns;
      int64_t best = a;
      // Earlier: the target tier holds the tensor from a' + 1, so kernels
      // a' + 1 .. a gain it; the source tier holds it for less.
      std::vector<uint64_t>& to_bytes = occupancy(to);
      for (int64_t b = a - 1; b >= lo; --b) {
        if (to_bytes[b + 1] + size > cap(to)) break;
        if (b + 1 == touched_before && w.KernelWrites(static_cast<size_t>(b + 1), m.tensor)) continue;  // would block
        const double added = added_ns(b + 1);
        if (removed_ns + added < best_delta) best_delta = removed_ns + added, best = b;
        if (added <= least_added_ns) break;
      }
      // Later: the source tier holds the tensor through a' + 1 (in flight),
      // from the kernel after it held it until now.
      std::vector<uint64_t>& from_bytes = occupancy(from);
      const int64_t held_until = blocking ? a : a + 1;
      bool fits = true;
      for (int64_t k = held_until + 1; k <= a + 1 && k < K; ++k) fits = fits && from_bytes[k] + size <= cap(from);
      for (int64_t b = a + 1; fits && b <= hi; ++b) {
        if (from_bytes[b + 1] + size > cap(from)) break;
        const double added = added_ns(b + 1);  // b + 1 < the next kernel that touches the tensor
        if (removed_ns + added < best_delta) best_delta = removed_ns + added, best = b;
        if (added <= least_added_ns) break;
      }
      if (best == a) continue;

      const int64_t y = best + 1;
      (blocking ? ledger.blocking_ns[x] : ledger.overlapped_ns[x]) -= copy_ns;
      ledger.overlapped_ns[y] += copy_ns;
      if (best < a) {
        for (int64_t k = best + 1; k <= a; ++k) to_bytes[k] += size;
        for (int64_t k = best + 2; k <= held_until; ++k) from_bytes[k] -= size;
      } else {
        for (int64_t k = a + 1; k <= best; ++k) to_bytes[k] -= size;
        for (int64_t k = held_until + 1; k <= best + 1; ++k) from_bytes[k] += size;
      }
      m.after_kernel = static_cast<int32_t>(best);
      ++moved;
    }
    result.moved += moved;
    if (moved == 0) break;
  }
  if (result.moved == 0) return finish();
  plan.Normalize();
  CostReport after;
  EvaluateValidPlan(w, plan, after);
  // The local prices are the cost model's own terms; a plan that is not
  // better on the whole evaluation (none expected) is not returned.
  if (!after.oom && after.total_ns < before_ns) {
    result.plan = std::move(plan);
    result.cost = std::move(after);
    result.saved_ns = before_ns - result.cost.total_ns;
  } else {
    result.moved = 0;
  }
  return finish();
}

}  // namespace tensortier
