#include "envs/demonstration.h"

#include <algorithm>
#include <stdexcept>

namespace tensortier {

namespace {

// Plays an episode of `env` where `act` chooses each action and every state
// is labelled with `plan`'s tier for its tensor at its kernel.
Demonstration Play(PlacementEnv& env, const PlacementPlan& plan,
                   const std::function<int(const Observation&)>& act) {
  const PlanLabels labels(env.workload(), plan);
  Demonstration demo;
  Observation obs = env.Reset();
  while (!env.done()) {
    int label = labels.At(env.current_tensor(), env.current_kernel(), env.decision_holds_until());
    // A persistent tensor's last gap (untouched now, no access left): the
    // plan ends it where the plan starts it, so where a rollout started it
    // elsewhere the plan's tier would teach the copy back after the last
    // kernel; its own starting tier is the plan's rule (with `act` absent
    // the two agree for every plan that ends each tensor where it starts).
    // (kObsStartTier is set only for a persistent tensor with no access left.)
    if (act && obs[kObsStartTier] != 0.5f && obs[kObsAccessedNow] == 0.0f)
      label = obs[kObsStartTier] == 0.0f ? 0 : 1;
    if (label == 0 && env.DramRequestWouldSpill()) ++demo.clipped;
    const int action = act ? act(obs) : label;
    StepResult r = env.Step(action);
    if (action == label)
      demo.transitions.push_back(TransitionOf(obs, label, r));
    else
      demo.transitions.push_back({std::vector<float>(obs.begin(), obs.end()), static_cast<uint8_t>(label),
                                  static_cast<float>(r.reward), {}, true});
    obs = r.observation;
  }
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

Demonstration DemonstratePlan(PlacementEnv& env, const PlacementPlan& plan) { return Play(env, plan, {}); }

Demonstration LabelRollout(PlacementEnv& env, const PlacementPlan& plan,
                           const std::function<int(const Observation&)>& act) {
  if (!act) throw std::invalid_argument("LabelRollout: no policy to drive the episode");
  return Play(env, plan, act);
}

}  // namespace tensortier
