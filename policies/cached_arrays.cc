#include "policies/cached_arrays.h"

#include <algorithm>
#include <limits>

#include "common/named_enum.h"
#include "policies/plan_tools.h"

namespace tensortier {

const char* CachedArraysVariantName(CachedArraysVariant v) {
  static constexpr EnumName<CachedArraysVariant> kNames[] = {
      {CachedArraysVariant::kL, "CA:L"}, {CachedArraysVariant::kLM, "CA:LM"}, {CachedArraysVariant::kLMP, "CA:LMP"}};
  return NameOfEnumOr(kNames, v, "CA:?");
}

std::vector<CaKernelHints> DeriveCachedArraysHints(const Workload& w, bool retire) {
  std::vector<CaKernelHints> hints(w.num_kernels());
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    for (uint32_t i : w.accesses_of_kernel(k)) {
      const Access& a = w.accesses[i];
      hints[k].before.push_back({a.tensor, a.writes > 0 ? CaHintKind::kWillWrite : CaHintKind::kWillRead});
      const Tensor& x = w.tensors[a.tensor];
      const uint32_t next = NextUse(w, a.tensor, static_cast<uint32_t>(k));
      // Parameters are used again next iteration; anything else without a
      // next use is dead.
      const bool used_again = next != UINT32_MAX || x.persistent;
      if (used_again && next != k + 1) hints[k].after.push_back({a.tensor, CaHintKind::kArchive});
    }
    if (retire)
      for (uint32_t t : w.live_at(k))
        if (!w.tensors[t].persistent && w.tensors[t].free_kernel == k) hints[k].after.push_back({t, CaHintKind::kRetire});
  }
  return hints;
}

namespace {

// A dead object nobody retired: it keeps its DRAM until evicted.
struct Ghost {
  uint64_t size_bytes;
  int64_t last_used;
  bool archived;
};

class DataManagerSim {
 public:
  DataManagerSim(const Workload& w, CachedArraysVariant v, uint64_t dram_limit_bytes)
      : w_(w),
        variant_(v),
        limit_(EffectiveLimit(dram_limit_bytes)),
        hints_(DeriveCachedArraysHints(w, v != CachedArraysVariant::kL)),
        tier_(w.num_tensors(), Tier::kSlow),
        last_used_(w.num_tensors(), std::numeric_limits<int64_t>::min()),
        archived_(w.num_tensors(), false),
        in_use_(w.num_tensors(), false) {}

  // One iteration. The second pass starts from the state the first one
  // leaves (parameters where they ended, lingering dead objects), which is
  // what every iteration after the first sees.
  TierTimeline Iterate(bool warm) {
    const size_t K = w_.num_kernels();
    if (warm) {
      for (uint32_t t = 0; t < w_.num_tensors(); ++t) {
        if (!w_.tensors[t].persistent) continue;
        if (last_used_[t] != std::numeric_limits<int64_t>::min()) last_used_[t] -= static_cast<int64_t>(K);
      }
    }
    TierTimeline timeline(w_.num_tensors());
    for (uint32_t t = 0; t < w_.num_tensors(); ++t)
      timeline[t].assign(w_.tensors[t].free_kernel - w_.tensors[t].alloc_kernel + 1, Tier::kSlow);
    for (size_t k = 0; k < K; ++k) {
      for (uint32_t i : w_.accesses_of_kernel(k)) in_use_[w_.accesses[i].tensor] = true;
      // New objects: allocated in DRAM when room can be made (L).
      for (uint32_t t : w_.allocated_at(k)) {
        if (warm && w_.tensors[t].persistent) continue;  // survived the previous iteration
        tier_[t] = MakeRoom(w_.tensors[t].size_bytes) ? Tier::kDram : Tier::kSlow;
        if (tier_[t] == Tier::kDram) used_ += w_.tensors[t].size_bytes;
        else ++stats_allocated_slow;
        last_used_[t] = static_cast<int64_t>(k);
        archived_[t] = false;
      }
      // will_write moves a slow object in (NVRAM writes are the slow part);
      // will_read does only under P.
      for (const CaHint& h : hints_[k].before) {
        archived_[h.tensor] = false;
        const bool move = h.kind == CaHintKind::kWillWrite || variant_ == CachedArraysVariant::kLMP;
        if (!move || tier_[h.tensor] == Tier::kDram || w_.tensors[h.tensor].alloc_kernel == k) continue;
        if (!MakeRoom(w_.tensors[h.tensor].size_bytes)) continue;
        tier_[h.tensor] = Tier::kDram;
        used_ += w_.tensors[h.tensor].size_bytes;
        ++stats_prefetches;
      }
      for (uint32_t t : w_.live_at(k)) timeline[t][k - w_.tensors[t].alloc_kernel] = tier_[t];
      for (uint32_t i : w_.accesses_of_kernel(k)) {
        in_use_[w_.accesses[i].tensor] = false;
        last_used_[w_.accesses[i].tensor] = static_cast<int64_t>(k);
      }
      for (const CaHint& h : hints_[k].after) {
        if (h.kind == CaHintKind::kArchive) archived_[h.tensor] = true;
        if (h.kind == CaHintKind::kRetire) Release(h.tensor);
      }
      // Without retire the framework frees the object, but its DRAM region
      // lingers (garbage collection runs only under pressure).
      for (uint32_t t : w_.live_at(k)) {
        if (w_.tensors[t].persistent || w_.tensors[t].free_kernel != k || tier_[t] != Tier::kDram) continue;
        if (variant_ == CachedArraysVariant::kL) ghosts_.push_back({w_.tensors[t].size_bytes, last_used_[t], archived_[t]});
        else used_ -= w_.tensors[t].size_bytes;
        tier_[t] = Tier::kSlow;
      }
    }
    // Between iterations the heaps are defragmented and the garbage
    // collector frees whatever died unretired.
    for (const Ghost& g : ghosts_) used_ -= g.size_bytes;
    ghosts_.clear();
    return timeline;
  }

  int stats_evictions = 0;
  int stats_prefetches = 0;
  int stats_allocated_slow = 0;
  uint64_t stats_lingering_evicted_bytes = 0;  // writebacks of dead data (not in the plan)

 private:
  void Release(uint32_t t) {
    if (tier_[t] != Tier::kDram) return;
    used_ -= w_.tensors[t].size_bytes;
    tier_[t] = Tier::kSlow;
  }

  // Evicts (archived first, then least recently used) until `bytes` fit;
  // objects the current kernel uses are pinned. False if they cannot fit.
  bool MakeRoom(uint64_t bytes) {
    if (bytes > limit_) return false;
    while (limit_ - used_ < bytes) {
      // Candidates: live objects in DRAM not in use, and lingering dead ones.
      int64_t best_tensor = -1, best_ghost = -1;
      auto key = [](bool archived, int64_t last) { return std::make_pair(archived ? 0 : 1, last); };
      std::pair<int, int64_t> best_key{2, 0};
      for (uint32_t t = 0; t < w_.num_tensors(); ++t) {
        if (tier_[t] != Tier::kDram || in_use_[t]) continue;
        auto kk = key(archived_[t], last_used_[t]);
        if (kk < best_key) {
          best_key = kk;
          best_tensor = t;
        }
      }
      for (size_t g = 0; g < ghosts_.size(); ++g) {
        auto kk = key(ghosts_[g].archived, ghosts_[g].last_used);
        if (kk < best_key) {
          best_key = kk;
          best_tensor = -1;
          best_ghost = static_cast<int64_t>(g);
        }
      }
      if (best_ghost >= 0) {
        used_ -= ghosts_[best_ghost].size_bytes;
        stats_lingering_evicted_bytes += ghosts_[best_ghost].size_bytes;
        ghosts_.erase(ghosts_.begin() + best_ghost);
      } else if (best_tensor >= 0) {
        Release(static_cast<uint32_t>(best_tensor));
        ++stats_evictions;
      } else {
        return false;
      }
    }
    return true;
  }

  const Workload& w_;
  CachedArraysVariant variant_;
  uint64_t limit_;
  std::vector<CaKernelHints> hints_;
  std::vector<Tier> tier_;
  std::vector<int64_t> last_used_;
  std::vector<bool> archived_;
  std::vector<bool> in_use_;
  std::vector<Ghost> ghosts_;
  uint64_t used_ = 0;
};

}  // namespace

std::string CachedArraysPolicy::name() const {
  static constexpr EnumName<CachedArraysVariant> kNames[] = {
      {CachedArraysVariant::kL, "ca-l"}, {CachedArraysVariant::kLM, "ca-lm"}, {CachedArraysVariant::kLMP, "ca-lmp"}};
  return NameOfEnumOr(kNames, variant_, "ca");
}

PolicyResult CachedArraysPolicy::DecideImpl(const Workload& w, const PolicyContext& ctx) const {
  DataManagerSim sim(w, variant_, ctx.dram_limit_bytes);
  sim.Iterate(false);
  // Counters of the steady-state iteration only.
  sim.stats_evictions = sim.stats_prefetches = sim.stats_allocated_slow = 0;
  sim.stats_lingering_evicted_bytes = 0;
  const TierTimeline timeline = sim.Iterate(true);
  PolicyResult result;
  result.plan = TimelineToPlan(w, timeline, ctx.mode, ctx.dram_limit_bytes);
  result.stats["repairs"] = RepairToLimit(w, &result.plan);
  result.stats["evictions"] = sim.stats_evictions;
  result.stats["moves_in"] = sim.stats_prefetches;
  result.stats["allocated_slow"] = sim.stats_allocated_slow;
  result.stats["lingering_evicted_bytes"] = static_cast<double>(sim.stats_lingering_evicted_bytes);
  return result;
}

}  // namespace tensortier
