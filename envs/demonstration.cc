#include "envs/demonstration.h"

#include <algorithm>
#include <stdexcept>

namespace tensortier {

namespace {

// Plays an episode of `env` where `act` chooses each action and every state
// is labelled with `plan`'s tier for its tensor at its kernel.
Demonstration Play(PlacementEnv& env, const PlacementPlan& plan,
                   const std::function<int(const Observation&)>& act) {
  const Workload& w = env.workload();
  plan.Validate(w);
  Demonstration demo;
  // The plan's tier of each tensor during kernel k: its initial tier, then
  // every migration issued after an earlier kernel (PlacementPlan::TierTimeline,
  // walked along with the episode instead of materialised per kernel).
  std::vector<Tier> tier = plan.initial_tiers;
  size_t next_migration = 0;
  // Each tensor's evictions, by kernel, for decisions that hold for more
  // than one kernel (PlacementEnv::decision_holds_until).
  std::vector<std::vector<int32_t>> evictions(w.num_tensors());
  for (const Migration& m : plan.migrations)
    if (m.to == Tier::kSlow) evictions[m.tensor].push_back(m.after_kernel);
  auto evicted_before = [&](uint32_t t, size_t k, size_t until) {
    const std::vector<int32_t>& e = evictions[t];
    // A migration after kernel j takes effect at kernel j + 1.
    auto it = std::lower_bound(e.begin(), e.end(), static_cast<int32_t>(k));
    return it != e.end() && static_cast<size_t>(*it) + 1 < until;
  };
  Observation obs = env.Reset();
  while (!env.done()) {
    const size_t k = env.current_kernel();
    while (next_migration < plan.migrations.size() &&
           plan.migrations[next_migration].after_kernel < static_cast<int32_t>(k)) {
      tier[plan.migrations[next_migration].tensor] = plan.migrations[next_migration].to;
      ++next_migration;
    }
    const uint32_t t = env.current_tensor();
    int label = tier[t] == Tier::kDram && !evicted_before(t, k, env.decision_holds_until()) ? 0 : 1;
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

Demonstration DemonstratePlan(PlacementEnv& env, const PlacementPlan& plan) { return Play(env, plan, {}); }

Demonstration LabelRollout(PlacementEnv& env, const PlacementPlan& plan,
                           const std::function<int(const Observation&)>& act) {
  if (!act) throw std::invalid_argument("LabelRollout: no policy to drive the episode");
  return Play(env, plan, act);
}

}  // namespace tensortier
