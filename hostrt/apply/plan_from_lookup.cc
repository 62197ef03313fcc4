#include "hostrt/apply/plan_from_lookup.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace tensortier {

AppliedPlan PlanFromLookup(const tt_lookup* lookup, const Workload& w, uint64_t dram_budget_bytes, EnvConfig env) {
  if (lookup == nullptr) throw std::invalid_argument("PlanFromLookup: no lookup");
  AppliedPlan out;
  const int32_t id = tt_lookup_find_plan(lookup, w.Signature(), w.batch_size, dram_budget_bytes);
  if (id >= 0) {
    tt_lookup_plan_info info;
    tt_lookup_plan_info_at(lookup, id, &info);
    if (info.num_tensors != w.num_tensors() || info.num_kernels != w.num_kernels())
      throw std::runtime_error("PlanFromLookup: the plan table's shape does not match the workload");
    PlacementPlan& p = out.plan;
    p.workload_signature = w.Signature();
    p.dram_limit_bytes = dram_budget_bytes;
    p.mode = info.async_copies ? MigrationMode::kAsync : MigrationMode::kSync;
    p.produced_by = "lookup-plan-table";
    p.initial_tiers.resize(info.num_tensors);
    for (uint32_t t = 0; t < info.num_tensors; ++t)
      p.initial_tiers[t] = static_cast<Tier>(tt_lookup_plan_tier_at(lookup, id, t));
    std::vector<tt_lookup_migration> moves(info.num_migrations + 1);
    for (int32_t k = -1; k < static_cast<int32_t>(info.num_kernels); ++k) {
      const int32_t n = tt_lookup_plan_migrations_at(lookup, id, k, moves.data(), moves.size());
      for (int32_t i = 0; i < n; ++i)
        p.migrations.push_back({k, moves[static_cast<size_t>(i)].tensor, static_cast<Tier>(moves[static_cast<size_t>(i)].to_tier)});
    }
    p.Validate(w);
    out.from_plan_table = true;
    return out;
  }
  if (!tt_lookup_has_generalised(lookup))
    throw std::runtime_error("PlanFromLookup: the lookup holds no plan for this model, batch and DRAM budget, "
                             "and no generalised lookup");
  if (tt_lookup_observation_size(lookup) != static_cast<uint32_t>(kObservationSize))
    throw std::runtime_error("PlanFromLookup: the lookup's observations have " +
                             std::to_string(tt_lookup_observation_size(lookup)) + " floats; this build's MDP has " +
                             std::to_string(kObservationSize));
  env.dram_limit_bytes = dram_budget_bytes;
  PlacementEnv rollout(w, env);
  out.plan = RunEpisode(rollout, [&](const Observation& o) {
               ++out.decisions;
               return tt_lookup_decide(lookup, o.data(), o.size());
             }).plan;
  out.plan.produced_by = "lookup-generalised";
  return out;
}

}  // namespace tensortier
