#include "envs/placement_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/hash.h"

namespace tensortier {

const char* MigrationModeName(MigrationMode mode) {
  return mode == MigrationMode::kSync ? "sync" : "async";
}

PlacementPlan PlacementPlan::Uniform(const Workload& w, Tier tier, uint64_t dram_limit_bytes) {
  PlacementPlan plan;
  plan.workload_signature = w.Signature();
  plan.dram_limit_bytes = dram_limit_bytes;
  plan.initial_tiers.assign(w.num_tensors(), tier);
  plan.produced_by = tier == Tier::kDram ? "all-dram" : "all-slow";
  return plan;
}

void PlacementPlan::Normalize() {
  std::stable_sort(migrations.begin(), migrations.end(), [](const Migration& a, const Migration& b) {
    return a.after_kernel != b.after_kernel ? a.after_kernel < b.after_kernel : a.tensor < b.tensor;
  });
  // Replay tiers and keep only migrations that change something; a later
  // migration of the same tensor at the same boundary wins.
  std::vector<Tier> tier = initial_tiers;
  std::vector<Migration> kept;
  for (size_t i = 0; i < migrations.size(); ++i) {
    const Migration& m = migrations[i];
    if (i + 1 < migrations.size() && migrations[i + 1].after_kernel == m.after_kernel &&
        migrations[i + 1].tensor == m.tensor)
      continue;
    if (m.tensor < tier.size() && tier[m.tensor] == m.to) continue;
    if (m.tensor < tier.size()) tier[m.tensor] = m.to;
    kept.push_back(m);
  }
  migrations = std::move(kept);
}

uint64_t PlannableDramBytes(const Workload& w, uint64_t dram_limit_bytes) {
  const uint64_t pinned = w.pinned_dram_bytes();
  if (dram_limit_bytes == 0 || pinned == 0) return dram_limit_bytes;
  if (dram_limit_bytes <= pinned)
    throw std::invalid_argument("a DRAM limit of " + std::to_string(dram_limit_bytes) +
                                " bytes cannot be met: the framework holds " + std::to_string(pinned) +
                                " bytes in DRAM that no plan can move (the workload's pinned tensors)");
  return dram_limit_bytes - pinned;
}

std::vector<uint64_t> PlannableLiveBytes(const Workload& w) {
  const size_t K = w.num_kernels();
  std::vector<uint64_t> live(K);
  for (size_t k = 0; k < K; ++k) live[k] = w.live_bytes_at(k);
  if (w.pinned_dram_bytes() == 0) return live;
  for (const Tensor& x : w.tensors)
    if (x.pinned_dram)
      for (size_t k = x.alloc_kernel; k <= x.free_kernel && k < K; ++k) live[k] -= x.size_bytes;
  return live;
}

size_t PlacementPlan::KeepPinnedInDram(const Workload& w) {
  if (w.pinned_dram_bytes() == 0) return 0;
  size_t changed = 0;
  for (size_t t = 0; t < initial_tiers.size() && t < w.num_tensors(); ++t)
    if (w.tensors[t].pinned_dram && initial_tiers[t] != Tier::kDram) {
      initial_tiers[t] = Tier::kDram;
      ++changed;
    }
  const size_t before = migrations.size();
  migrations.erase(std::remove_if(migrations.begin(), migrations.end(),
                                  [&](const Migration& m) {
                                    return m.tensor < w.num_tensors() && w.tensors[m.tensor].pinned_dram;
                                  }),
                   migrations.end());
  return changed + before - migrations.size();
}

void PlacementPlan::Validate(const Workload& w) const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("invalid plan: " + what); };
  if (initial_tiers.size() != w.num_tensors())
    fail("it places " + std::to_string(initial_tiers.size()) + " tensors, the workload has " +
         std::to_string(w.num_tensors()));
  if (workload_signature != 0 && workload_signature != w.Signature())
    fail("it was made for another workload (signature mismatch)");
  int32_t prev = -1;
  for (const Migration& m : migrations) {
    if (m.tensor >= w.num_tensors()) fail("a migration names tensor " + std::to_string(m.tensor));
    if (m.after_kernel < -1 || m.after_kernel >= static_cast<int32_t>(w.num_kernels()))
      fail("a migration happens after kernel " + std::to_string(m.after_kernel));
    if (m.after_kernel < prev) fail("migrations are not ordered by kernel");
    prev = m.after_kernel;
    const Tensor& t = w.tensors[m.tensor];
    // A migration after kernel k moves the tensor for kernel k+1 on, so the
    // tensor must be live at k+1 (and already allocated at k).
    if (m.after_kernel + 1 < static_cast<int32_t>(t.alloc_kernel) + 1 ||
        m.after_kernel + 1 > static_cast<int32_t>(t.free_kernel))
      fail("tensor " + std::to_string(m.tensor) + " migrates after kernel " +
           std::to_string(m.after_kernel) + " outside its lifetime");
  }
}

std::vector<std::vector<Tier>> PlacementPlan::TierTimeline(const Workload& w) const {
  std::vector<std::vector<Tier>> timeline(w.num_kernels());
  std::vector<Tier> tier = initial_tiers;
  size_t next = 0;
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    while (next < migrations.size() && migrations[next].after_kernel < static_cast<int32_t>(k)) {
      tier[migrations[next].tensor] = migrations[next].to;
      ++next;
    }
    timeline[k] = tier;
  }
  return timeline;
}

uint64_t PlacementPlan::Hash() const {
  Fnv1a h;
  h.Value(workload_signature).Value(dram_limit_bytes).Value(static_cast<uint8_t>(mode));
  h.Value<uint64_t>(initial_tiers.size());
  for (Tier t : initial_tiers) h.Value(static_cast<uint8_t>(t));
  h.Value<uint64_t>(migrations.size());
  for (const Migration& m : migrations) h.Value(m.after_kernel).Value(m.tensor).Value(static_cast<uint8_t>(m.to));
  return h.digest();
}

bool PlacementPlan::operator==(const PlacementPlan& o) const {
  return workload_signature == o.workload_signature && dram_limit_bytes == o.dram_limit_bytes &&
         mode == o.mode && initial_tiers == o.initial_tiers && migrations == o.migrations &&
         produced_by == o.produced_by;
}

}  // namespace tensortier
