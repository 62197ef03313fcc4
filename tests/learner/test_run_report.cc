// The end of a run that ran real iterations (issue 16): the final plan's
// measured time beside all-DRAM and all-slow measured the same way, in the
// table, the legend and summary.json, or a plain "not measured" and why.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "learner/run_legend.h"
#include "learner/run_report.h"
#include "tests/common/temp_dir.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

// A run of `w` whose greedy plan is the final plan, and whose measurement
// cache holds `measured` (plans and their measured runtimes, in ms).
struct EndedRun {
  Workload w = testing::SmallWorkload();
  EnvConfig env = testing::SmallEnv(w);
  LearnerResult result;
  FinalPlanChoice final_plan;

  EndedRun() {
    result.agent = "dqn";
    result.greedy_plan = PlacementPlan::Uniform(w, Tier::kSlow, env.dram_limit_bytes);
    result.greedy_plan.produced_by = "dqn-greedy v40";
    final_plan = ChooseFinalPlan(w, result);
  }
  PlacementPlan OtherPlan() const {
    PlacementPlan p = result.greedy_plan;
    p.initial_tiers[0] = Tier::kDram;
    return p;
  }
  void AddMeasured(const PlacementPlan& plan, double runtime_ms) {
    CachedMeasurement e;
    e.plan_hash = plan.Hash();
    e.backend = "emulated:optane-dcpmm";
    e.runtime_ns = runtime_ms * 1e6;
    e.min_runtime_ns = 10e6;  // the worker's all-DRAM and all-slow
    e.max_runtime_ns = 30e6;
    e.counters.measured = true;
    result.measurements.push_back(e);
  }
};

std::string LineWith(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const size_t start = text.rfind('\n', at) + 1;  // npos + 1 = 0
  return text.substr(start, text.find('\n', at) - start);
}

// The line of `text` that holds `needle` is `expected`.
void ExpectLineWith(const std::string& text, const std::string& needle, const std::string& expected) {
  EXPECT_EQ(LineWith(text, needle), expected) << text;
}

TEST(RunReportMeasured, TheFinalPlansOwnMeasurementIsFoundByItsHash) {
  EndedRun run;
  run.AddMeasured(run.OtherPlan(), 12);
  run.AddMeasured(run.final_plan.plan, 15);
  const FinalPlanMeasurement m = FinalPlanMeasuredInTraining(run.result, run.final_plan.plan);
  ASSERT_TRUE(m.measured) << m.not_measured_reason;
  EXPECT_EQ(m.plan_name, "dqn-greedy v40");
  EXPECT_EQ(m.backend, "emulated:optane-dcpmm");
  EXPECT_DOUBLE_EQ(m.runtime_ns, 15e6);  // not the other plan's 12 ms
  EXPECT_DOUBLE_EQ(m.all_dram_ns, 10e6);
  EXPECT_DOUBLE_EQ(m.all_slow_ns, 30e6);
  EXPECT_DOUBLE_EQ(m.relative_performance, 10.0 / 15.0);
  EXPECT_DOUBLE_EQ(m.normalised_cost, 0.25);

  const std::string table = ComparisonMarkdown(ComparePlans(run.w, run.env, run.result, run.final_plan, {}), m);
  ExpectLineWith(table, "| all-dram (no limit) | measured on emulated:optane-dcpmm |",
                 "| all-dram (no limit) | measured on emulated:optane-dcpmm | 10.000 | 100.0% | 0.000 | – | – | no |");
  ExpectLineWith(table, "| all-slow | measured on emulated:optane-dcpmm |",
                 "| all-slow | measured on emulated:optane-dcpmm | 30.000 | 33.3% | 1.000 | – | – | no |");
  ExpectLineWith(table, "| dqn-greedy v40 | measured on",
                 "| dqn-greedy v40 | measured on emulated:optane-dcpmm (final plan) | 15.000 | 66.7% | 0.250 | – | – | no |");
  const std::string legend = ComparisonLegend({"cost-model", "emulated:optane-dcpmm"}, run.final_plan.source, m);
  EXPECT_NE(LineWith(legend, "  measured on ...").find("an episode of training that ran this plan"), std::string::npos)
      << legend;
}

TEST(RunReportMeasured, AFinalPlanNoEpisodeRanSaysSoAndHasNoMeasuredRow) {
  EndedRun run;
  run.AddMeasured(run.OtherPlan(), 12);
  const FinalPlanMeasurement m = FinalPlanMeasuredInTraining(run.result, run.final_plan.plan);
  EXPECT_FALSE(m.measured);
  EXPECT_EQ(m.not_measured_reason,
            "final plan not measured: the 1 plans that episodes ran on real iterations were other plans");
  const std::string table = ComparisonMarkdown(ComparePlans(run.w, run.env, run.result, run.final_plan, {}), m);
  EXPECT_EQ(table.find("measured on"), std::string::npos) << table;
  const std::string legend = ComparisonLegend({"emulated:optane-dcpmm"}, run.final_plan.source, m);
  EXPECT_NE(LineWith(legend, "  measured  ").find("were other plans; every row is the cost model's"),
            std::string::npos)
      << legend;

  EndedRun modelled;
  EXPECT_EQ(FinalPlanMeasuredInTraining(modelled.result, modelled.final_plan.plan).not_measured_reason,
            "final plan not measured: no episode ran real iterations (every episode was scored by the cost model)");
}

TEST(RunReportMeasured, SummaryJsonSaysWhatWasMeasured) {
  const std::string dir = testing::TempDir("run-report-measured");
  EndedRun run;
  run.AddMeasured(run.OtherPlan(), 12);
  run.AddMeasured(run.final_plan.plan, 15);
  const FinalPlanMeasurement m = FinalPlanMeasuredInTraining(run.result, run.final_plan.plan);
  WriteRunDirectory(dir, "", run.w, run.env, run.result, run.final_plan,
                    ComparePlans(run.w, run.env, run.result, run.final_plan, {}), m);
  nlohmann::json summary = nlohmann::json::parse(ReadFile(dir + "/summary.json"));
  const nlohmann::json& measured = summary["final_plan"]["measured"];
  EXPECT_TRUE(measured["measured"].get<bool>());
  EXPECT_EQ(measured["backend"], "emulated:optane-dcpmm");
  EXPECT_DOUBLE_EQ(measured["runtime_ns"].get<double>(), 15e6);
  EXPECT_DOUBLE_EQ(measured["all_dram_ns"].get<double>(), 10e6);
  EXPECT_DOUBLE_EQ(measured["all_slow_ns"].get<double>(), 30e6);
  ASSERT_EQ(summary["measured_references"].size(), 1u);
  EXPECT_EQ(summary["measured_references"][0]["plans_measured"], 2);
  EXPECT_DOUBLE_EQ(summary["measured_references"][0]["all_dram_ns"].get<double>(), 10e6);
  EXPECT_NE(ReadFile(dir + "/comparison.md").find("measured on emulated:optane-dcpmm (final plan)"), std::string::npos);
  // The CSV and JSON end with the same three measured rows, with no peak,
  // migration or dollar figures of their own.
  const nlohmann::json comparison = nlohmann::json::parse(ReadFile(dir + "/comparison.json"));
  ASSERT_GE(comparison.size(), 4u);
  const nlohmann::json& last = comparison.back();
  EXPECT_EQ(last["policy"], "dqn-greedy v40");
  EXPECT_EQ(last["source"], "measured on emulated:optane-dcpmm (final plan)");
  EXPECT_DOUBLE_EQ(last["runtime_ns"].get<double>(), 15e6);
  EXPECT_DOUBLE_EQ(last["normalised_cost"].get<double>(), 0.25);
  EXPECT_FALSE(last.contains("dram_peak_bytes"));
  EXPECT_EQ(comparison[comparison.size() - 3]["policy"], "all-dram (no limit)");
  EXPECT_DOUBLE_EQ(comparison[comparison.size() - 2]["runtime_ns"].get<double>(), 30e6);
  const std::string csv = ReadFile(dir + "/comparison.csv");
  ExpectLineWith(csv, "\"dqn-greedy v40\",\"measured on",
                 "\"dqn-greedy v40\",\"measured on emulated:optane-dcpmm (final plan)\",15000000,0.6666666667,0.25,,,0,");
  ExpectLineWith(csv, "\"all-slow\",\"measured on",
                 "\"all-slow\",\"measured on emulated:optane-dcpmm\",30000000,0.3333333333,1,,,0,");

  EndedRun modelled;
  WriteRunDirectory(dir, "", modelled.w, modelled.env, modelled.result, modelled.final_plan,
                    ComparePlans(modelled.w, modelled.env, modelled.result, modelled.final_plan, {}),
                    FinalPlanMeasuredInTraining(modelled.result, modelled.final_plan.plan));
  summary = nlohmann::json::parse(ReadFile(dir + "/summary.json"));
  EXPECT_FALSE(summary["final_plan"]["measured"]["measured"].get<bool>());
  EXPECT_NE(summary["final_plan"]["measured"]["reason"].get<std::string>().find("no episode ran real iterations"),
            std::string::npos);
  EXPECT_TRUE(summary["measured_references"].empty());
  EXPECT_EQ(ReadFile(dir + "/comparison.csv").find("measured on"), std::string::npos);
  EXPECT_EQ(ReadFile(dir + "/comparison.json").find("measured on"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
