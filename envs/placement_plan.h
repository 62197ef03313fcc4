// Where each tensor lives: its tier when allocated, and the migrations at
// kernel boundaries after that. A plan is a value: it compares, hashes,
// serialises, and is what the cost model scores and a worker executes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/workload.h"

namespace tensortier {

// What "a migration after kernel k" means, for the cost model and for the
// executor alike:
//  - sync: the copy runs between kernel k and kernel k+1 and blocks; kernel
//    k+1 sees the tensor in its new tier.
//  - async: the copy is issued when kernel k ends and runs on a copy thread
//    while kernel k+1 executes; kernel k+1 still uses the source copy, both
//    copies occupy memory during k+1 (DeepTM eq. 7), and the tensor is in
//    its new tier from kernel k+2. Only the part of the copy longer than
//    kernel k+1 is exposed (eq. 5-6). A tensor that kernel k+1 writes cannot
//    be copied under it, so its copy runs synchronously.
enum class MigrationMode : uint8_t {
  kSync = 0,
  kAsync = 1,
};
const char* MigrationModeName(MigrationMode mode);

struct Migration {
  int32_t after_kernel = 0;  // the copy starts when this kernel ends
  uint32_t tensor = 0;
  Tier to = Tier::kDram;
  bool operator==(const Migration& o) const {
    return after_kernel == o.after_kernel && tensor == o.tensor && to == o.to;
  }
};

struct PlacementPlan {
  static constexpr uint16_t kFormatVersion = 1;

  uint64_t workload_signature = 0;
  uint64_t dram_limit_bytes = 0;
  MigrationMode mode = MigrationMode::kSync;
  std::vector<Tier> initial_tiers;     // by tensor index
  std::vector<Migration> migrations;   // ordered by after_kernel, then tensor
  std::string produced_by;

  // A plan with every tensor in `tier` and no migrations.
  static PlacementPlan Uniform(const Workload& w, Tier tier, uint64_t dram_limit_bytes);

  // Sorts migrations and drops ones that do not change a tier. Call after
  // building a plan by hand.
  void Normalize();
  // Puts the workload's pinned_dram tensors in DRAM and drops their
  // migrations: what every executor does with them, said in the plan.
  // Returns how many initial tiers and migrations it changed.
  size_t KeepPinnedInDram(const Workload& w);
  // Throws std::invalid_argument if the plan does not fit the workload.
  void Validate(const Workload& w) const;
  // Tier of every tensor during every kernel, [kernel][tensor]; absent
  // tensors carry their last tier. Used by the executor and tests.
  std::vector<std::vector<Tier>> TierTimeline(const Workload& w) const;

  // FNV-1a over the canonical content (produced_by excluded).
  uint64_t Hash() const;
  bool operator==(const PlacementPlan& o) const;
};

// DRAM a plan may give to the workload's tensors under `dram_limit_bytes`
// (0 = no limit, returned as 0): what the pinned tensors leave. Throws
// std::invalid_argument, saying why, when they leave nothing.
uint64_t PlannableDramBytes(const Workload& w, uint64_t dram_limit_bytes);

// Per kernel, the live bytes a plan places under PlannableDramBytes: the
// workload's live bytes less its pinned tensors' (counted in neither).
std::vector<uint64_t> PlannableLiveBytes(const Workload& w);

}  // namespace tensortier
