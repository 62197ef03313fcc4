#include "learner/scoreboard.h"

#include "envs/cost_model.h"
#include "envs/workload_capnp.h"
#include "learner/checkpoint_store.h"
#include "learner/convergence.h"

namespace tensortier {

Scoreboard::Plan Scoreboard::ConsiderPlan(const PlacementPlan& plan) {
  const CostReport cost = EvaluatePlan(workload_, plan);
  if (cost.oom) return Plan::kOom;
  if (has_best_plan_ && cost.total_ns >= best_runtime_ns_) return Plan::kNotBest;
  best_plan_ = plan;
  best_runtime_ns_ = cost.total_ns;
  has_best_plan_ = true;
  return Plan::kBest;
}

Scoreboard::Evaluation Scoreboard::BookEvaluation(double reward, uint64_t updates) {
  Evaluation e;
  rewards_.push_back(reward);
  updates_.push_back(updates);
  if (rewards_.size() == 1 || reward > best_reward_) {
    best_reward_ = reward;
    e.new_best = true;
  }
  if (!converged_ && Converged(rewards_, updates_, converge_window_, converge_tolerance_)) {
    converged_ = true;
    e.converged_now = true;
  }
  return e;
}

std::optional<double> Scoreboard::best_evaluation_reward() const {
  if (rewards_.empty()) return std::nullopt;
  return best_reward_;
}

void Scoreboard::Save(schema::ScoreboardSection::Builder out) const {
  if (has_best_plan_) PlanToCapnp(best_plan_, out.initBestPlan());
  out.setBestRuntimeNs(best_runtime_ns_);
  auto evaluations = out.initEvaluations(static_cast<unsigned>(rewards_.size()));
  for (size_t i = 0; i < rewards_.size(); ++i) {
    evaluations[i].setReward(rewards_[i]);
    evaluations[i].setUpdates(updates_[i]);
  }
  out.setBestEvaluationReward(best_reward_);
}

void Scoreboard::Load(schema::ScoreboardSection::Reader in) {
  has_best_plan_ = in.hasBestPlan();
  if (has_best_plan_) {
    try {
      best_plan_ = PlanFromCapnp(in.getBestPlan());
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(std::string("the checkpoint's best plan does not parse: ") + e.what());
    }
  }
  best_runtime_ns_ = in.getBestRuntimeNs();
  rewards_.clear();
  updates_.clear();
  for (schema::Evaluation::Reader e : in.getEvaluations()) {
    rewards_.push_back(e.getReward());
    updates_.push_back(e.getUpdates());
  }
  best_reward_ = in.getBestEvaluationReward();
}

}  // namespace tensortier
