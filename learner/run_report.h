// The run directory that `tensortier train` leaves behind:
//   config.toml       the settings the run used (reusable with --config)
//   metrics.csv       one row per episode (EpisodeRecord)
//   summary.json      counters, best and greedy plans' scores, timings
//   final_plan.ttplan the plan the run recommends (PlacementPlan file)
//   comparison.{csv,json,md}  that plan, the greedy policy's and the search's against the
//                     baselines computed for the run (Sentinel, AutoTM, CA-LM, ...), all-DRAM,
//                     first-touch and all-slow
// Every file is written atomically. docs/file-formats.md describes them.
#pragma once

#include <string>
#include <vector>

#include "envs/cost_model.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "learner/learner.h"

namespace tensortier {

struct PolicyScore {
  std::string policy;
  // reference (all-DRAM, first-touch, all-slow), baseline, greedy policy,
  // plan-time search, best episode seen in training; " (final plan)" marks the one
  // the run recommends.
  std::string source;
  CostReport cost;
  double relative_performance = 0;  // all-DRAM time / this time
  double normalised_cost = 0;
  double memory_cost_dollars = 0;   // DRAM and slow-tier peak bytes at the env's prices
};

// A baseline policy's plan for the run's task (also what the agent may
// imitate: LearnerConfig::expert_plans).
struct BaselinePlan {
  std::string policy;
  PlacementPlan plan;
  double decision_seconds = 0;
  std::string status;           // the solver's ("optimal", "time-limit", ...), "" for heuristics
};

// The fastest of `baselines` on the cost model among those within their
// DRAM limit (the first of equals); nullptr when none is. What `train`'s
// final search also starts from (LearnerConfig::search_starts).
const BaselinePlan* FastestBaseline(const Workload& w, const std::vector<BaselinePlan>& baselines);

// The plan a run recommends and where it comes from: "greedy policy",
// "plan-time search" (the network's greedy plan improved by
// envs/plan_search.h; "plan-time search from NAME's plan" where it went on
// from another planner's: LearnerResult::search_started_from; ", kept as
// given" where it ended below that plan and kept it) or "best
// episode seen in training" (the fastest plan
// of any exploring worker's episode or periodic greedy evaluation: not what
// the final policy does).
struct FinalPlanChoice {
  PlacementPlan plan;
  std::string source;
};

// The final plan on real iterations beside all-DRAM and all-slow measured on
// the same backend, or why there is no such figure: the comparison table is
// the cost model's, and a run that ran real iterations should say what the
// plan it recommends took there (or that it never ran there).
struct FinalPlanMeasurement {
  bool measured = false;
  std::string plan_name;            // the final plan's produced_by
  std::string backend;              // "emulated:optane-dcpmm", "pmem:/mnt/pm0", ...
  std::string method;               // one line: where the three times come from
  double runtime_ns = 0;
  double all_dram_ns = 0;           // no DRAM limit
  double all_slow_ns = 0;
  double relative_performance = 0;  // all-DRAM time / the plan's
  double normalised_cost = 0;       // (plan - all-DRAM) / (all-slow - all-DRAM)
  bool oom = false;                 // the plan ran out of DRAM on the real iterations
  std::string not_measured_reason;  // when !measured: "final plan not measured: ..."
};

// (runtime - all-DRAM) / (all-slow - all-DRAM) from measured times: 0 at
// all-DRAM's speed, 1 at all-slow's; `no_span` when all-slow was not slower.
double MeasuredNormalisedCost(double runtime_ns, double all_dram_ns, double all_slow_ns, double no_span = 0);

// From the run's measurement cache (LearnerResult::measurements): the entry
// with the final plan's hash and the references its worker measured, or,
// when there is none, why (no episode ran real iterations, or the measured
// episodes ran other plans).
FinalPlanMeasurement FinalPlanMeasuredInTraining(const LearnerResult& result, const PlacementPlan& final_plan);

// Every plan of the run and every baseline, scored by the cost model:
// references, baselines, the greedy policy, the search, the best episode
// seen in training; the final plan's row is marked.
std::vector<PolicyScore> ComparePlans(const Workload& w, const EnvConfig& env, const LearnerResult& result,
                                      const FinalPlanChoice& final_plan, const std::vector<BaselinePlan>& baselines);

// The rows that follow the cost model's in comparison.{md,csv,json} when the
// final plan was measured: all-DRAM, all-slow and the final plan, source
// "measured on BACKEND"; NaN where there is no figure (an OOM plan's runtime,
// a normalised cost with no span between the references).
struct MeasuredComparisonRow {
  std::string policy;
  std::string source;
  double runtime_ns = 0;
  double relative_performance = 0;
  double normalised_cost = 0;
  bool oom = false;
};
std::vector<MeasuredComparisonRow> MeasuredComparisonRows(const FinalPlanMeasurement& measured);

// With `measured.measured`, three rows follow the cost model's: all-DRAM,
// all-slow and the final plan as measured (source "measured on BACKEND").
std::string ComparisonMarkdown(const std::vector<PolicyScore>& scores, const FinalPlanMeasurement& measured = {});
// One line: whether the learned plan (greedy policy or plan-time search) is
// the fastest of the comparison, ties the fastest other plan (within half a
// hundredth of a point: a search from a baseline's plan that found nothing
// better returns it), or what beats it by how much.
std::string ComparisonVerdict(const std::vector<PolicyScore>& scores);

// `config_toml` is stored as given.
void WriteRunDirectory(const std::string& dir, const std::string& config_toml, const Workload& w,
                       const EnvConfig& env, const LearnerResult& result, const FinalPlanChoice& final_plan,
                       const std::vector<PolicyScore>& comparison, const FinalPlanMeasurement& measured);

// The plan a run recommends: the fastest on the cost model of the greedy
// policy, the plan-time search and the best episode seen in training, named by its source.
FinalPlanChoice ChooseFinalPlan(const Workload& w, const LearnerResult& result);

}  // namespace tensortier
