// The weights whose greedy plan was the fastest of every evaluation the
// learner made (imitation's, periodic and final ones), on the cost model,
// the comparison's measure (the best evaluation reward also weighs the
// memory price). Training can make a policy worse, and imitation's weights
// are often the best: the plan-time search (envs/plan_search.h) starts from
// this policy's greedy plan. Network thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/workload.h"
#include "policies/guided_ilp.h"

namespace tensortier {

class PlacementAgent;

// Where the search ended slower than one of its starting plans as given
// (the fastest such), that plan becomes its best, under the best's name,
// and the result's starting_plan its index; returns the index, or -1 when
// the search's own best stands. In async mode the MDP's replay of another
// planner's plan can lose a little of it (where its copies start): the
// search from the relaxation's plan ended 0.014-0.017 points below it on
// DenseNet-like and ResNet-152 (docs/results/learning.md, session
// fifty-four). A plan over its DRAM limit is never kept.
int KeepFasterStart(const Workload& workload, const std::vector<PlacementPlan>& starting_plans, PlanSearchResult& r);

class FastestPolicy {
 public:
  // Keeps `weights` when `s` (their greedy episode, not OOM) is faster than
  // every episode considered before; `s.plan.produced_by` names the policy.
  void Consider(const EpisodeSummary& s, const std::string& weights);
  bool empty() const { return weights_.empty(); }
  const std::string& name() const { return name_; }
  double runtime_ns() const { return runtime_ns_; }

  // The search from this policy's greedy plan, and from `starting_plans`
  // where given (SearchPlan), on a fresh CPU agent of the given kind loaded
  // with the kept weights. Plans are named after the policy.
  PlanSearchResult Search(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                          const std::string& agent_json, const PlanSearchOptions& options,
                          const std::vector<PlacementPlan>& starting_plans = {}) const;
  // The search after training: Search from this policy's greedy plan and
  // `starting_plans`, a start it ended below kept as given
  // (KeepFasterStart), and the produced_by of the start it went on from
  // ("" for the policy's own episodes).
  struct StartedSearch {
    PlanSearchResult search;
    std::string started_from;
    bool kept_start = false;
  };
  StartedSearch SearchKeepingStarts(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                                    const std::string& agent_json, const PlanSearchOptions& options,
                                    const std::vector<PlacementPlan>& starting_plans) const;
  // The ILP this policy's network guides (policies/guided_ilp.h), from its
  // greedy plan, on a fresh CPU agent; the plan is named "<policy>+ilp".
  GuidedIlpResult SolveIlp(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                           const std::string& agent_json, const GuidedIlpOptions& options) const;
  // An agent checkpoint (.ckpt) of this policy: what `export` takes from a
  // run directory. Its optimiser state is fresh; its weights are the kept ones.
  void SaveCheckpoint(const std::string& path, const std::string& agent_name, const std::string& agent_json) const;

 private:
  // A fresh CPU agent of the given kind with the kept weights; throws
  // std::logic_error when no policy was considered.
  std::unique_ptr<PlacementAgent> KeptAgent(const std::string& agent_name, const std::string& agent_json) const;
  // `solve` (the search or the guided ILP) on a fresh environment with a
  // KeptAgent's scores; its greedy plan is this policy's.
  template <typename Solve>
  auto FromKeptScores(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                      const std::string& agent_json, const Solve& solve) const;

  std::string weights_;
  std::string name_;
  double runtime_ns_ = 0;
};

}  // namespace tensortier
