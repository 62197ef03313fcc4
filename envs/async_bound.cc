#include "envs/async_bound.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <vector>

#include "envs/cost_model.h"
#include "envs/plan_relaxation.h"

namespace tensortier {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A plannable tensor's life as the programme sees it: its kernels' slow-tier
// penalties and writes, sparse (the kernels between cost nothing of their own).
struct TensorLife {
  uint32_t alloc = 0, free = 0;
  double size = 0;
  bool persistent = false;
  double to_dram_ns = 0, to_slow_ns = 0;
  std::vector<uint32_t> use_kernels;  // ascending, distinct
  std::vector<double> use_penalty_ns;
  std::vector<uint8_t> use_writes;
};

// The prices, per kernel: `dram` per byte held there; `exec` the share of
// the kernel's execution time counted (1 - (1 - mu)(1 - e)), `copy` the
// share of an async copy under it (1 - mu (1 - e)).
struct Prices {
  std::vector<double> dram, exec, copy;
};

// What the cheapest schedules add up to per kernel: bytes held in DRAM (a
// copy in flight counts), slow-tier penalties, async copies under it.
struct Usage {
  std::vector<double> dram_bytes, penalty_ns, overlapped_ns;
  void Reset(size_t K) {
    dram_bytes.assign(K, 0);
    penalty_ns.assign(K, 0);
    overlapped_ns.assign(K, 0);
  }
};

// Per kernel of the life, for each tier after it (0 slow, 1 DRAM): whether
// it came by a copy from the other tier.
struct Trace {
  std::vector<uint8_t> copied[2];
};

// The cheapest priced schedule of `x`; adds what it uses to `usage`.
double Solve(const TensorLife& x, const Prices& p, Trace& trace, Usage& usage) {
  const size_t L = x.free - x.alloc + 1;
  for (auto& c : trace.copied) c.assign(L, 0);
  double best = kInf;
  int best_end = 0;
  std::vector<uint8_t> best_copied[2];
  // A persistent tensor starts the iteration in the tier it ends it in, or
  // pays the copy back: one pass per starting tier; another starts in either.
  for (int pass = 0; pass < (x.persistent ? 2 : 1); ++pass) {
    size_t use = 0;
    auto penalty_at = [&](uint32_t k, bool* writes) {
      while (use < x.use_kernels.size() && x.use_kernels[use] < k) ++use;
      const bool here = use < x.use_kernels.size() && x.use_kernels[use] == k;
      *writes = here && x.use_writes[use];
      return here ? x.use_penalty_ns[use] : 0.0;
    };
    bool writes = false;
    double pen = penalty_at(x.alloc, &writes);
    double v[2];
    v[0] = (x.persistent && pass == 1) ? kInf : p.exec[x.alloc] * pen;
    v[1] = (x.persistent && pass == 0) ? kInf : p.dram[x.alloc] * x.size;
    for (uint32_t k = x.alloc + 1; k <= x.free; ++k) {
      pen = penalty_at(k, &writes);
      const double slow_here = p.exec[k] * pen, dram_here = p.dram[k] * x.size;
      double nv[2];
      for (int to = 0; to < 2; ++to) {
        const double copy_ns = to == 1 ? x.to_dram_ns : x.to_slow_ns;
        const double stay = v[to] + (to == 1 ? dram_here : slow_here);
        // Before a kernel that writes it the copy blocks, and the kernel
        // sees the new tier; otherwise the kernel sees the old one and the
        // copy holds both tiers under it.
        const double moved = writes ? v[1 - to] + copy_ns + (to == 1 ? dram_here : slow_here)
                                    : v[1 - to] + p.copy[k] * copy_ns + dram_here + (to == 1 ? slow_here : 0.0);
        trace.copied[to][k - x.alloc] = moved < stay;
        nv[to] = std::min(stay, moved);
      }
      v[0] = nv[0];
      v[1] = nv[1];
    }
    for (int end = 0; end < 2; ++end) {
      double total = v[end];
      if (x.persistent && end != pass) total += end == 1 ? x.to_slow_ns : x.to_dram_ns;
      if (total < best) {
        best = total;
        best_end = end;
        best_copied[0] = trace.copied[0];
        best_copied[1] = trace.copied[1];
      }
    }
  }
  // Back from the end: what the schedule holds, pays and copies per kernel.
  size_t use = x.use_kernels.size();
  int tier = best_end;
  for (uint32_t k = x.free;; --k) {
    while (use > 0 && x.use_kernels[use - 1] > k) --use;
    const bool here = use > 0 && x.use_kernels[use - 1] == k;
    const double pen = here ? x.use_penalty_ns[use - 1] : 0.0;
    const bool writes = here && x.use_writes[use - 1];
    const bool copied = k > x.alloc && best_copied[tier][k - x.alloc];
    if (!copied || writes) {  // the kernel sees the tier after it (a blocking copy landed before it)
      if (tier == 1) usage.dram_bytes[k] += x.size;
      else usage.penalty_ns[k] += pen;
    } else {
      usage.dram_bytes[k] += x.size;
      if (tier == 1) usage.penalty_ns[k] += pen;  // the kernel still reads it from the slow tier
      usage.overlapped_ns[k] += tier == 1 ? x.to_dram_ns : x.to_slow_ns;
    }
    if (copied) tier = 1 - tier;
    if (k == x.alloc) break;
  }
  return best;
}

}  // namespace

AsyncBoundResult AsyncLowerBound(const Workload& w, uint64_t dram_limit_bytes, double upper_bound_ns,
                                 const AsyncBoundOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (!w.finalized()) throw std::logic_error("AsyncLowerBound: workload not finalized");
  AsyncBoundResult result;
  const size_t K = w.num_kernels();
  if (K == 0) return result;
  const double e = w.device.async_copy_exposure;
  const std::vector<int64_t> room = PlannableDramPerKernel(w, dram_limit_bytes);
  const std::vector<double> capacity(room.begin(), room.end());
  std::vector<TensorLife> lives;
  std::vector<int64_t> index(w.num_tensors(), -1);
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    const Tensor& x = w.tensors[t];
    if (x.pinned_dram) continue;
    TensorLife life;
    life.alloc = x.alloc_kernel;
    life.free = std::min<uint32_t>(x.free_kernel, static_cast<uint32_t>(K - 1));
    life.size = static_cast<double>(x.size_bytes);
    life.persistent = x.persistent;
    life.to_dram_ns = CopyTimeNs(w, x.size_bytes, Tier::kDram);
    life.to_slow_ns = CopyTimeNs(w, x.size_bytes, Tier::kSlow);
    index[t] = static_cast<int64_t>(lives.size());
    lives.push_back(std::move(life));
  }
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t a : w.accesses_of_kernel(k)) {
      const Access& acc = w.accesses[a];
      if (index[acc.tensor] < 0) continue;
      TensorLife& life = lives[static_cast<size_t>(index[acc.tensor])];
      if (life.use_kernels.empty() || life.use_kernels.back() != k) {
        life.use_kernels.push_back(k);
        life.use_penalty_ns.push_back(0);
        life.use_writes.push_back(0);
      }
      life.use_penalty_ns.back() += acc.slow_penalty_ns;
      if (acc.writes > 0) life.use_writes.back() = 1;
    }

  Prices p;
  p.dram.assign(K, 0);
  // mu = 1: every copy hidden as far as the device hides any (a kernel's
  // whole execution counted, a copy at e).
  std::vector<double> mu(K, 1.0);
  auto set_shares = [&] {
    p.exec.resize(K);
    p.copy.resize(K);
    for (size_t k = 0; k < K; ++k) {
      p.exec[k] = 1 - (1 - mu[k]) * (1 - e);
      p.copy[k] = 1 - mu[k] * (1 - e);
    }
  };
  Usage usage;
  Trace trace;
  std::vector<double> direction(K, 0), g_mu(K, 0);
  double step_scale = 1.0;
  int since_improved = 0;
  for (; result.iterations < options.max_iterations; ++result.iterations) {
    if (result.iterations > 0 && options.max_seconds > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() >= options.max_seconds)
      break;
    set_shares();
    usage.Reset(K);
    double dual = 0;
    for (const TensorLife& x : lives) dual += Solve(x, p, trace, usage);
    for (size_t k = 0; k < K; ++k) {
      dual += p.exec[k] * w.kernels[k].dram_time_ns;
      if (p.dram[k] > 0) dual -= p.dram[k] * capacity[k];
    }
    if (result.iterations == 0 || dual > result.lower_bound_ns) {
      result.lower_bound_ns = dual;
      since_improved = 0;
    } else if (++since_improved >= options.patience) {
      step_scale /= 2;
      since_improved = 0;
    }
    // The DRAM prices: deflected subgradient steps (as the sync
    // relaxation's); the hiding prices: plain ones, inside [0, 1]. Each gets
    // half of Polyak's step.
    double norm_dram = 0, norm_mu = 0;
    for (size_t k = 0; k < K; ++k) {
      double g = usage.dram_bytes[k] - capacity[k];
      if (g < 0 && p.dram[k] <= 0) g = 0;
      direction[k] = g + options.deflection * direction[k];
      norm_dram += direction[k] * direction[k];
      double gm = (1 - e) * (w.kernels[k].dram_time_ns + usage.penalty_ns[k] - usage.overlapped_ns[k]);
      if ((gm > 0 && mu[k] >= 1) || (gm < 0 && mu[k] <= 0)) gm = 0;
      g_mu[k] = gm;
      norm_mu += gm * gm;
    }
    if ((norm_dram == 0 && norm_mu == 0) || step_scale < 1e-6) break;
    const double gap = upper_bound_ns > 0 ? std::max(upper_bound_ns - dual, 1e-3 * upper_bound_ns)
                                          : std::max(result.lower_bound_ns, 1.0);
    const double share = norm_dram > 0 && norm_mu > 0 ? 0.5 : 1.0;
    if (norm_dram > 0) {
      const double step = step_scale * share * gap / norm_dram;
      for (size_t k = 0; k < K; ++k) p.dram[k] = std::max(0.0, p.dram[k] + step * direction[k]);
    }
    if (norm_mu > 0) {
      const double step = step_scale * share * gap / norm_mu;
      for (size_t k = 0; k < K; ++k) mu[k] = std::clamp(mu[k] + step * g_mu[k], 0.0, 1.0);
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tensortier
