#include "envs/cost_model.h"

#include <algorithm>
#include <stdexcept>

namespace tensortier {
namespace {

struct InFlight {
  uint32_t tensor;
  Tier to;
};

}  // namespace

double CopyTimeNs(const Workload& w, uint64_t bytes, Tier to) {
  const bool to_slow = to == Tier::kSlow;
  const double bw = to_slow ? w.device.dram_to_slow_bytes_per_second : w.device.slow_to_dram_bytes_per_second;
  const double setup_ns = to_slow ? w.device.dram_to_slow_copy_setup_ns : w.device.slow_to_dram_copy_setup_ns;
  return setup_ns + static_cast<double>(bytes) / bw * 1e9;
}

double ExposedAsyncCopyNs(const Workload& w, double copy_ns, double kernel_ns) {
  return std::max(copy_ns - kernel_ns, 0.0) + w.device.async_copy_exposure * std::min(copy_ns, kernel_ns);
}

double MinCostNs(const Workload& w) { return w.total_dram_time_ns(); }
double MaxCostNs(const Workload& w) { return w.total_slow_time_ns(); }

double NormalisedCost(const Workload& w, double cost_ns) {
  double lo = MinCostNs(w), hi = MaxCostNs(w);
  if (hi - lo <= 0) return 0;
  return (cost_ns - lo) / (hi - lo);
}

CostReport EvaluatePlan(const Workload& w, const PlacementPlan& plan) {
  if (!w.finalized()) throw std::logic_error("EvaluatePlan: workload not finalized");
  plan.Validate(w);
  CostReport r;
  EvaluateValidPlan(w, plan, r);
  return r;
}

void EvaluateValidPlan(const Workload& w, const PlacementPlan& plan, CostReport& r, KernelLedger* ledger,
                       TensorLedger* tensors) {
  const size_t K = w.num_kernels();
  std::vector<double> kernel_ns = std::move(r.kernel_ns);
  r = CostReport{};
  kernel_ns.assign(K, 0);
  r.kernel_ns = std::move(kernel_ns);
  if (ledger) {
    ledger->exec_ns.assign(K, 0);
    ledger->blocking_ns.assign(K, 0);
    ledger->overlapped_ns.assign(K, 0);
    ledger->dram_bytes.assign(K, 0);
    ledger->slow_bytes.assign(K, 0);
  }
  if (tensors) {
    const size_t T = w.num_tensors();
    tensors->slow_penalty_ns.assign(T, 0);
    tensors->slow_accesses.assign(T, 0);
    tensors->copy_ns.assign(T, 0);
    tensors->copies.assign(T, 0);
  }
  std::vector<Tier> tier = plan.initial_tiers;
  // Pinned tensors stay in DRAM whatever the plan says (as on any executor).
  if (w.pinned_dram_bytes() > 0)
    for (uint32_t t = 0; t < w.num_tensors(); ++t)
      if (w.tensors[t].pinned_dram) tier[t] = Tier::kDram;
  std::vector<InFlight> in_flight;
  size_t next = 0;
  // Bytes of the live tensors in each tier, carried from kernel to kernel
  // instead of summed over live_at(k): on large graphs kernels x live
  // tensors outweighs everything else here. Integers, so the same peaks.
  uint64_t live_dram = 0, live_slow = 0;
  auto live_sum = [&](uint32_t t) -> uint64_t& { return tier[t] == Tier::kDram ? live_dram : live_slow; };
  // A valid plan moves only tensors live across the boundary, so the totals
  // follow every tier change.
  auto set_tier = [&](uint32_t t, Tier to) {
    if (tier[t] == to) return;
    live_sum(t) -= w.tensors[t].size_bytes;
    tier[t] = to;
    live_sum(t) += w.tensors[t].size_bytes;
  };

  auto count_copy = [&](uint32_t t, Tier to) {
    uint64_t bytes = w.tensors[t].size_bytes;
    if (to == Tier::kSlow) {
      r.bytes_to_slow += bytes;
      ++r.migrations_to_slow;
    } else {
      r.bytes_to_dram += bytes;
      ++r.migrations_to_dram;
    }
    double ns = CopyTimeNs(w, bytes, to);
    r.raw_migration_ns += ns;
    if (tensors) {
      tensors->copy_ns[t] += ns;
      ++tensors->copies[t];
    }
    return ns;
  };

  for (size_t k = 0; k < K; ++k) {
    if (k > 0)
      for (uint32_t t : w.freed_at(k - 1)) live_sum(t) -= w.tensors[t].size_bytes;
    for (uint32_t t : w.allocated_at(k)) live_sum(t) += w.tensors[t].size_bytes;
    double blocking_ns = 0, overlapped_ns = 0;
    in_flight.clear();
    const int32_t boundary = static_cast<int32_t>(k) - 1;
    for (; next < plan.migrations.size() && plan.migrations[next].after_kernel <= boundary; ++next) {
      const Migration& m = plan.migrations[next];
      if (tier[m.tensor] == m.to || w.tensors[m.tensor].pinned_dram) continue;
      double ns = count_copy(m.tensor, m.to);
      if (plan.mode == MigrationMode::kSync || w.KernelWrites(k, m.tensor)) {
        blocking_ns += ns;
        set_tier(m.tensor, m.to);
      } else {
        overlapped_ns += ns;
        in_flight.push_back({m.tensor, m.to});
      }
    }

    double exec_ns = w.kernels[k].dram_time_ns;
    for (uint32_t i : w.accesses_of_kernel(k)) {
      const Access& a = w.accesses[i];
      if (tier[a.tensor] != Tier::kSlow) continue;
      exec_ns += a.slow_penalty_ns;
      if (tensors) {
        tensors->slow_penalty_ns[a.tensor] += a.slow_penalty_ns;
        ++tensors->slow_accesses[a.tensor];
      }
    }

    uint64_t dram = live_dram, slow = live_slow;
    // A copy in flight holds space in both tiers (eq. 7).
    for (const InFlight& f : in_flight) (f.to == Tier::kDram ? dram : slow) += w.tensors[f.tensor].size_bytes;
    r.dram_peak_bytes = std::max(r.dram_peak_bytes, dram);
    r.slow_peak_bytes = std::max(r.slow_peak_bytes, slow);
    uint64_t excess = 0;
    if (plan.dram_limit_bytes > 0 && dram > plan.dram_limit_bytes) excess = dram - plan.dram_limit_bytes;
    if (w.device.slow_capacity_bytes > 0 && slow > w.device.slow_capacity_bytes)
      excess = std::max(excess, slow - w.device.slow_capacity_bytes);
    if (excess > 0) {
      if (!r.oom) r.oom_kernel = static_cast<int32_t>(k);
      r.oom = true;
      r.oom_excess_bytes = std::max(r.oom_excess_bytes, excess);
    }

    if (ledger) {
      ledger->exec_ns[k] = exec_ns;
      ledger->blocking_ns[k] = blocking_ns;
      ledger->overlapped_ns[k] = overlapped_ns;
      ledger->dram_bytes[k] = dram;
      ledger->slow_bytes[k] = slow;
    }
    const double exposed_ns = blocking_ns + ExposedAsyncCopyNs(w, overlapped_ns, exec_ns);
    r.overlapped_ns += std::min(overlapped_ns, exec_ns);
    r.exec_ns += exec_ns;
    r.migration_ns += exposed_ns;
    r.kernel_ns[k] = exec_ns + exposed_ns;
    for (const InFlight& f : in_flight) set_tier(f.tensor, f.to);
  }

  // The plan repeats every iteration: persistent tensors go back to where
  // the next iteration starts them.
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    if (!w.tensors[t].persistent || w.tensors[t].pinned_dram || tier[t] == plan.initial_tiers[t]) continue;
    double ns = count_copy(t, plan.initial_tiers[t]);
    r.migration_ns += ns;
    r.kernel_ns[K - 1] += ns;
  }
  r.total_ns = r.exec_ns + r.migration_ns;
}

}  // namespace tensortier
