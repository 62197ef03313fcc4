#include "policies/plan_tools.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tensortier {
namespace {

double PenaltyAt(const Workload& w, size_t k, uint32_t t) {
  const Access* a = w.FindAccess(k, t);
  return a ? a->slow_penalty_ns : 0.0;
}

}  // namespace

bool KernelWrites(const Workload& w, size_t k, uint32_t t) { return w.KernelWrites(k, t); }

bool KernelTouches(const Workload& w, size_t k, uint32_t t) { return w.FindAccess(k, t) != nullptr; }

uint64_t AccessCount(const Workload& w, uint32_t t) {
  uint64_t n = 0;
  for (uint32_t k : w.kernels_of_tensor(t)) {
    const Access& a = *w.FindAccess(k, t);
    n += std::max<uint32_t>(1, a.reads + a.writes);
  }
  return n;
}

uint32_t NextUse(const Workload& w, uint32_t t, uint32_t k) {
  const auto& uses = w.kernels_of_tensor(t);
  auto it = std::upper_bound(uses.begin(), uses.end(), k);
  return it == uses.end() ? UINT32_MAX : *it;
}

DramLedger::DramLedger(const Workload& w, uint64_t dram_limit_bytes)
    : limit_(EffectiveLimit(dram_limit_bytes)), used_(w.num_kernels(), 0) {}

bool DramLedger::Fits(uint32_t first, uint32_t last, uint64_t bytes) const {
  for (uint32_t k = first; k <= last; ++k)
    if (used_[k] > limit_ || bytes > limit_ - used_[k]) return false;
  return true;
}

void DramLedger::Add(uint32_t first, uint32_t last, uint64_t bytes) {
  for (uint32_t k = first; k <= last; ++k) used_[k] += bytes;
}

void DramLedger::Remove(uint32_t first, uint32_t last, uint64_t bytes) {
  for (uint32_t k = first; k <= last; ++k) used_[k] -= bytes;
}

PlacementPlan TimelineToPlan(const Workload& w, const TierTimeline& timeline, MigrationMode mode,
                             uint64_t dram_limit_bytes) {
  if (timeline.size() != w.num_tensors()) throw std::invalid_argument("TimelineToPlan: one row per tensor");
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kSlow, dram_limit_bytes);
  plan.mode = mode;
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    const Tensor& x = w.tensors[t];
    const auto& tl = timeline[t];
    if (tl.size() != x.free_kernel - x.alloc_kernel + 1)
      throw std::invalid_argument("TimelineToPlan: timeline of tensor " + std::to_string(t) +
                                  " does not cover its lifetime");
    plan.initial_tiers[t] = tl[0];
    std::vector<Migration> moves;
    const int32_t a = static_cast<int32_t>(x.alloc_kernel);
    for (int32_t k = a + 1; k <= static_cast<int32_t>(x.free_kernel); ++k) {
      const Tier to = tl[k - a];
      if (to == tl[k - 1 - a]) continue;
      int32_t boundary = k - 1;  // sync, or async where kernel k writes t (the copy blocks)
      if (mode == MigrationMode::kAsync && !KernelWrites(w, k, t) && k - 2 >= a) {
        // Overlap kernel k-1 (exact), or when k-1 writes t the copy issued
        // after k-2 blocks and the tensor arrives one kernel early: fine for
        // a copy into DRAM, never for one out of it (k-1 would write slow).
        if (!KernelWrites(w, k - 1, t) || to == Tier::kDram) boundary = k - 2;
      }
      // Two opposite changes that land on the same boundary cancel out.
      if (!moves.empty() && moves.back().after_kernel >= boundary) {
        moves.pop_back();
        continue;
      }
      moves.push_back({boundary, t, to});
    }
    plan.migrations.insert(plan.migrations.end(), moves.begin(), moves.end());
  }
  plan.Normalize();
  return plan;
}

PlanReplay ReplayPlan(const Workload& w, const PlacementPlan& plan) {
  const size_t K = w.num_kernels();
  PlanReplay r;
  r.tier.resize(K);
  r.copying_in.resize(K);
  r.dram_bytes.assign(K, 0);
  std::vector<Tier> tier = plan.initial_tiers;
  std::vector<Migration> in_flight;
  size_t next = 0;
  for (size_t k = 0; k < K; ++k) {
    in_flight.clear();
    for (; next < plan.migrations.size() && plan.migrations[next].after_kernel <= static_cast<int32_t>(k) - 1;
         ++next) {
      const Migration& m = plan.migrations[next];
      if (tier[m.tensor] == m.to) continue;
      if (plan.mode == MigrationMode::kSync || KernelWrites(w, k, m.tensor))
        tier[m.tensor] = m.to;
      else
        in_flight.push_back(m);
    }
    r.tier[k] = tier;
    for (uint32_t t : w.live_at(k))
      if (tier[t] == Tier::kDram) r.dram_bytes[k] += w.tensors[t].size_bytes;
    for (const Migration& m : in_flight)
      if (m.to == Tier::kDram) {
        r.copying_in[k].push_back(m.tensor);
        r.dram_bytes[k] += w.tensors[m.tensor].size_bytes;
      }
    for (const Migration& m : in_flight) tier[m.tensor] = m.to;
  }
  return r;
}

namespace {

// One way to give back DRAM at a kernel, and what it costs: the slow
// penalty lost per byte freed.
struct Victim {
  double value;
  uint32_t tensor;
  bool is_copy;            // delay an async copy into DRAM in flight here
  int32_t first, last;     // otherwise: the DRAM stay to drop
};

void DelayCopy(const Workload& w, PlacementPlan* plan, uint32_t t, int32_t k) {
  // The copy issued after k-1 lands one kernel later; if that collides with
  // the copy back out after k, the stay disappears altogether.
  auto& ms = plan->migrations;
  auto copy = std::find_if(ms.begin(), ms.end(), [&](const Migration& m) {
    return m.tensor == t && m.after_kernel == k - 1 && m.to == Tier::kDram;
  });
  if (copy == ms.end()) throw std::logic_error("RepairToLimit: lost an in-flight copy");
  auto clash =
      std::find_if(ms.begin(), ms.end(), [&](const Migration& m) { return m.tensor == t && m.after_kernel == k; });
  const bool can_delay = k <= static_cast<int32_t>(w.tensors[t].free_kernel) - 1;
  if (clash != ms.end()) {
    size_t ci = clash - ms.begin(), pi = copy - ms.begin();
    ms.erase(ms.begin() + std::max(ci, pi));
    ms.erase(ms.begin() + std::min(ci, pi));
  } else if (!can_delay) {
    ms.erase(copy);
  } else {
    copy->after_kernel = k;
  }
}

void DropStay(PlacementPlan* plan, uint32_t t, int32_t first, int32_t last) {
  // Remove what started the stay (a copy in, or the initial tier) and the
  // copy out that ends it; the tensor then stays slow throughout.
  auto& ms = plan->migrations;
  int64_t start = -1;
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i].tensor == t && ms[i].to == Tier::kDram && ms[i].after_kernel <= first - 1) start = static_cast<int64_t>(i);
  int64_t end = -1;
  for (size_t i = start < 0 ? 0 : start + 1; i < ms.size(); ++i)
    if (ms[i].tensor == t) {
      if (ms[i].to == Tier::kSlow && ms[i].after_kernel >= last - 1) end = static_cast<int64_t>(i);
      break;
    }
  if (end >= 0) ms.erase(ms.begin() + end);
  if (start >= 0)
    ms.erase(ms.begin() + start);
  else
    plan->initial_tiers[t] = Tier::kSlow;
}

}  // namespace

int RepairToLimit(const Workload& w, PlacementPlan* plan) {
  if (plan->dram_limit_bytes == 0) return 0;
  const uint64_t limit = plan->dram_limit_bytes;
  int changes = 0;
  for (;;) {
    const PlanReplay r = ReplayPlan(w, *plan);
    int32_t k = -1;
    for (size_t i = 0; i < w.num_kernels(); ++i)
      if (r.dram_bytes[i] > limit) {
        k = static_cast<int32_t>(i);
        break;
      }
    if (k < 0) return changes;

    std::vector<Victim> victims;
    for (uint32_t t : r.copying_in[k]) {
      double pen = k + 1 < static_cast<int32_t>(w.num_kernels()) ? PenaltyAt(w, k + 1, t) : 0.0;
      victims.push_back({pen / static_cast<double>(w.tensors[t].size_bytes), t, true, 0, 0});
    }
    for (uint32_t t : w.live_at(k)) {
      if (r.tier[k][t] != Tier::kDram) continue;
      const Tensor& x = w.tensors[t];
      if (x.pinned_dram) continue;  // it stays in DRAM whatever the plan says
      int32_t first = k, last = k;
      while (first > static_cast<int32_t>(x.alloc_kernel) && r.tier[first - 1][t] == Tier::kDram) --first;
      while (last < static_cast<int32_t>(x.free_kernel) && r.tier[last + 1][t] == Tier::kDram) ++last;
      double penalty = 0;
      for (int32_t j = first; j <= last; ++j) penalty += PenaltyAt(w, j, t);
      victims.push_back({penalty / static_cast<double>(x.size_bytes), t, false, first, last});
    }
    std::stable_sort(victims.begin(), victims.end(),
                     [](const Victim& a, const Victim& b) { return a.value < b.value; });
    // Each victim frees its bytes at k and only lowers DRAM elsewhere, and
    // victims are distinct tensors, so several can go on one replay.
    uint64_t dram = r.dram_bytes[k];
    for (const Victim& v : victims) {
      if (dram <= limit) break;
      if (v.is_copy)
        DelayCopy(w, plan, v.tensor, k);
      else
        DropStay(plan, v.tensor, v.first, v.last);
      dram -= w.tensors[v.tensor].size_bytes;
      ++changes;
    }
    if (dram > limit) throw std::logic_error("RepairToLimit: over the limit with nothing left in DRAM");
    plan->Normalize();
  }
}

}  // namespace tensortier
