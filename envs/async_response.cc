#include "envs/async_response.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tensortier {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A tensor's state at one of its live kernels: the tier the kernel reads it
// from, the tier it is in when the kernel ends, and the copy issued at the
// boundary before the kernel (async: overlapping it; blocking: the kernel
// writes the tensor, so the copy ends first), as EvaluateValidPlan charges
// them.
enum State : uint8_t {
  kDram = 0,         // in DRAM
  kSlow = 1,         // in the slow tier
  kToSlowAsync = 2,  // copied to the slow tier under the kernel, which reads DRAM
  kToDramAsync = 3,  // copied to DRAM under the kernel, which reads the slow tier
  kToSlowBlocking = 4,
  kToDramBlocking = 5,
};
constexpr int kStates = 6;
constexpr std::array<bool, kStates> kEndsSlow = {false, true, true, false, true, false};
constexpr std::array<bool, kStates> kReadsSlow = {false, true, false, true, true, false};
constexpr std::array<bool, kStates> kHoldsDram = {true, false, true, true, false, true};
constexpr std::array<bool, kStates> kHoldsSlow = {false, true, true, true, true, false};
constexpr std::array<bool, kStates> kBlocking = {false, false, false, false, true, true};
constexpr std::array<bool, kStates> kCopies = {false, false, true, true, true, true};

// What one tensor adds to each of its live kernels' terms.
struct Own {
  std::vector<double> exec_ns, blocking_ns, overlapped_ns;
  std::vector<uint64_t> dram_bytes, slow_bytes;
  double copy_back_ns = 0;
};

class Responder {
 public:
  Responder(const Workload& w, const PlacementPlan& plan) : w_(w), plan_(plan) {
    penalty_ns_.resize(w.num_tensors());
    writes_.resize(w.num_tensors());
  }

  // t's terms under the plan's schedule of it (`migrations`: t's, ascending).
  Own Current(uint32_t t, const std::vector<Migration>& migrations) {
    const Tensor& tensor = w_.tensors[t];
    const uint32_t a0 = tensor.alloc_kernel, L = tensor.free_kernel - a0 + 1;
    Own own;
    own.exec_ns.assign(L, 0);
    own.blocking_ns.assign(L, 0);
    own.overlapped_ns.assign(L, 0);
    own.dram_bytes.assign(L, 0);
    own.slow_bytes.assign(L, 0);
    Index(t);
    Tier tier = plan_.initial_tiers[t];
    size_t next = 0;
    for (uint32_t i = 0; i < L; ++i) {
      const uint32_t k = a0 + i;
      bool in_flight = false;
      for (; next < migrations.size() && migrations[next].after_kernel <= static_cast<int32_t>(k) - 1; ++next) {
        const Migration& m = migrations[next];
        if (tier == m.to) continue;
        const double ns = CopyTimeNs(w_, tensor.size_bytes, m.to);
        if (writes_[t][i]) {  // async mode: blocking only before a kernel that writes it
          own.blocking_ns[i] += ns;
          tier = m.to;
        } else {
          own.overlapped_ns[i] += ns;
          in_flight = true;
        }
      }
      if (tier == Tier::kSlow) own.exec_ns[i] = penalty_ns_[t][i];
      (tier == Tier::kDram ? own.dram_bytes : own.slow_bytes)[i] += tensor.size_bytes;
      if (in_flight) {
        tier = tier == Tier::kDram ? Tier::kSlow : Tier::kDram;
        (tier == Tier::kDram ? own.dram_bytes : own.slow_bytes)[i] += tensor.size_bytes;
      }
    }
    if (tensor.persistent && tier != plan_.initial_tiers[t])
      own.copy_back_ns = CopyTimeNs(w_, tensor.size_bytes, plan_.initial_tiers[t]);
    return own;
  }

  // The cheapest schedule of t with the other tensors' terms `ledger` less
  // `own`: its cost over t's kernels (the kernels' whole terms and t's copy
  // back) and its starting tier and copies; and the same cost of `own`.
  struct Best {
    double cost_ns = kInf, current_ns = 0;
    Tier initial = Tier::kDram;
    std::vector<Migration> migrations;
  };
  Best Respond(uint32_t t, const Own& own, const KernelLedger& ledger) {
    const Tensor& tensor = w_.tensors[t];
    const uint32_t a0 = tensor.alloc_kernel, L = tensor.free_kernel - a0 + 1;
    const uint64_t size = tensor.size_bytes;
    const uint64_t dram_cap = plan_.dram_limit_bytes > 0 ? plan_.dram_limit_bytes : ~uint64_t{0};
    const uint64_t slow_cap = w_.device.slow_capacity_bytes > 0 ? w_.device.slow_capacity_bytes : ~uint64_t{0};
    const double to_slow_ns = CopyTimeNs(w_, size, Tier::kSlow), to_dram_ns = CopyTimeNs(w_, size, Tier::kDram);
    // Per kernel and state, the kernel's whole cost, or kInf where a tier overfills.
    cost_.assign(static_cast<size_t>(L) * kStates, kInf);
    Best best;
    for (uint32_t i = 0; i < L; ++i) {
      const uint32_t k = a0 + i;
      const double exec = ledger.exec_ns[k] - own.exec_ns[i];
      const double blocking = ledger.blocking_ns[k] - own.blocking_ns[i];
      const double overlapped = ledger.overlapped_ns[k] - own.overlapped_ns[i];
      const uint64_t dram = ledger.dram_bytes[k] - own.dram_bytes[i], slow = ledger.slow_bytes[k] - own.slow_bytes[i];
      best.current_ns += KernelNs(exec + own.exec_ns[i], blocking + own.blocking_ns[i], overlapped + own.overlapped_ns[i]);
      for (int s = 0; s < kStates; ++s) {
        if (kCopies[s] && (i == 0 || kBlocking[s] != static_cast<bool>(writes_[t][i]))) continue;
        if ((kHoldsDram[s] && dram + size > dram_cap) || (kHoldsSlow[s] && slow + size > slow_cap)) continue;
        const double copy_ns = !kCopies[s] ? 0 : kEndsSlow[s] ? to_slow_ns : to_dram_ns;
        cost_[i * kStates + s] = KernelNs(exec + (kReadsSlow[s] ? penalty_ns_[t][i] : 0),
                                          blocking + (kBlocking[s] ? copy_ns : 0),
                                          overlapped + (kCopies[s] && !kBlocking[s] ? copy_ns : 0));
      }
    }
    best.current_ns += own.copy_back_ns;
    // Persistent tensors end where they start or are copied back: one
    // programme per starting tier.
    for (Tier start : {Tier::kDram, Tier::kSlow}) {
      std::vector<Migration> migrations;
      const double ns = Programme(t, L, start, to_slow_ns, to_dram_ns, migrations);
      if (ns < best.cost_ns) {
        best.cost_ns = ns;
        best.initial = start;
        best.migrations = std::move(migrations);
      }
    }
    return best;
  }

 private:
  double KernelNs(double exec, double blocking, double overlapped) const {
    return exec + blocking + ExposedAsyncCopyNs(w_, overlapped, exec);
  }

  // t's slow-tier penalty and whether the kernel writes it, per live kernel.
  void Index(uint32_t t) {
    if (!penalty_ns_[t].empty()) return;
    const Tensor& tensor = w_.tensors[t];
    const uint32_t a0 = tensor.alloc_kernel, L = tensor.free_kernel - a0 + 1;
    penalty_ns_[t].assign(L, 0);
    writes_[t].assign(L, 0);
    for (uint32_t k : w_.kernels_of_tensor(t)) {
      if (k < a0 || k - a0 >= L) continue;
      const Access* a = w_.FindAccess(k, t);
      if (!a) continue;
      penalty_ns_[t][k - a0] = a->slow_penalty_ns;
      writes_[t][k - a0] = a->writes > 0;
    }
  }

  // The cheapest path through the states from `start` at t's first kernel,
  // with t's copy back where it ends elsewhere (persistent tensors).
  double Programme(uint32_t t, uint32_t L, Tier start, double to_slow_ns, double to_dram_ns,
                   std::vector<Migration>& migrations) {
    const Tensor& tensor = w_.tensors[t];
    from_.assign(static_cast<size_t>(L) * kStates, 0);
    std::array<double, kStates> at{};
    at.fill(kInf);
    const int first = start == Tier::kDram ? kDram : kSlow;
    at[first] = cost_[first];
    for (uint32_t i = 1; i < L; ++i) {
      std::array<double, kStates> next{};
      next.fill(kInf);
      // The cheapest state that ends in each tier at kernel i - 1.
      double ends[2] = {kInf, kInf};
      uint8_t ends_from[2] = {0, 0};
      for (int s = 0; s < kStates; ++s) {
        const int e = kEndsSlow[s] ? 1 : 0;
        if (at[s] < ends[e]) ends[e] = at[s], ends_from[e] = static_cast<uint8_t>(s);
      }
      for (int s = 0; s < kStates; ++s) {
        const double c = cost_[i * kStates + s];
        if (c == kInf) continue;
        // No copy: the tier it ended in; a copy: from the other one.
        const int from_tier = kCopies[s] ? (kEndsSlow[s] ? 0 : 1) : (kEndsSlow[s] ? 1 : 0);
        if (ends[from_tier] == kInf) continue;
        next[s] = ends[from_tier] + c;
        from_[i * kStates + s] = ends_from[from_tier];
      }
      at = next;
    }
    double best = kInf;
    int last = -1;
    for (int s = 0; s < kStates; ++s) {
      if (at[s] == kInf) continue;
      const bool ends_slow = kEndsSlow[s];
      const double back = tensor.persistent && ends_slow != (start == Tier::kSlow)
                              ? (start == Tier::kSlow ? to_slow_ns : to_dram_ns)
                              : 0;
      if (at[s] + back < best) best = at[s] + back, last = s;
    }
    migrations.clear();
    if (last < 0) return kInf;
    for (uint32_t i = L - 1; i > 0; --i) {
      if (kCopies[last])
        migrations.push_back({static_cast<int32_t>(tensor.alloc_kernel + i - 1), t,
                              kEndsSlow[last] ? Tier::kSlow : Tier::kDram});
      last = from_[i * kStates + last];
    }
    std::reverse(migrations.begin(), migrations.end());
    return best;
  }

  const Workload& w_;
  const PlacementPlan& plan_;
  std::vector<std::vector<double>> penalty_ns_;
  std::vector<std::vector<uint8_t>> writes_;
  std::vector<double> cost_;
  std::vector<uint8_t> from_;
};

}  // namespace

BestResponseResult RespondPerTensorAsync(const Workload& w, const PlacementPlan& plan,
                                         const AsyncResponseOptions& options) {
  if (plan.mode != MigrationMode::kAsync)
    throw std::invalid_argument("RespondPerTensorAsync: the plan is not in async mode");
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >= options.max_seconds;
  };
  BestResponseResult result;
  result.plan = plan;
  result.plan.Normalize();
  KernelLedger ledger;
  TensorLedger tensors;
  EvaluateValidPlan(w, result.plan, result.cost, &ledger, &tensors);
  if (result.cost.oom) return result;
  // The plan the responder reads its starting tiers from is result.plan, as it changes.
  Responder responder(w, result.plan);
  CostReport candidate_cost;
  KernelLedger candidate_ledger;
  for (int pass = 0; pass < std::max(options.max_passes, 0) && !out_of_time(); ++pass) {
    std::vector<std::pair<double, uint32_t>> costly;
    for (uint32_t t = 0; t < w.num_tensors(); ++t) {
      const double ns = tensors.slow_penalty_ns[t] + tensors.copy_ns[t];
      if (ns > 0 && !w.tensors[t].pinned_dram) costly.push_back({ns, t});
    }
    std::stable_sort(costly.begin(), costly.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    int moved = 0;
    for (const auto& [ns, t] : costly) {
      if (out_of_time()) break;
      std::vector<Migration> own_migrations;
      for (const Migration& m : result.plan.migrations)
        if (m.tensor == t) own_migrations.push_back(m);
      const Own own = responder.Current(t, own_migrations);
      const auto best = responder.Respond(t, own, ledger);
      // Rounding: the ledger less t's terms drifts by ulps.
      if (!(best.cost_ns < best.current_ns - 1e-9 * std::max(result.cost.total_ns, 1.0))) continue;
      PlacementPlan candidate = result.plan;
      candidate.initial_tiers[t] = best.initial;
      candidate.migrations.erase(std::remove_if(candidate.migrations.begin(), candidate.migrations.end(), [t](const Migration& m) { return m.tensor == t; }), candidate.migrations.end());
      candidate.migrations.insert(candidate.migrations.end(), best.migrations.begin(), best.migrations.end());
      candidate.Normalize();
      EvaluateValidPlan(w, candidate, candidate_cost, &candidate_ledger);
      if (candidate_cost.oom || !(candidate_cost.total_ns < result.cost.total_ns * (1 - 1e-12))) continue;
      result.plan = std::move(candidate);
      std::swap(result.cost, candidate_cost);
      std::swap(ledger, candidate_ledger);
      ++moved;
    }
    result.tensors_moved += moved;
    if (moved == 0) break;
    EvaluateValidPlan(w, result.plan, result.cost, &ledger, &tensors);
  }
  return result;
}

}  // namespace tensortier
