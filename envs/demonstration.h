// A plan made by another policy (an ILP, a heuristic) replayed through the
// placement MDP as if an agent had chosen it: at every decision the action is
// the tier the plan gives the tensor during that kernel. The transitions are
// demonstrations for learning from an expert (DQfD, Hester et al. 2018): the
// agent starts from the incumbent's decisions instead of from random play.
#pragma once

#include <functional>
#include <vector>

#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/transition.h"

namespace tensortier {

// The tier `plan` asks for at a placement decision: the plan's tier for the
// tensor during the decision's kernel, and the slow tier when the plan
// evicts it before the decision stops holding (PlacementEnv::
// decision_holds_until). Any decision, in any order: a replay of the
// plan-time search resumes mid-episode.
class PlanLabels {
 public:
  // The plan must be for `w` (Validate throws otherwise).
  PlanLabels(const Workload& w, const PlacementPlan& plan);
  // 0 DRAM, 1 slow, as the MDP's actions.
  int At(uint32_t tensor, size_t kernel, size_t holds_until) const;

 private:
  std::vector<Tier> initial_;
  std::vector<std::vector<Migration>> migrations_;  // each tensor's, by after_kernel
};

struct Demonstration {
  std::vector<Transition> transitions;
  // The episode the MDP made of the plan. It can differ from `plan` where the
  // MDP cannot express it: the MDP decides only at bottleneck kernels and
  // clips a DRAM choice that does not fit, so compare summary.cost with the
  // plan's own score to see how much of the expert the demonstration keeps.
  EpisodeSummary summary;
  // Decisions where the plan asked for DRAM and the MDP clipped it to the slow tier.
  uint32_t clipped = 0;
  // Labels RolloutLabels::price_room turned from the plan's DRAM to slow.
  uint32_t room_relabelled = 0;
  // RolloutLabels::mark_crowding: transitions where the policy kept a tensor
  // in DRAM through a gap, the plan's label says slow, and the room it held
  // crowded out a DRAM label the MDP clipped (each index once, ascending).
  std::vector<size_t> crowding;
};

// How LabelRollout labels the states a policy visits.
struct RolloutLabels {
  // The plan's tier for a tensor is the right label in the plan's own
  // states; in a rollout's, the room the plan gave a tensor may be held by
  // tensors the policy kept. With this on, a DRAM label the MDP would clip
  // (the policy's own mistakes took the room) charges the DRAM choices that
  // hold room over its kernel through a gap: the cheapest to evict (copy out
  // and, at the next use, the cheaper of the copy back and the slow-tier
  // penalty, per byte) are labelled slow until they free what the request
  // lacks, when together they cost less than the request's slow-tier penalty
  // there (the cost model's prices, each decision priced alone). The
  // expert's marginal choice becomes the choice this state's room pays for
  // (docs/results/learning.md, section 3, session thirty-six).
  bool price_room = false;
  // Fill Demonstration::crowding. On ResNet-152 at 0.35 x peak, 89% of the
  // clipped DRAM labels of a rollout had their room held by such kept gaps:
  // the plan's own labels already say evict them, and the policy had not
  // learned it (docs/results/learning.md, section 3, session thirty-six).
  bool mark_crowding = false;
};

// Plays `plan` through `env` (Reset first; the env is left done). The plan
// must be for env's workload (Validate throws otherwise).
Demonstration DemonstratePlan(PlacementEnv& env, const PlacementPlan& plan);

// DAgger (Ross et al. 2011) with a plan as the expert: `act` drives the
// episode, and each visited state is labelled with the tier `plan` gives that
// tensor at that kernel. A policy trained only on the expert's own states
// drifts off them after its first mistakes (one wrong DRAM choice clips the
// tensors after it); labels on the states it really visits teach it to
// recover. A transition's action is the label; its reward and next state are
// those of the label's step where the policy agreed, and the transition is
// marked terminal with the step's reward where it did not (the label's
// consequences were not observed), so the TD target never follows another
// action's outcome. summary is the driven episode.
Demonstration LabelRollout(PlacementEnv& env, const PlacementPlan& plan,
                           const std::function<int(const Observation&)>& act, const RolloutLabels& labels = {});

}  // namespace tensortier
