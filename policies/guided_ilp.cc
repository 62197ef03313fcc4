#include "policies/guided_ilp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
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

struct WindowOutcome {
  bool solved = false;     // false: no time was left for it
  bool in_time = false;    // ended before its time cap
  bool improved = false;
  double seconds = 0, time_limit_seconds = 0;
};

// Large-neighbourhood search over windows of kernels (GuidedIlpOptions::
// async_windows): `solve(first, last, time_fraction)` solves one window from
// the best plan so far. A pass takes the half-overlapping windows in order of
// the policy's doubt there; passes repeat while one improves the plan and
// time is left. The size adapts: halved after a window that ran out of time,
// doubled after one solved within a tenth of its cap.
template <typename SolveWindow>
void SolveWindows(const Workload& w, const std::vector<PolicyDecision>& decisions, const GuidedIlpOptions& options,
                  SolveWindow solve) {
  const int32_t K = static_cast<int32_t>(w.num_kernels());
  if (K == 0) return;
  int32_t size = options.window_kernels > 0 ? options.window_kernels : std::clamp<int32_t>(K / 4, 64, 1024);
  size = std::min(size, K);
  // Doubt: how many of the policy's decisions at each kernel are below the
  // median gap (the ones it is least sure of).
  std::vector<float> gaps;
  for (const PolicyDecision& d : decisions) gaps.push_back(d.gap);
  std::vector<int> doubt_at(K + 1, 0);
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
    const float median = gaps[gaps.size() / 2];
    for (const PolicyDecision& d : decisions)
      if (d.gap < median && static_cast<int32_t>(d.kernel) < K) ++doubt_at[d.kernel + 1];
  }
  for (int32_t k = 0; k < K; ++k) doubt_at[k + 1] += doubt_at[k];  // prefix sums
  // A window solved in time is solved again only once the plan changed near
  // it (within half a window): CBC with fixed seeds would give it back the
  // same. `changed_at[k]`: the count of improvements when kernel k's
  // neighbourhood last changed.
  std::vector<int> changed_at(K, 0);
  int improvements = 0;
  std::map<std::pair<int32_t, int32_t>, int> solved_at;  // window -> `improvements` when last solved in time
  for (int pass = 0; pass < 1000; ++pass) {
    std::vector<std::pair<int32_t, int32_t>> windows;
    const int32_t step = std::max<int32_t>(1, size / 2);
    for (int32_t first = 0; first < K; first += step) {
      windows.push_back({first, std::min(K - 1, first + size - 1)});
      if (first + size >= K) break;
    }
    std::stable_sort(windows.begin(), windows.end(), [&](const auto& a, const auto& b) {
      return doubt_at[a.second + 1] - doubt_at[a.first] > doubt_at[b.second + 1] - doubt_at[b.first];
    });
    bool solved_any = false;
    const int32_t size_of_pass = size;
    for (const auto& window : windows) {
      const auto [first, last] = window;
      const int32_t margin = (last - first + 1) / 2;
      const int32_t from = std::max<int32_t>(0, first - margin), to = std::min<int32_t>(K - 1, last + margin);
      if (auto it = solved_at.find(window);
          it != solved_at.end() && *std::max_element(changed_at.begin() + from, changed_at.begin() + to + 1) <= it->second)
        continue;
      const WindowOutcome o = solve(first, last, options.window_time_fraction);
      if (!o.solved) return;  // no time left
      solved_any = true;
      if (o.improved) {
        ++improvements;
        std::fill(changed_at.begin() + from, changed_at.begin() + to + 1, improvements);
      }
      if (o.in_time) solved_at[window] = improvements;
      if (!o.in_time)
        size = std::max<int32_t>(8, size / 2);
      else if (o.seconds < 0.1 * o.time_limit_seconds)
        size = std::min(K, size * 2);
      if (size != size_of_pass) break;  // the next pass cuts the windows anew
    }
    if (!solved_any && size == size_of_pass) return;  // every window solved since the plan last changed near it
  }
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
  if (!(options.window_time_fraction > 0 && options.window_time_fraction <= 1))
    throw std::invalid_argument("guided ILP: the window time fraction must be in (0, 1]");
  if (options.window_kernels < 0) throw std::invalid_argument("guided ILP: the window size must not be negative");
  if (options.trail_candidates < 0)
    throw std::invalid_argument("guided ILP: the trail candidates must not be negative");
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
  auto keep_candidate = [&](std::string source, const PlacementPlan& plan, double cost_ns) {
    for (const GuidedIlpCandidate& c : result.candidates)
      if (c.plan == plan) return;
    result.candidates.push_back({std::move(source), plan, cost_ns});
  };
  if (options.keep_candidates) keep_candidate("greedy", result.plan, result.cost.total_ns);
  // The plans that improved on the best in the current formulation, in order.
  std::vector<std::pair<PlacementPlan, double>> trail;
  // The current formulation's best solution, whether or not it beat the plan
  // before it on the cost model.
  std::optional<std::pair<PlacementPlan, double>> formulation_best;

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
    // One solve that fixes the surest `share` (0: nothing), or with a
    // window everything outside it, and stops at `gap`; `in_time` is false
    // when it ran out of time. Returns the solve's record.
    auto solve_once = [&](double share, double gap, double time_fraction,
                          std::optional<std::pair<int32_t, int32_t>> window, bool* in_time) -> const GuidedIlpSolve* {
      *in_time = false;
      const double left = phases[phase].second - elapsed();
      if (left <= 0) return nullptr;
      GuidedIlpSolve solve;
      solve.formulation = AutoTmFormulationName(ilp.formulation);
      solve.fixed_share = window ? -1 : share;
      if (window) std::tie(solve.window_first, solve.window_last) = *window;
      solve.target_gap = gap;
      const float sure = SureGap(greedy.decisions, share);
      int locations = 0;
      ilp.fixed_tier = [&](uint32_t t, int32_t first, int32_t last) -> std::optional<Tier> {
        ++locations;
        if (window) {
          if (first >= window->first && last <= window->second) return std::nullopt;
        } else {
          // Fixed only where every decision of the policy that covers these
          // kernels is sure, and at least one does.
          bool covered = false;
          for (const PolicyDecision* d : of_tensor[t]) {
            if (static_cast<int32_t>(d->kernel) > last || static_cast<int32_t>(d->holds_until) <= first) continue;
            if (!(d->gap >= sure)) return std::nullopt;
            covered = true;
          }
          if (!covered) return std::nullopt;
        }
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
        if (options.keep_candidates && !cost.oom && (!formulation_best || cost.total_ns < formulation_best->second))
          formulation_best.emplace(plan, cost.total_ns);
        if (solve.improved) {
          if (options.keep_candidates) trail.emplace_back(plan, cost.total_ns);
          result.plan = std::move(plan);
          result.cost = std::move(cost);
          result.solved = true;
          best_values = std::move(solved.mip.values);
          // A window fixes what lies outside it to the best plan: its tiers.
          if (window) replay = ReplayPlan(w, result.plan);
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
      *in_time = solve.mip.status != "time-limit";
      // One line per solve, so that where the time went shows in any run's log.
      LogInfo("guided_ilp_solve")
          .kv("formulation", solve.formulation)
          .kv("fixed_share", solve.fixed_share)
          .kv("window_first", solve.window_first)
          .kv("window_last", solve.window_last)
          .kv("fixed_variables", solve.fixed_variables)
          .kv("locations", locations)
          .kv("status", solve.mip.status)
          .kv("gap", solve.mip.gap)
          .kv("seconds", solve.mip.seconds)
          .kv("time_limit_seconds", solve.time_limit_seconds)
          .kv("runtime_ns", solve.cost_ns)
          .kv("improved", solve.improved);
      result.solves.push_back(std::move(solve));
      return &result.solves.back();
    };
    bool in_time = true;
    if (ilp.formulation == AutoTmFormulation::kAsynchronous && options.async_windows)
      SolveWindows(w, greedy.decisions, options, [&](int32_t first, int32_t last, double time_fraction) {
        bool window_in_time = false;
        // A window's program is small: solved closer to its optimum than
        // the shares' (0.1% against 1% read +0.1 to +0.8 points on three
        // paper-scale models, async).
        const double gap = options.final_mip_gap > 0 ? std::min(options.mip_gap, options.final_mip_gap) : options.mip_gap;
        const GuidedIlpSolve* solve = solve_once(0, gap, time_fraction, std::make_pair(first, last), &window_in_time);
        WindowOutcome outcome;
        outcome.solved = solve != nullptr;
        if (solve) {
          outcome.in_time = window_in_time;
          outcome.improved = solve->improved;
          outcome.seconds = solve->mip.seconds;
          outcome.time_limit_seconds = solve->time_limit_seconds;
        }
        return outcome;
      });
    const bool synchronous_before_asynchronous = ilp.formulation == AutoTmFormulation::kSynchronous && phase + 1 < phases.size();
    if (!synchronous_before_asynchronous || options.synchronous_shares_in_async)
      for (double share : options.fixed_shares) {
        solve_once(share, options.mip_gap, options.share_time_fraction, std::nullopt, &in_time);
        if (!in_time) break;  // one that fixes less would not finish either
      }
    // The time left after a formulation's shares: its whole program from
    // the best plan. After the last formulation, closer to its optimum than the
    // shares' gap allows. After the synchronous one in async mode, to the
    // shares' gap: where the network's surest decisions are wrong (a model
    // it never saw), every share's program keeps some of them, and the whole
    // synchronous program (seconds where it is small) gives the asynchronous
    // solves AutoTM-sync's level to start from.
    const bool last = phase + 1 == phases.size();
    if (last && options.final_mip_gap > 0) solve_once(0, options.final_mip_gap, 1.0, std::nullopt, &in_time);
    if (!last && (options.fixed_shares.back() > 0 || !options.synchronous_shares_in_async))
      solve_once(0, options.mip_gap, 1.0, std::nullopt, &in_time);
    // A formulation whose solutions never beat the plan before it on the
    // cost model still offers its best: in async mode the synchronous
    // program's plan makes a fraction of the copies of a policy's plan,
    // which real iterations may price above the cost model.
    if (options.keep_candidates && trail.empty() && formulation_best)
      keep_candidate(std::string(AutoTmFormulationName(ilp.formulation)) + ", not better on the cost model",
                     formulation_best->first, formulation_best->second);
    formulation_best.reset();
    if (options.keep_candidates && !trail.empty()) {
      const std::string name = AutoTmFormulationName(ilp.formulation);
      // Plans on the way, evenly spaced, before the formulation's best.
      const size_t on_the_way = trail.size() - 1;
      const size_t kept = last ? std::min(on_the_way, static_cast<size_t>(options.trail_candidates)) : 0;
      for (size_t i = 1; i <= kept; ++i) {
        const size_t at = on_the_way > kept ? i * on_the_way / (kept + 1) : i - 1;
        keep_candidate(name + ", improvement " + std::to_string(at + 1) + " of " + std::to_string(trail.size()),
                       trail[at].first, trail[at].second);
      }
      keep_candidate(name, result.plan, result.cost.total_ns);
      trail.clear();
    }
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
