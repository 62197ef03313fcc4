// `tensortier bench` on exported lookup files (policy lookup:FILE): the row
// is the plan a host would get from the file, on the workload the policy was
// trained on and on one it never saw; files that cannot give a plan are
// refused up front with the reason.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "agents/local_training.h"
#include "agents/dqn_agent.h"
#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/workload_spec.h"
#include "evaluation/benchmark.h"
#include "executor/executor.h"
#include "hostrt/apply/plan_from_lookup.h"
#include "exporter/export.h"
#include "exporter/lookup_writer.h"
#include "hostrt/tensortier_lookup.hpp"
#include "replay/replay_buffer.h"
#include "tests/common/profiled_workload.h"
#include "tests/export/export_test_util.h"

namespace tensortier {
namespace {

constexpr const char* kTrainedOn = "synthetic:resnet:4:1048576";
constexpr const char* kUnseen = "synthetic:vgg:6:2097152";

std::string TempPath(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/lookup_bench_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

uint64_t BudgetAt(const Workload& w, double fraction) {
  // As RunBenchmark computes it, so that a plan table exported at this
  // budget is the one the bench row finds.
  return static_cast<uint64_t>(std::llround(fraction * static_cast<double>(w.peak_live_bytes())));
}

ExportOptions QuickExport(const std::string& path) {
  ExportOptions o = testing::QuickExport(path);
  o.threads = 2;
  return o;
}

// A DQN trained briefly on `w` at `budget`, its greedy plan, and a lookup
// exported from both (plan table + generalised lookup): what `tensortier
// export` writes from a small run.
struct Exported {
  std::string path;
  PlacementPlan network_plan;
};

Exported TrainAndExport(const Workload& w, uint64_t budget, const std::string& path) {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  // The export tests' DQN, smaller and quicker to start learning.
  DqnConfig c = testing::ExportedDqn();
  c.hidden = {32, 32};
  c.target_update_interval = 100;
  c.learning_starts = 256;
  c.seed = 7;
  DqnAgent agent(c);
  EnvConfig env;
  env.dram_limit_bytes = budget;
  PlacementEnv train(w, env);
  ReplayBuffer replay(20000);
  std::mt19937_64 rng(3);
  LocalTraining schedule;
  schedule.episodes = 20;
  schedule.updates_per_episode = 16;
  schedule.learning_starts = 256;
  TrainLocally(agent, train, replay, schedule, rng);
  Exported out;
  out.path = path;
  out.network_plan = RunEpisode(train, [&](const Observation& o) { return agent.Act(o.data(), 0.0, rng); }).plan;
  ExportLookupFrom(agent, w, out.network_plan, QuickExport(path));
  torch::set_num_threads(threads);
  return out;
}

const BenchmarkRow* Find(const std::vector<BenchmarkRow>& rows, const std::string& policy, double fraction) {
  for (const BenchmarkRow& r : rows)
    if (r.policy == policy && r.dram_fraction == fraction) return &r;
  return nullptr;
}

// The row must be the plan a host gets from the file (PlanFromLookup), a
// valid plan for the workload that keeps within its DRAM budget.
void ExpectHostsPlan(const Workload& w, const std::string& path, const BenchmarkRow& row, bool from_plan_table) {
  SCOPED_TRACE(row.policy + " at " + std::to_string(row.dram_fraction));
  EXPECT_TRUE(row.note.empty()) << row.note;
  lookup::Lookup l = lookup::Lookup::Open(path);
  const AppliedPlan applied = PlanFromLookup(l.handle(), w, row.dram_limit_bytes);
  EXPECT_EQ(applied.from_plan_table, from_plan_table);
  EXPECT_NO_THROW(applied.plan.Validate(w));
  const CostReport cost = EvaluatePlan(w, applied.plan);
  EXPECT_DOUBLE_EQ(row.predicted_ns, cost.total_ns);
  EXPECT_GT(row.predicted_relative, 0);
  EXPECT_EQ(row.dram_peak_bytes, cost.dram_peak_bytes);
  EXPECT_LE(row.dram_peak_bytes, row.dram_limit_bytes);
  EXPECT_EQ(row.oom_events, 0u);
  EXPECT_GE(row.decision_seconds, 0);
}

TEST(LookupBench, RowsOnItsOwnWorkloadAndOnOneItNeverSaw) {
  const Workload trained = LoadWorkloadSpec(kTrainedOn);
  const Workload unseen = LoadWorkloadSpec(kUnseen);
  const Exported e = TrainAndExport(trained, BudgetAt(trained, 0.2), TempPath("policy.ttlookup"));
  const std::string name = std::string(kLookupPolicyPrefix) + e.path;

  BenchmarkOptions o;
  o.policies = {"first-touch", name};
  o.dram_fractions = {0.2, 0.4};
  o.measure = false;
  const std::vector<BenchmarkRow> own = RunBenchmark(trained, o);
  ASSERT_EQ(own.size(), 4u);
  // At the budget it was exported for, the file's plan table: the run's plan.
  const BenchmarkRow* table = Find(own, name + " (plan table)", 0.2);
  ASSERT_NE(table, nullptr);
  ExpectHostsPlan(trained, e.path, *table, true);
  EXPECT_DOUBLE_EQ(table->predicted_ns, EvaluatePlan(trained, e.network_plan).total_ns);
  // Elsewhere the generalised lookup, rolled out over the MDP.
  const BenchmarkRow* other_budget = Find(own, name + " (generalised)", 0.4);
  ASSERT_NE(other_budget, nullptr);
  ExpectHostsPlan(trained, e.path, *other_budget, false);

  const std::vector<BenchmarkRow> rows = RunBenchmark(unseen, o);
  ASSERT_EQ(rows.size(), 4u);
  for (double f : o.dram_fractions) {
    const BenchmarkRow* r = Find(rows, name + " (generalised)", f);
    ASSERT_NE(r, nullptr) << f;
    EXPECT_EQ(r->workload, unseen.name);
    ExpectHostsPlan(unseen, e.path, *r, false);
  }
  // The lookup's rows sit beside the baselines' in the files bench writes.
  std::vector<BenchmarkRow> all = own;
  all.insert(all.end(), rows.begin(), rows.end());
  const std::string md = BenchmarkMarkdown(all);
  EXPECT_NE(md.find("| " + name + " (plan table) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| " + name + " (generalised) |"), std::string::npos) << md;
  std::filesystem::remove(e.path);
}

TEST(LookupBench, RefusesAFileThatCannotGiveAPlan) {
  const Workload w = LoadWorkloadSpec(kUnseen);
  BenchmarkOptions o;
  o.dram_fractions = {0.3};
  o.measure = false;

  // Corrupt: one payload byte flipped in a good file. Nothing runs.
  const std::string good = TempPath("good.ttlookup");
  ExportLookupFromPolicy([](const float*) { return 0; }, "dram", w, FirstTouchPlan(w, BudgetAt(w, 0.3)),
                         QuickExport(good));
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 200u);
  bytes[bytes.size() - 9] ^= 0x5a;
  const std::string corrupt = TempPath("corrupt.ttlookup");
  std::ofstream(corrupt, std::ios::binary) << bytes;
  o.policies = {"first-touch", std::string(kLookupPolicyPrefix) + corrupt};
  try {
    RunBenchmark(w, o);
    FAIL() << "a corrupt lookup was benched";
  } catch (const lookup::LookupError& e) {
    EXPECT_EQ(e.code(), TT_LOOKUP_ERR_CHECKSUM) << e.what();
    EXPECT_NE(std::string(e.what()).find(corrupt), std::string::npos) << e.what();
  }

  // A generalised lookup of another build's MDP (15 observation floats, as
  // before the observation grew), with no plan table to fall back on.
  LookupContents c;
  c.primary_signature = w.Signature();
  c.has_generalised = true;
  c.generalised.observation_size = 15;
  c.generalised.fine_bins = 1;
  c.generalised.cell_count = 1;
  c.generalised.constants = DefaultLookupConstants(BudgetAt(w, 0.3));
  c.generalised.bitmap = {0};
  const std::string old = TempPath("old.ttlookup");
  std::ofstream(old, std::ios::binary) << SerializeLookup(c);
  o.policies = {"first-touch", std::string(kLookupPolicyPrefix) + old};
  try {
    RunBenchmark(w, o);
    FAIL() << "a lookup of 15-float observations was benched";
  } catch (const lookup::LookupError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("15-float observations"), std::string::npos) << what;
    EXPECT_NE(what.find("has " + std::to_string(kObservationSize)), std::string::npos) << what;
    EXPECT_NE(what.find("export the policy again"), std::string::npos) << what;
  }

  // The same file with a plan table for the workload still gives that plan
  // at its budget; at other budgets the row says why it has no number.
  c.plans.push_back(MakePlanTableEntry(w, PlacementPlan::Uniform(w, Tier::kSlow, BudgetAt(w, 0.3))));
  std::ofstream(old, std::ios::binary | std::ios::trunc) << SerializeLookup(c);
  o.dram_fractions = {0.3, 0.5};
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  const std::string name = std::string(kLookupPolicyPrefix) + old;
  const BenchmarkRow* table = Find(rows, name + " (plan table)", 0.3);
  ASSERT_NE(table, nullptr);
  ExpectHostsPlan(w, old, *table, true);
  const BenchmarkRow* none = Find(rows, name, 0.5);
  ASSERT_NE(none, nullptr);
  EXPECT_NE(none->note.find("15 floats"), std::string::npos) << none->note;
  std::filesystem::remove(good);
  std::filesystem::remove(corrupt);
  std::filesystem::remove(old);
}

// On a profiled model the lookup's plan runs real iterations like every
// other policy's (`bench --repeats`).
TEST(LookupBench, RowIsMeasuredOnRealIterations) {
  const Workload w = testing::ProfiledWithTimesFromSizes("alexnet", 1, 32);
  // A policy exported for another model: the host's plan comes from the
  // generalised lookup.
  const Workload other = LoadWorkloadSpec(kTrainedOn);
  const Exported e = TrainAndExport(other, BudgetAt(other, 0.2), TempPath("measured.ttlookup"));
  BenchmarkOptions o;
  o.policies = {"all-slow", std::string(kLookupPolicyPrefix) + e.path};
  o.dram_fractions = {0.3};
  o.slow_tier = "emulated:optane-dcpmm";
  o.repeats = 2;
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), 2u);
  const BenchmarkRow& r = rows[1];
  EXPECT_EQ(r.policy, std::string(kLookupPolicyPrefix) + e.path + " (generalised)");
  ASSERT_TRUE(r.measured) << r.note;
  EXPECT_EQ(r.backend, "emulated:optane-dcpmm");
  EXPECT_GT(r.measured_ns, 0);
  EXPECT_GT(r.measured_relative, 0);
  EXPECT_GT(r.predicted_ns, 0);
  EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes);
  EXPECT_EQ(r.oom_events, 0u);
  std::filesystem::remove(e.path);
}

}  // namespace
}  // namespace tensortier
