// The run directory that `tensortier train` leaves behind:
//   config.toml       the settings the run used (reusable with --config)
//   metrics.csv       one row per episode (EpisodeRecord)
//   summary.json      counters, best and greedy plans' scores, timings
//   final_plan.ttplan the plan the run recommends (PlacementPlan file)
//   comparison.{csv,json,md}  that plan against all-DRAM, first-touch and all-slow
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
  CostReport cost;
  double relative_performance = 0;  // all-DRAM time / this time
  double normalised_cost = 0;
  double memory_cost_dollars = 0;   // DRAM and slow-tier peak bytes at the env's prices
};

// Scores the learned plan against the reference placements, on the cost model.
std::vector<PolicyScore> ComparePlans(const Workload& w, const EnvConfig& env, const PlacementPlan& learned,
                                      const std::string& learned_name);

std::string ComparisonMarkdown(const std::vector<PolicyScore>& scores);

// `config_toml` is stored as given.
void WriteRunDirectory(const std::string& dir, const std::string& config_toml, const Workload& w,
                       const EnvConfig& env, const LearnerResult& result, const PlacementPlan& final_plan,
                       const std::vector<PolicyScore>& comparison);

// The plan a run recommends: the better of the greedy policy and the best
// plan any episode found (both scored by the cost model).
PlacementPlan ChooseFinalPlan(const Workload& w, const LearnerResult& result);

}  // namespace tensortier
