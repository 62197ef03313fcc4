// How good the run's policies are, on the network thread: the fastest plan
// seen (reported by workers or produced by greedy evaluations), ranked on
// the cost model whatever scored it on a worker so that measured and
// modelled episodes compare on one scale; and the greedy evaluations, with
// the best reward and the convergence rule (learner/convergence.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "learner/checkpoint.capnp.h"

namespace tensortier {

class Scoreboard {
 public:
  // `workload` must outlive the scoreboard.
  Scoreboard(const Workload& workload, uint32_t converge_window, double converge_tolerance)
      : workload_(workload), converge_window_(converge_window), converge_tolerance_(converge_tolerance) {}

  // Ranks a plan; one that runs out of DRAM never counts. Throws
  // std::invalid_argument (from the cost model) for a plan that does not
  // fit the workload.
  enum class Plan { kBest, kNotBest, kOom };
  Plan ConsiderPlan(const PlacementPlan& plan);
  bool has_best_plan() const { return has_best_plan_; }
  const PlacementPlan& best_plan() const { return best_plan_; }
  double best_runtime_ns() const { return best_runtime_ns_; }  // 0 before any

  // Books a greedy evaluation's reward; `updates`: the agent's gradient
  // steps when its weights were taken.
  struct Evaluation {
    bool new_best = false;       // the best reward so far (the first always is)
    bool converged_now = false;  // this evaluation satisfied the convergence rule (once per run)
  };
  Evaluation BookEvaluation(double reward, uint64_t updates);
  const std::vector<double>& evaluation_rewards() const { return rewards_; }
  std::optional<double> best_evaluation_reward() const;
  bool converged() const { return converged_; }

  // Checkpoint section: the best plan and the evaluations. Load throws
  // CheckpointError for a best plan that does not parse.
  void Save(schema::ScoreboardSection::Builder out) const;
  void Load(schema::ScoreboardSection::Reader in);

 private:
  const Workload& workload_;
  const uint32_t converge_window_;
  const double converge_tolerance_;
  bool has_best_plan_ = false;
  PlacementPlan best_plan_;
  double best_runtime_ns_ = 0;
  std::vector<double> rewards_;
  std::vector<uint64_t> updates_;  // the agent's updates at each evaluation
  double best_reward_ = 0;
  bool converged_ = false;
};

}  // namespace tensortier
