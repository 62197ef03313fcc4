#include "envs/plannable_workload.h"

#include <stdexcept>
#include <string>

namespace tensortier {

PlannableWorkload::PlannableWorkload(const Workload& w) : original_(w) {
  if (!w.finalized()) throw std::logic_error("PlannableWorkload: workload not finalized");
  if (w.pinned_dram_bytes() == 0) return;
  std::vector<uint32_t> view_index(w.num_tensors(), UINT32_MAX);
  Workload view = w;
  view.tensors.clear();
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    if (w.tensors[t].pinned_dram) continue;
    view_index[t] = static_cast<uint32_t>(view.tensors.size());
    original_index_.push_back(t);
    view.tensors.push_back(w.tensors[t]);
  }
  // Pinned tensors are never accessed (Finalize checks it), so every access
  // names a tensor the view keeps.
  for (Access& a : view.accesses) a.tensor = view_index[a.tensor];
  view.Finalize();
  view_ = std::move(view);
}

PlacementPlan PlannableWorkload::ToOriginal(const PlacementPlan& plan) const {
  if (!view_) return plan;
  if (plan.initial_tiers.size() != view_->num_tensors())
    throw std::logic_error("PlannableWorkload: the plan places " + std::to_string(plan.initial_tiers.size()) +
                           " tensors, the view has " + std::to_string(view_->num_tensors()));
  PlacementPlan out = plan;
  out.initial_tiers.assign(original_.num_tensors(), Tier::kDram);
  for (size_t v = 0; v < original_index_.size(); ++v) out.initial_tiers[original_index_[v]] = plan.initial_tiers[v];
  for (Migration& m : out.migrations) {
    if (m.tensor >= original_index_.size())
      throw std::logic_error("PlannableWorkload: a migration names tensor " + std::to_string(m.tensor) +
                             " of " + std::to_string(original_index_.size()));
    m.tensor = original_index_[m.tensor];
  }
  out.Normalize();
  return out;
}

}  // namespace tensortier
