#include "learner/fastest_policy.h"

#include <limits>
#include <stdexcept>
#include <utility>

#include "agents/agent.h"
#include "common/log.h"
#include "envs/cost_model.h"

namespace tensortier {

void FastestPolicy::Consider(const EpisodeSummary& s, const std::string& weights) {
  if (s.oom || weights.empty()) return;
  if (weights_.empty() || s.cost.total_ns < runtime_ns_) {
    weights_ = weights;
    name_ = s.plan.produced_by;
    runtime_ns_ = s.cost.total_ns;
  }
}

std::unique_ptr<PlacementAgent> FastestPolicy::KeptAgent(const std::string& agent_name,
                                                         const std::string& agent_json) const {
  if (weights_.empty()) throw std::logic_error("FastestPolicy: no policy was considered");
  std::unique_ptr<PlacementAgent> agent = MakeAgent(agent_name, agent_json, "cpu");
  agent->LoadWeights(weights_);
  return agent;
}

template <typename Solve>
auto FastestPolicy::FromKeptScores(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                                   const std::string& agent_json, const Solve& solve) const {
  std::unique_ptr<PlacementAgent> agent = KeptAgent(agent_name, agent_json);
  PlacementEnv solve_env(workload, env);
  auto r = solve(solve_env, ScoresOf(*agent));
  r.greedy.plan.produced_by = name_;
  return r;
}

PlanSearchResult FastestPolicy::Search(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                                       const std::string& agent_json, const PlanSearchOptions& options,
                                       const std::vector<PlacementPlan>& starting_plans) const {
  PlanSearchResult r = FromKeptScores(workload, env, agent_name, agent_json,
                                      [&](PlacementEnv& e, const ActionScores& s) {
                                        return SearchPlan(e, s, options, starting_plans);
                                      });
  r.best.plan.produced_by = name_ + "+search";
  LogInfo("plan_search_finished").kv("policy", name_).kv("rollouts", r.rollouts).kv("improvements", r.improvements)
      .kv("deviations", r.deviations).kv("starting_plan", r.starting_plan).kv("restarted", r.restarted)
      .kv("greedy_runtime_ns", r.greedy.cost.total_ns)
      .kv("searched_runtime_ns", r.best.cost.total_ns).kv("seconds", r.seconds);
  return r;
}

int KeepFasterStart(const Workload& workload, const std::vector<PlacementPlan>& starting_plans, PlanSearchResult& r) {
  int kept = -1;
  double best_ns = r.best.oom || r.best.cost.oom ? std::numeric_limits<double>::infinity()
                                                 : EvaluatePlan(workload, r.best.plan).total_ns;
  CostReport kept_cost;
  for (size_t i = 0; i < starting_plans.size(); ++i) {
    CostReport c = EvaluatePlan(workload, starting_plans[i]);
    if (!c.oom && c.total_ns < best_ns) kept = static_cast<int>(i), best_ns = c.total_ns, kept_cost = c;
  }
  if (kept < 0) return -1;
  const std::string name = r.best.plan.produced_by;
  r.best.plan = starting_plans[kept];
  r.best.plan.produced_by = name;
  r.best.cost = kept_cost;
  r.best.oom = false;
  r.starting_plan = kept;
  return kept;
}

FastestPolicy::StartedSearch FastestPolicy::SearchKeepingStarts(const Workload& workload, const EnvConfig& env,
                                                               const std::string& agent_name,
                                                               const std::string& agent_json,
                                                               const PlanSearchOptions& options,
                                                               const std::vector<PlacementPlan>& starting_plans) const {
  StartedSearch out;
  out.search = Search(workload, env, agent_name, agent_json, options, starting_plans);
  out.kept_start = KeepFasterStart(workload, starting_plans, out.search) >= 0;
  const int start = out.search.starting_plan;
  if (start >= 0 && start < static_cast<int>(starting_plans.size())) out.started_from = starting_plans[start].produced_by;
  if (out.kept_start) LogInfo("plan_search_kept_start").kv("plan", out.started_from);
  return out;
}

GuidedIlpResult FastestPolicy::SolveIlp(const Workload& workload, const EnvConfig& env, const std::string& agent_name,
                                       const std::string& agent_json, const GuidedIlpOptions& options) const {
  GuidedIlpResult r = FromKeptScores(workload, env, agent_name, agent_json,
                                     [&](PlacementEnv& e, const ActionScores& s) { return SolveGuidedIlp(e, s, options); });
  r.plan.produced_by = name_ + "+ilp";
  LogInfo("plan_ilp_finished").kv("policy", name_).kv("formulation", r.formulation).kv("solves", r.solves.size())
      .kv("improved", r.solved).kv("greedy_runtime_ns", r.greedy.cost.total_ns)
      .kv("runtime_ns", r.cost.total_ns).kv("seconds", r.seconds);
  return r;
}

void FastestPolicy::SaveCheckpoint(const std::string& path, const std::string& agent_name,
                                   const std::string& agent_json) const {
  KeptAgent(agent_name, agent_json)->SaveCheckpoint(path);
}

}  // namespace tensortier
