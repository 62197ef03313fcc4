// The workload a policy plans: the one it was given without its pinned_dram
// tensors. They hold DRAM no plan can give to others and no kernel touches
// them, so a policy that saw them would charge their bytes against the
// limit that PlannableDramBytes has already taken them off (twice in all),
// or try to move them. Policies plan the view under PlannableDramBytes, and
// ToOriginal puts the plan back on the workload's tensors, pinned in DRAM.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

class PlannableWorkload {
 public:
  // `w` must be finalized and outlive this object.
  explicit PlannableWorkload(const Workload& w);

  // The workload without its pinned tensors (`w` itself when it has none).
  // Finalized; the other tensors keep their order.
  const Workload& workload() const { return view_ ? *view_ : original_; }
  bool has_pinned() const { return view_.has_value(); }

  // A plan of workload() as a plan of the original: the same tiers and
  // migrations on the same tensors, pinned tensors in DRAM. The limit,
  // mode and provenance are copied as they are.
  PlacementPlan ToOriginal(const PlacementPlan& plan) const;

 private:
  const Workload& original_;
  std::optional<Workload> view_;
  std::vector<uint32_t> original_index_;  // view's tensor -> original tensor
};

}  // namespace tensortier
