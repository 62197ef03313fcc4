#include "learner/scoreboard.h"

#include "envs/cost_model.h"
#include "envs/workload_io.h"
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

void Scoreboard::SaveBestPlan(ByteWriter& w) const {
  w.Bool(has_best_plan_);
  w.String(has_best_plan_ ? SerializePlan(best_plan_) : std::string());
  w.F64(best_runtime_ns_);
}

void Scoreboard::LoadBestPlan(ByteReader& r) {
  has_best_plan_ = r.Bool();
  const std::string plan = r.String();
  if (has_best_plan_) best_plan_ = ParsePlan(plan);
  best_runtime_ns_ = r.F64();
}

void Scoreboard::SaveEvaluations(ByteWriter& w) const {
  w.PodVector(rewards_);
  w.PodVector(updates_);
  w.F64(best_reward_);
}

void Scoreboard::LoadEvaluations(ByteReader& r) {
  rewards_ = r.PodVector<double>();
  updates_ = r.PodVector<uint64_t>();
  if (updates_.size() != rewards_.size()) throw CheckpointError("checkpoint evaluations do not line up");
  best_reward_ = r.F64();
}

}  // namespace tensortier
