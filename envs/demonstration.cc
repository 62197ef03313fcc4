#include "envs/demonstration.h"

#include <algorithm>
#include <stdexcept>

#include "envs/cost_model.h"

namespace tensortier {

namespace {

// A DRAM choice of the rollout that holds room over a gap (kept from its
// kernel to holds_until with no use between), and what evicting it for the
// gap would cost: the copy out, and at its next use the cheaper of the copy
// back and the slow-tier penalty.
struct HeldGap {
  size_t transition = 0;  // in Demonstration::transitions
  uint32_t tensor = 0;
  size_t holds_until = 0;
  uint64_t bytes = 0;
  double evict_ns = 0;
  bool labelled_slow = false;  // by the plan, or by an earlier room label
  bool by_plan = false;        // labelled slow by the plan itself
  bool marked = false;         // in Demonstration::crowding already
};

// RolloutLabels::price_room: the gaps the rollout keeps in DRAM, and the
// labels that charge them for the DRAM requests they crowd out.
class RoomPricer {
 public:
  explicit RoomPricer(const Workload& w) : w_(w) {}

  // After a step that kept `tensor` in DRAM from `kernel` through a gap
  // (holds_until > kernel + 1); `label` is the step's label.
  void Held(size_t transition, uint32_t tensor, size_t kernel, size_t holds_until, int label) {
    if (holds_until <= kernel + 1) return;
    const double next_use = PenaltyAtOrAfter(tensor, holds_until);
    if (next_use < 0) return;  // no use left: the last gap's rule labels it
    const uint64_t bytes = w_.tensors[tensor].size_bytes;
    HeldGap g;
    g.transition = transition;
    g.tensor = tensor;
    g.holds_until = holds_until;
    g.bytes = bytes;
    g.evict_ns = CopyTimeNs(w_, bytes, Tier::kSlow) + std::min(next_use, CopyTimeNs(w_, bytes, Tier::kDram));
    g.labelled_slow = g.by_plan = label != 0;
    held_.push_back(g);
  }

  // A DRAM label at `kernel` for `tensor` that the MDP clips, `shortfall`
  // bytes short (PlacementEnv::DramShortfallBytes), the tensor in the slow
  // tier with contents when `copy_in`. Labels slow the cheapest held gaps
  // over the kernel that free the shortfall when they cost less than the
  // request saves; returns how many labels it changed.
  // With `crowding`, the held gaps the plan labels slow (the policy's
  // mistakes that hold this request's room) are appended to it.
  uint32_t Clipped(std::vector<Transition>& transitions, uint32_t tensor, size_t kernel, uint64_t shortfall,
                   bool copy_in, bool relabel, std::vector<size_t>* crowding) {
    // Gaps that ended no longer hold room (kernels only grow in an episode).
    held_.erase(std::remove_if(held_.begin(), held_.end(), [&](const HeldGap& g) { return g.holds_until <= kernel; }),
                held_.end());
    if (crowding)
      for (HeldGap& g : held_)
        if (g.by_plan && !g.marked && g.tensor != tensor) {
          g.marked = true;
          crowding->push_back(g.transition);
        }
    if (!relabel) return 0;
    double saves = PenaltyAtOrAfter(tensor, kernel);
    if (saves <= 0) return 0;
    if (copy_in) saves -= CopyTimeNs(w_, w_.tensors[tensor].size_bytes, Tier::kDram);
    uint64_t freed = 0;
    std::vector<HeldGap*> candidates;
    for (HeldGap& g : held_) {
      if (g.tensor == tensor) continue;
      if (g.labelled_slow) freed += g.bytes;
      else candidates.push_back(&g);
    }
    if (freed >= shortfall) return 0;  // the labels make the room already
    std::sort(candidates.begin(), candidates.end(), [](const HeldGap* a, const HeldGap* b) {
      const double pa = a->evict_ns / static_cast<double>(a->bytes), pb = b->evict_ns / static_cast<double>(b->bytes);
      return pa != pb ? pa < pb : a->transition < b->transition;
    });
    double cost = 0;
    size_t taken = 0;
    while (taken < candidates.size() && freed < shortfall && cost < saves) {
      freed += candidates[taken]->bytes;
      cost += candidates[taken]->evict_ns;
      ++taken;
    }
    if (freed < shortfall || cost >= saves) return 0;
    for (size_t i = 0; i < taken; ++i) {
      candidates[i]->labelled_slow = true;
      Transition& t = transitions[candidates[i]->transition];
      // The policy kept it; the label's outcome was not observed.
      t.action = 1;
      t.done = true;
      t.next_observation.clear();
    }
    return static_cast<uint32_t>(taken);
  }

 private:
  // The slow-tier penalty of t's first use at or after kernel k; -1 with none.
  double PenaltyAtOrAfter(uint32_t t, size_t k) const {
    const std::vector<uint32_t>& kernels = w_.kernels_of_tensor(t);
    auto it = std::lower_bound(kernels.begin(), kernels.end(), static_cast<uint32_t>(k));
    if (it == kernels.end()) return -1;
    const Access* a = w_.FindAccess(*it, t);
    return a ? a->slow_penalty_ns : -1;
  }

  const Workload& w_;
  std::vector<HeldGap> held_;
};

// Plays an episode of `env` where `act` chooses each action and every state
// is labelled with `plan`'s tier for its tensor at its kernel.
Demonstration Play(PlacementEnv& env, const PlacementPlan& plan,
                   const std::function<int(const Observation&)>& act, const RolloutLabels& options) {
  const PlanLabels labels(env.workload(), plan);
  Demonstration demo;
  RoomPricer room(env.workload());
  Observation obs = env.Reset();
  while (!env.done()) {
    const uint32_t tensor = env.current_tensor();
    const size_t kernel = env.current_kernel(), holds_until = env.decision_holds_until();
    int label = labels.At(tensor, kernel, holds_until);
    // A persistent tensor's last gap (untouched now, no access left): the
    // plan ends it where the plan starts it, so where a rollout started it
    // elsewhere the plan's tier would teach the copy back after the last
    // kernel; its own starting tier is the plan's rule (with `act` absent
    // the two agree for every plan that ends each tensor where it starts).
    // (kObsStartTier is set only for a persistent tensor with no access left.)
    if (act && obs[kObsStartTier] != 0.5f && obs[kObsAccessedNow] == 0.0f)
      label = obs[kObsStartTier] == 0.0f ? 0 : 1;
    const bool spills = env.DramRequestWouldSpill();
    if (label == 0 && spills) {
      ++demo.clipped;
      if (options.price_room || options.mark_crowding)
        demo.room_relabelled += room.Clipped(demo.transitions, tensor, kernel, env.DramShortfallBytes(),
                                             obs[kObsTier] == 1.0f, options.price_room,
                                             options.mark_crowding ? &demo.crowding : nullptr);
    }
    const int action = act ? act(obs) : label;
    StepResult r = env.Step(action);
    if (action == label)
      demo.transitions.push_back(TransitionOf(obs, label, r));
    else
      demo.transitions.push_back({std::vector<float>(obs.begin(), obs.end()), static_cast<uint8_t>(label),
                                  static_cast<float>(r.reward), {}, true});
    if ((options.price_room || options.mark_crowding) && action == 0 && !spills)
      room.Held(demo.transitions.size() - 1, tensor, kernel, holds_until, label);
    obs = r.observation;
  }
  std::sort(demo.crowding.begin(), demo.crowding.end());
  demo.summary = env.summary();
  return demo;
}

}  // namespace

PlanLabels::PlanLabels(const Workload& w, const PlacementPlan& plan) : initial_(plan.initial_tiers) {
  plan.Validate(w);
  migrations_.resize(w.num_tensors());
  for (const Migration& m : plan.migrations) migrations_[m.tensor].push_back(m);
  for (std::vector<Migration>& ms : migrations_)
    std::stable_sort(ms.begin(), ms.end(), [](const Migration& a, const Migration& b) { return a.after_kernel < b.after_kernel; });
}

int PlanLabels::At(uint32_t tensor, size_t kernel, size_t holds_until) const {
  const std::vector<Migration>& ms = migrations_.at(tensor);
  const int32_t k = static_cast<int32_t>(kernel);
  // A migration after kernel j takes effect at kernel j + 1.
  auto next = std::lower_bound(ms.begin(), ms.end(), k, [](const Migration& m, int32_t x) { return m.after_kernel < x; });
  const Tier now = next == ms.begin() ? initial_[tensor] : std::prev(next)->to;
  if (now != Tier::kDram) return 1;
  for (auto it = next; it != ms.end() && static_cast<size_t>(it->after_kernel) + 1 < holds_until; ++it)
    if (it->to == Tier::kSlow) return 1;
  return 0;
}

Demonstration DemonstratePlan(PlacementEnv& env, const PlacementPlan& plan) { return Play(env, plan, {}, {}); }

Demonstration LabelRollout(PlacementEnv& env, const PlacementPlan& plan,
                           const std::function<int(const Observation&)>& act, const RolloutLabels& labels) {
  if (!act) throw std::invalid_argument("LabelRollout: no policy to drive the episode");
  return Play(env, plan, act, labels);
}

}  // namespace tensortier
