#include "policies/guided_ilp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/log.h"
#include "envs/cost_model.h"
#include "policies/plan_tools.h"

namespace tensortier {
namespace {

// The gap at or above which a decision is among the surest `share` of them.
float SureGap(const std::vector<PolicyDecision>& decisions, double share) {
  if (decisions.empty() || share <= 0) return std::numeric_limits<float>::infinity();
  std::vector<float> gaps;
  gaps.reserve(decisions.size());
  for (const PolicyDecision& d : decisions) gaps.push_back(d.gap);
  const size_t fixed = std::min(gaps.size(), static_cast<size_t>(std::ceil(share * static_cast<double>(gaps.size()))));
  if (fixed == 0) return std::numeric_limits<float>::infinity();
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() - fixed), gaps.end());
  return gaps[gaps.size() - fixed];
}

}  // namespace

std::string SharesText(const std::vector<double>& shares) {
  std::ostringstream out;
  for (size_t i = 0; i < shares.size(); ++i) out << (i ? " " : "") << shares[i];
  return out.str();
}

void ValidateGuidedIlpOptions(const GuidedIlpOptions& options) {
  if (options.fixed_shares.empty()) throw std::invalid_argument("guided ILP: no fixed share");
  for (size_t i = 0; i < options.fixed_shares.size(); ++i) {
    const double share = options.fixed_shares[i];
    if (!(share >= 0 && share <= 1)) throw std::invalid_argument("guided ILP: fixed shares must be in [0, 1]");
    if (i > 0 && !(share < options.fixed_shares[i - 1]))
      throw std::invalid_argument("guided ILP: fixed shares must descend (each solve fixes less)");
  }
  if (!(options.time_limit_seconds > 0)) throw std::invalid_argument("guided ILP: the time limit must be positive");
  if (!(options.share_time_fraction > 0 && options.share_time_fraction <= 1))
    throw std::invalid_argument("guided ILP: the share time fraction must be in (0, 1]");
}

GuidedIlpResult SolveGuidedIlp(PlacementEnv& env, const ActionScores& scores, const GuidedIlpOptions& options) {
  ValidateGuidedIlpOptions(options);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const Workload& w = env.workload();
  GuidedIlpResult result;
  GreedyEpisode greedy = PlayGreedy(env, scores);
  result.greedy = greedy.summary;
  result.plan = greedy.summary.plan;
  result.cost = greedy.summary.cost;

  // Per tensor, its decisions.
  std::vector<std::vector<const PolicyDecision*>> of_tensor(w.num_tensors());
  for (const PolicyDecision& d : greedy.decisions) of_tensor.at(d.tensor).push_back(&d);
  // The tier a plan really gives a tensor at each kernel (clip-to-fit may
  // have turned a DRAM choice into the slow tier), over [first, last] when it
  // does not change there. The first formulation starts from the greedy
  // plan; a later one from the best plan so far (its fixed tiers too, so that
  // the start is a solution of the fixed program).
  PlanReplay replay = ReplayPlan(w, greedy.summary.plan);
  auto plan_tier = [&](uint32_t t, int32_t first, int32_t last) -> std::optional<Tier> {
    if (first > last) return std::nullopt;  // the end-of-iteration node: left to the solver
    const Tier tier = replay.tier.at(first).at(t);
    for (int32_t k = first + 1; k <= last; ++k)
      if (replay.tier[k][t] != tier) return std::nullopt;
    return tier;
  };

  AutoTmIlpOptions ilp;
  ilp.mode = env.config().mode;
  // The program plans what the workload's pinned tensors leave; they are put
  // back in DRAM in each solution.
  ilp.dram_limit_bytes = PlannableDramBytes(w, env.config().dram_limit_bytes);
  std::vector<std::pair<AutoTmFormulation, double>> phases;  // formulation, when its solves must end
  if (ilp.mode == MigrationMode::kAsync && options.synchronous_first_in_async)
    phases = {{AutoTmFormulation::kSynchronous, options.time_limit_seconds / 2},
              {AutoTmFormulation::kAsynchronous, options.time_limit_seconds}};
  else
    phases = {{ilp.mode == MigrationMode::kAsync ? AutoTmFormulation::kAsynchronous : AutoTmFormulation::kSynchronous,
               options.time_limit_seconds}};
  for (const auto& [formulation, phase_end] : phases)
    result.formulation += std::string(result.formulation.empty() ? "" : ", then ") + AutoTmFormulationName(formulation);
  for (size_t phase = 0; phase < phases.size(); ++phase) {
    ilp.formulation = phases[phase].first;
    if (phase > 0) replay = ReplayPlan(w, result.plan);
    std::vector<double> best_values;  // of this formulation's best solve, when it beat the plan before
    // One solve that fixes the surest `share` (0: nothing) and stops at
    // `gap`; false when it ran out of time.
    auto solve_once = [&](double share, double gap, double time_fraction) {
      const double left = phases[phase].second - elapsed();
      if (left <= 0) return false;
      GuidedIlpSolve solve;
      solve.formulation = AutoTmFormulationName(ilp.formulation);
      solve.fixed_share = share;
      solve.target_gap = gap;
      const float sure = SureGap(greedy.decisions, share);
      int locations = 0;
      ilp.fixed_tier = [&](uint32_t t, int32_t first, int32_t last) -> std::optional<Tier> {
        ++locations;
        // Fixed only where every decision of the policy that covers these
        // kernels is sure, and at least one does.
        bool covered = false;
        for (const PolicyDecision* d : of_tensor[t]) {
          if (static_cast<int32_t>(d->kernel) > last || static_cast<int32_t>(d->holds_until) <= first) continue;
          if (!(d->gap >= sure)) return std::nullopt;
          covered = true;
        }
        if (!covered) return std::nullopt;
        std::optional<Tier> tier = plan_tier(t, first, last);
        if (tier) ++solve.fixed_variables;
        return tier;
      };
      ilp.start_tier = plan_tier;
      ilp.start_values = best_values;
      ilp.time_limit_seconds = solve.time_limit_seconds = left * time_fraction;
      ilp.mip_gap = gap;
      try {
        AutoTmIlpResult solved = SolveAutoTmIlp(w, ilp);
        PlacementPlan plan = std::move(solved.plan);
        plan.dram_limit_bytes = env.config().dram_limit_bytes;
        plan.KeepPinnedInDram(w);
        RepairToLimit(w, &plan);
        CostReport cost = EvaluatePlan(w, plan);
        solve.cost_ns = cost.oom ? 0 : cost.total_ns;
        solve.improved = !cost.oom && (result.cost.oom || cost.total_ns < result.cost.total_ns);
        if (solve.improved) {
          result.plan = std::move(plan);
          result.cost = std::move(cost);
          result.solved = true;
          best_values = std::move(solved.mip.values);
        }
        solve.mip = std::move(solved.mip);
        solve.mip.values.clear();
      } catch (const std::runtime_error&) {
        // CBC found no solution of the fixed program (the policy's plan is
        // not one the formulation can express, and nothing else was found in
        // time): the plan before stands.
        solve.mip.status = "no-solution";
      }
      result.location_variables = locations;
      const bool in_time = solve.mip.status != "time-limit";
      // One line per solve, so that where the time went shows in any run's log.
      LogInfo("guided_ilp_solve")
          .kv("formulation", solve.formulation)
          .kv("fixed_share", solve.fixed_share)
          .kv("fixed_variables", solve.fixed_variables)
          .kv("locations", locations)
          .kv("status", solve.mip.status)
          .kv("gap", solve.mip.gap)
          .kv("seconds", solve.mip.seconds)
          .kv("time_limit_seconds", solve.time_limit_seconds)
          .kv("runtime_ns", solve.cost_ns)
          .kv("improved", solve.improved);
      result.solves.push_back(std::move(solve));
      return in_time;
    };
    for (double share : options.fixed_shares)
      if (!solve_once(share, options.mip_gap, options.share_time_fraction)) break;  // one that fixes less would not finish either
    // The time left after a formulation's shares: its whole program from
    // the best plan. After the last formulation, closer to its optimum than the
    // shares' gap allows. After the synchronous one in async mode, to the
    // shares' gap: where the network's surest decisions are wrong (a model
    // it never saw), every share's program keeps some of them, and the whole
    // synchronous program (seconds where it is small) gives the asynchronous
    // solves AutoTM-sync's level to start from.
    const bool last = phase + 1 == phases.size();
    if (last && options.final_mip_gap > 0) solve_once(0, options.final_mip_gap, 1.0);
    if (!last && options.fixed_shares.back() > 0) solve_once(0, options.mip_gap, 1.0);
  }
  result.seconds = elapsed();
  return result;
}

ActionScores HeatOrderScores() {
  return [](const Observation& x) { return std::make_pair(1.0f + x[kObsHeat], 0.0f); };
}

PolicyResult DecideHeatGuidedIlp(const Workload& w, const PolicyContext& ctx) {
  EnvConfig env_config;
  // No limit: the limit that everything fits under, so heat order keeps all
  // in DRAM. (Decide hands policies the workload without its pinned
  // tensors, so `w` has none here.)
  env_config.dram_limit_bytes = ctx.dram_limit_bytes > 0 ? ctx.dram_limit_bytes
                                                         : std::max<uint64_t>(w.peak_live_bytes(), 1);
  env_config.mode = ctx.mode;
  PlacementEnv env(w, env_config);
  GuidedIlpOptions options;
  options.time_limit_seconds = ctx.solver_time_limit_seconds;
  options.mip_gap = ctx.mip_gap;
  GuidedIlpResult r = SolveGuidedIlp(env, HeatOrderScores(), options);
  PolicyResult out;
  out.plan = std::move(r.plan);
  SolverStats stats;
  stats.status = "heat order";  // no solve beat heat order's own plan
  for (const GuidedIlpSolve& solve : r.solves) {
    ++stats.solves;
    stats.nodes += solve.mip.nodes;
    stats.solve_seconds += solve.mip.seconds;
    if (!solve.improved) continue;
    stats.status = solve.mip.status;
    stats.mip_gap = solve.mip.gap;
    stats.objective_ns = solve.mip.objective;
    stats.bound_ns = solve.mip.bound;
  }
  out.solver = stats;
  out.stats["location_variables"] = r.location_variables;
  out.stats["heat_order_cost_ns"] = r.greedy.cost.total_ns;
  return out;
}

}  // namespace tensortier
