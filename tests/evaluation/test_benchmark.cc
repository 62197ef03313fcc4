// `tensortier bench`: every row, column and file it promises, for baselines
// and learned agents, on the cost model and on real iterations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "common/files.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/workload_spec.h"
#include "evaluation/benchmark.h"
#include "executor/executor.h"
#include "tests/common/profiled_workload.h"
#include "tests/evaluation/measured_benchmark.h"

namespace tensortier {
namespace {

std::string TempPath(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/bench_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

// A fresh DQN network of seed 1 on the CPU, saved as `name`: the
// checkpoint the plan-time pipelines' tests start from.
std::string SaveSeededDqn(const std::string& name) {
  DqnConfig config;
  config.seed = 1;
  config.device = "cpu";
  const std::string path = TempPath(name);
  MakeAgent("dqn", config.ToJson())->SaveCheckpoint(path);
  return path;
}

// An untrained agent is still an agent: its greedy rollout is a plan.
std::string SaveAgent(const std::string& kind) {
  const std::string path = TempPath(kind + ".ckpt");
  MakeAgent(kind, "")->SaveCheckpoint(path);
  return path;
}

TEST(Benchmark, CostModelFilesAreCompleteAndParseable) {
  const Workload a = LoadWorkloadSpec("synthetic:resnet:3");
  const Workload b = LoadWorkloadSpec("synthetic:vgg:3");
  BenchmarkOptions o;
  o.policies = {"all-slow", "first-touch", "sentinel", "autotm-sync", "learned"};
  o.dram_fractions = {1.0, 0.3};
  o.measure = false;
  o.solver_time_limit_seconds = 10;
  // A DQN for every workload, a SAC for `a` only.
  o.checkpoints = {SaveAgent("dqn"), a.name + "=" + SaveAgent("sac")};
  std::vector<BenchmarkRow> rows = RunBenchmark(a, o);
  std::vector<BenchmarkRow> more = RunBenchmark(b, o);
  EXPECT_EQ(rows.size(), 2u * 8);  // four baselines, dqn and sac, each greedy and with the plan-time search
  EXPECT_EQ(more.size(), 2u * 6);  // no sac for b
  // The search starts from the greedy plan and keeps it unless it finds a faster one.
  for (const BenchmarkRow& searched : rows)
    for (const BenchmarkRow& greedy : rows)
      if (searched.policy == greedy.policy + "+search" && searched.dram_fraction == greedy.dram_fraction) {
        EXPECT_LE(searched.predicted_ns, greedy.predicted_ns) << searched.policy << " at " << searched.dram_fraction;
      }
  rows.insert(rows.end(), more.begin(), more.end());
  for (const BenchmarkRow& r : rows) {
    EXPECT_TRUE(r.note.empty()) << r.policy << ": " << r.note;
    EXPECT_GT(r.predicted_ns, 0) << r.policy;
    EXPECT_NEAR(r.predicted_exec_ns + r.predicted_migration_ns, r.predicted_ns, 1e-6 * r.predicted_ns) << r.policy;
    EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << r.policy << " at " << r.dram_fraction;
    EXPECT_EQ(r.backend, "cost-model");
    EXPECT_FALSE(r.measured);
  }

  const std::string dir = TempPath("out");
  WriteBenchmarkResults(dir, rows);
  std::ifstream csv(dir + "/bench.csv");
  std::string header;
  ASSERT_TRUE(std::getline(csv, header));
  const std::vector<std::string> columns = SplitCsvLine(header);
  for (const char* c : {"workload", "policy", "dram_fraction", "predicted_ns", "measured_ns", "prediction_error",
                        "bytes_migrated", "oom_events", "memory_cost_dollars", "decision_seconds",
                        "predicted_migration_ns", "measured_exposed_migration_ns", "note"})
    EXPECT_NE(std::find(columns.begin(), columns.end(), c), columns.end()) << c;
  size_t lines = 0;
  std::set<std::string> policies;
  for (std::string line; std::getline(csv, line); ++lines) {
    const std::vector<std::string> cells = SplitCsvLine(line);
    ASSERT_EQ(cells.size(), columns.size()) << line;
    policies.insert(cells[1]);
    EXPECT_GT(std::stod(cells[5]), 0) << line;  // predicted_ns
  }
  EXPECT_EQ(lines, rows.size());
  EXPECT_EQ(policies, (std::set<std::string>{"all-slow", "first-touch", "sentinel", "autotm-sync", "dqn",
                                             "dqn+search", "sac", "sac+search"}));

  const nlohmann::json json = nlohmann::json::parse(ReadFile(dir + "/bench.json"));
  ASSERT_EQ(json.size(), rows.size());
  for (const auto& row : json) EXPECT_EQ(row.size(), columns.size());
  const std::string md = ReadFile(dir + "/bench.md");
  EXPECT_NE(md.find("### " + a.name), std::string::npos);
  EXPECT_NE(md.find("| sac |"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir + "/bench-" + a.name + ".svg"));
}

// Whether an ILP's figure is its proven optimum decides how a near-tie with
// it reads (issue #15), so solver rows carry CBC's status and proved gap,
// and --ilp-gap 0 runs it on to a proven optimum where time allows.
TEST(Benchmark, SolverRowsSayHowTheIlpEndedAndGapZeroProvesTheOptimum) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:3");
  BenchmarkOptions o;
  o.policies = {"first-touch", "autotm-sync", "heat+ilp"};
  o.dram_fractions = {0.3};
  o.measure = false;
  o.solver_time_limit_seconds = 30;
  const std::vector<BenchmarkRow> published = RunBenchmark(w, o);
  o.mip_gap = 0;
  const std::vector<BenchmarkRow> proven = RunBenchmark(w, o);
  ASSERT_EQ(published.size(), 3u);
  ASSERT_EQ(proven.size(), 3u);
  for (const std::vector<BenchmarkRow>* rows : {&published, &proven}) {
    EXPECT_EQ((*rows)[0].solver_status, "") << "first-touch solves nothing";
    EXPECT_NE((*rows)[1].solver_status, "");
    EXPECT_NE((*rows)[2].solver_status, "");
  }
  EXPECT_TRUE(published[1].solver_status == "optimal" || published[1].solver_status == "gap")
      << published[1].solver_status;
  EXPECT_LE(published[1].solver_gap, 0.01 + 1e-9);
  EXPECT_EQ(proven[1].solver_status, "optimal");
  EXPECT_LE(proven[1].solver_gap, 1e-6);
  // The bound caps every plan of AutoTM's formulation: its own sits at it when proven optimal.
  EXPECT_NEAR(proven[1].solver_bound_relative, proven[1].predicted_relative, 1e-6);
  EXPECT_GE(published[1].solver_bound_relative, published[1].predicted_relative - 1e-9);
  EXPECT_LE(published[1].solver_bound_relative, published[1].predicted_relative / (1 - 0.01) + 1e-9);
  EXPECT_EQ(published[2].solver_bound_relative, 0) << "the guided ILP fixes shares: no global bound";

  // In async mode the asynchronous formulation's objective is the cost model's too; the
  // synchronous one charges every copy as exposed there, so it sets no ceiling.
  o.mode = MigrationMode::kAsync;
  o.policies = {"autotm-sync", "autotm-async"};
  const std::vector<BenchmarkRow> async_rows = RunBenchmark(w, o);
  ASSERT_EQ(async_rows.size(), 2u);
  EXPECT_EQ(async_rows[0].solver_bound_relative, 0);
  if (async_rows[1].solver_status == "optimal") {
    EXPECT_NEAR(async_rows[1].solver_bound_relative, async_rows[1].predicted_relative, 1e-6);
  } else {
    EXPECT_GE(async_rows[1].solver_bound_relative, async_rows[1].predicted_relative - 1e-9);
  }

  const std::string dir = TempPath("solver-status");
  WriteBenchmarkResults(dir, proven);
  const std::string md = ReadFile(dir + "/bench.md");
  EXPECT_NE(md.find("Solver status (CBC, or the relaxation's prices; gap: what it proved): autotm-sync at 0.30: optimal, gap 0%, none of its plans above "),
            std::string::npos)
      << md;
  const nlohmann::json json = nlohmann::json::parse(ReadFile(dir + "/bench.json"));
  EXPECT_EQ(json[1]["solver_status"], "optimal");
  EXPECT_EQ(json[0]["solver_status"], "");
}

// "+ilp": AutoTM's ILP with the network's surest decisions fixed, started
// from its plan (policies/guided_ilp.h). An untrained network is a poor
// start; the solver's plan fits and is never slower than the greedy one.
TEST(Benchmark, TheIlpTheNetworkGuidesStartsFromItsPlanAndNeverEndsSlower) {
  const Workload w = LoadWorkloadSpec("synthetic:vgg:3");
  BenchmarkOptions o;
  o.policies = {"dqn", "dqn+ilp"};
  o.dram_fractions = {0.3};
  o.measure = false;
  o.solver_time_limit_seconds = 10;
  o.checkpoints = {SaveAgent("dqn")};
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    o.mode = mode;
    const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
    ASSERT_EQ(rows.size(), 2u);
    ASSERT_EQ(rows[1].policy, "dqn+ilp");
    EXPECT_TRUE(rows[1].note.empty()) << rows[1].note;
    EXPECT_LE(rows[1].dram_peak_bytes, rows[1].dram_limit_bytes);
    EXPECT_LT(rows[1].predicted_ns, rows[0].predicted_ns) << MigrationModeName(mode);
  }
}

// Issue #15's ablations in the bench's own run: the same plan-time search
// with heat order in the network's place, and the checkpoint's network with
// the weights it had before training (same architecture and seed).
TEST(Benchmark, AblationsRunTheSamePipelineWithoutTheTrainedNetwork) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:3");
  DqnConfig config;
  config.seed = 1;
  config.device = "cpu";
  DqnConfig other = config;
  other.seed = 2;
  // "Trained": seed 1's network carrying other weights (seed 2's), as a trained checkpoint does.
  std::unique_ptr<PlacementAgent> trained = MakeAgent("dqn", config.ToJson());
  trained->LoadWeights(MakeAgent("dqn", other.ToJson())->SerializeWeights());
  const std::string trained_path = TempPath("ablation-trained.ckpt"), fresh_path = TempPath("ablation-fresh.ckpt");
  trained->SaveCheckpoint(trained_path);
  MakeAgent("dqn", config.ToJson())->SaveCheckpoint(fresh_path);

  BenchmarkOptions o;
  o.dram_fractions = {0.3};
  o.measure = false;
  o.search.max_seconds = 20;
  o.policies = {"dqn", "untrained-dqn", "untrained-dqn+search", "heat+search", "heat"};
  o.checkpoints = {trained_path};
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  o.policies = {"dqn"};
  o.checkpoints = {fresh_path};
  const std::vector<BenchmarkRow> fresh = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), 5u);
  ASSERT_EQ(fresh.size(), 1u);
  for (const BenchmarkRow& r : rows) {
    EXPECT_TRUE(r.note.empty()) << r.policy << ": " << r.note;
    EXPECT_EQ(r.plan_source, r.policy);
    EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << r.policy;
  }
  // The untrained twin is the checkpoint's network before training, not the checkpoint.
  EXPECT_DOUBLE_EQ(rows[1].predicted_ns, fresh[0].predicted_ns);
  EXPECT_NE(rows[0].predicted_ns, rows[1].predicted_ns) << "the two networks should place differently";
  EXPECT_LE(rows[2].predicted_ns, rows[1].predicted_ns) << "the search keeps its start unless it finds better";
  // heat+search starts from heat order's plan: the constant DRAM action, clipped to fit.
  EnvConfig env;
  env.dram_limit_bytes = rows[3].dram_limit_bytes;
  PlacementEnv placement(w, env);
  const double heat_order_ns = RunEpisode(placement, [](const Observation&) { return 0; }).cost.total_ns;
  EXPECT_LE(rows[3].predicted_ns, heat_order_ns);
  // heat is that plan itself: the greedy pipeline with the constant action in the network's place.
  EXPECT_NEAR(rows[4].predicted_ns, heat_order_ns, 1e-9 * heat_order_ns);

  // No checkpoint: the untrained policies are refused as the trained ones are.
  o.policies = {"untrained-dqn+search"};
  o.checkpoints.clear();
  EXPECT_THROW(RunBenchmark(w, o), std::invalid_argument);
}

// dqn+ilp+search: the guided ILP, then the search from the faster of the
// network's episodes and the ILP's plan; its ablation heat+ilp+search.
TEST(Benchmark, TheSearchFromTheGuidedIlpsPlanKeepsTheFasterStart) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:3");
  const std::string path = SaveSeededDqn("ilp-search.ckpt");
  BenchmarkOptions o;
  o.dram_fractions = {0.3};
  o.measure = false;
  o.search.max_seconds = 20;
  o.solver_time_limit_seconds = 20;
  o.policies = {"dqn", "dqn+ilp", "dqn+ilp+search", "heat+ilp", "heat+ilp+search", "untrained-dqn+ilp+search"};
  o.checkpoints = {path};
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), 6u);
  for (const BenchmarkRow& r : rows) {
    EXPECT_TRUE(r.note.empty()) << r.policy << ": " << r.note;
    if (r.policy != "heat+ilp") EXPECT_EQ(r.plan_source, r.policy);  // a baseline's row names no source
    EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << r.policy;
  }
  // The ILP's plan is a start the search keeps unless it finds better; the
  // network's greedy episode is another.
  EXPECT_LE(rows[2].predicted_ns, rows[1].predicted_ns * (1 + 1e-9));
  EXPECT_LE(rows[2].predicted_ns, rows[0].predicted_ns * (1 + 1e-9));
  EXPECT_LE(rows[4].predicted_ns, rows[3].predicted_ns * (1 + 1e-9));
  EXPECT_GT(rows[2].decision_seconds, 0);
}

// dqn+polish: the greedy plan with no search move, its async copies
// scheduled and the polish; its ablations heat+polish and untrained-dqn+polish.
TEST(Benchmark, ThePolishedPipelineKeepsTheGreedyPlanUnlessTheCostModelPrefersAnEdit) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:4");
  const std::string path = SaveSeededDqn("polish.ckpt");
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    SCOPED_TRACE(mode == MigrationMode::kSync ? "sync" : "async");
    BenchmarkOptions o;
    o.mode = mode;
    o.dram_fractions = {0.3};
    o.measure = false;
    o.search.max_seconds = 20;
    o.policies = {"dqn",           "dqn+polish",           "heat", "heat+polish", "untrained-dqn",
                  "untrained-dqn+polish", "dqn+polish+search", "heat+polish+search"};
    o.checkpoints = {path};
    const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
    ASSERT_EQ(rows.size(), 8u);
    for (const BenchmarkRow& r : rows) {
      EXPECT_TRUE(r.note.empty()) << r.policy << ": " << r.note;
      EXPECT_EQ(r.plan_source, r.policy);
      EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << r.policy;
    }
    for (size_t greedy : {0u, 2u, 4u})
      EXPECT_LE(rows[greedy + 1].predicted_ns, rows[greedy].predicted_ns * (1 + 1e-9)) << rows[greedy + 1].policy;
    // Heat order's plan (DRAM while it fits, then the slow tier) leaves edits
    // that pay: the polish is not a copy of its start.
    EXPECT_LT(rows[3].predicted_ns, rows[2].predicted_ns * (1 - 1e-3));
    // +polish+search starts the search from that polished plan (here the
    // polish ends long before its half of the limit), and the search keeps
    // its start unless it finds better.
    EXPECT_LE(rows[6].predicted_ns, rows[1].predicted_ns * (1 + 1e-9));
    EXPECT_LE(rows[7].predicted_ns, rows[3].predicted_ns * (1 + 1e-9));
  }
}

// dqn+relax+search: the relaxation's plan (policies/relaxation.h) as a start
// of the search, in sync and async mode; its ablation heat+relax+search.
TEST(Benchmark, TheSearchFromTheRelaxationsPlanKeepsTheFasterStart) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:3");
  const std::string path = SaveSeededDqn("relax-search.ckpt");
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    BenchmarkOptions o;
    o.mode = mode;
    o.dram_fractions = {0.3};
    o.measure = false;
    // The greedy episode only: the relaxation's plan, if it is a start, is
    // the only way the search reaches it.
    o.search.max_rollouts = 1;
    o.search.polish_plan = false;
    o.solver_time_limit_seconds = 20;
    o.policies = {"dqn", "relaxation", "dqn+relax+search", "heat+relax+search"};
    o.checkpoints = {path};
    const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
    ASSERT_EQ(rows.size(), 4u);
    for (const BenchmarkRow& r : rows) {
      EXPECT_TRUE(r.note.empty()) << r.policy << ": " << r.note;
      if (r.policy != "relaxation") EXPECT_EQ(r.plan_source, r.policy);
      EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << r.policy;
    }
    ASSERT_GT(rows[0].predicted_ns, rows[1].predicted_ns) << "the untrained network's plan should be the slower start";
    EXPECT_LE(rows[2].predicted_ns, rows[1].predicted_ns * (1 + 1e-9)) << MigrationModeName(mode);
    EXPECT_LE(rows[3].predicted_ns, rows[1].predicted_ns * (1 + 1e-9)) << MigrationModeName(mode);
    // The relaxation's bound, named for the mode it holds in.
    const std::string dir = TempPath(std::string("relax-search-") + MigrationModeName(mode));
    WriteBenchmarkResults(dir, rows);
    const std::string md = ReadFile(dir + "/bench.md");
    const std::string status = mode == MigrationMode::kSync ? "relaxation at 0.30: relaxation, gap "
                                                            : "relaxation at 0.30: async bound, gap ";
    const std::string ceiling = mode == MigrationMode::kSync ? "no sync plan above " : "no async plan above ";
    const size_t at = md.find(status);
    ASSERT_NE(at, std::string::npos) << md;
    EXPECT_NE(md.find(ceiling, at), std::string::npos) << md;
    EXPECT_GE(rows[1].solver_bound_relative, rows[1].predicted_relative - 1e-9);
  }
}

// dqn+portfolio: the fastest of the members' greedy plans, named by its
// member; dqn+portfolio+search: the search that member guides, from it.
TEST(Benchmark, ThePortfolioKeepsItsFastestMembersPlanAndSearchesFromIt) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:3");
  const std::string dir = TempPath("portfolio");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (uint64_t seed : {1, 2, 3}) {
    DqnConfig config;
    config.seed = seed;
    config.device = "cpu";
    paths.push_back(dir + "/member-" + std::to_string(seed) + ".ckpt");
    MakeAgent("dqn", config.ToJson())->SaveCheckpoint(paths.back());
  }
  BenchmarkOptions o;
  o.dram_fractions = {0.4};
  o.measure = false;
  o.search.max_seconds = 20;
  o.search.polish_plan = false;  // the searches' own plans: the polish takes them to one optimum here
  o.policies = {"dqn"};
  std::vector<double> member_ns;
  for (const std::string& p : paths) {
    o.checkpoints = {p};
    member_ns.push_back(RunBenchmark(w, o).at(0).predicted_ns);
  }
  ASSERT_FALSE(member_ns[0] == member_ns[1] && member_ns[1] == member_ns[2]) << "the members should place differently";
  const size_t fastest = std::min_element(member_ns.begin(), member_ns.end()) - member_ns.begin();
  o.checkpoints.clear();
  o.portfolio = {dir};
  o.portfolio_search_starts = 1;
  o.policies = {"dqn+portfolio", "dqn+portfolio+search"};
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), 2u);
  for (const BenchmarkRow& r : rows) {
    EXPECT_TRUE(r.note.empty()) << r.policy << ": " << r.note;
    EXPECT_NE(r.plan_source.find("member-" + std::to_string(fastest + 1) + ".ckpt"), std::string::npos) << r.plan_source;
    EXPECT_NE(r.plan_source.find(" of 3)"), std::string::npos) << r.plan_source;
    EXPECT_GT(r.decision_seconds, 0);
  }
  EXPECT_DOUBLE_EQ(rows[0].predicted_ns, member_ns[fastest]);
  EXPECT_LE(rows[1].predicted_ns, rows[0].predicted_ns * (1 + 1e-9));
  // The same search guided by that member alone.
  o.portfolio.clear();
  o.checkpoints = {paths[fastest]};
  o.policies = {"dqn+search"};
  EXPECT_DOUBLE_EQ(RunBenchmark(w, o).at(0).predicted_ns, rows[1].predicted_ns);
  // Searches from every member, each guided by its own network: the fastest
  // of the three searches, named (the default searches from up to 8).
  std::vector<double> searched_ns;
  for (const std::string& p : paths) {
    o.checkpoints = {p};
    searched_ns.push_back(RunBenchmark(w, o).at(0).predicted_ns);
  }
  o.checkpoints.clear();
  o.portfolio = {dir};
  o.portfolio_search_starts = 3;
  o.policies = {"dqn+portfolio+search"};
  const BenchmarkRow multi = RunBenchmark(w, o).at(0);
  EXPECT_TRUE(multi.note.empty()) << multi.note;
  EXPECT_DOUBLE_EQ(multi.predicted_ns, *std::min_element(searched_ns.begin(), searched_ns.end()));
  // Here another member's search beats the chosen member's (its greedy plan
  // is the fastest, its search's result is not).
  EXPECT_LT(multi.predicted_ns, rows[1].predicted_ns);
  EXPECT_NE(multi.plan_source.find("best of 3 searches"), std::string::npos) << multi.plan_source;
  bool named = false;
  for (size_t i = 0; i < paths.size(); ++i)
    named |= searched_ns[i] == multi.predicted_ns &&
             multi.plan_source.find("member-" + std::to_string(i + 1) + ".ckpt") != std::string::npos;
  EXPECT_TRUE(named) << multi.plan_source;
  o.portfolio.clear();
  // No portfolio: the row says what is missing; a portfolio of another family is refused by name.
  o.policies = {"dqn+portfolio", "sac+portfolio"};
  std::vector<BenchmarkRow> missing = RunBenchmark(w, o);
  EXPECT_NE(missing.at(0).note.find("--portfolio"), std::string::npos) << missing[0].note;
  o.portfolio = {dir};
  missing = RunBenchmark(w, o);
  EXPECT_TRUE(missing.at(0).note.empty()) << missing[0].note;
  EXPECT_NE(missing.at(1).note.find("holds dqn networks"), std::string::npos) << missing[1].note;
}

TEST(Benchmark, LearnedPolicyWithoutCheckpointIsAClearError) {
  BenchmarkOptions o;
  o.policies = {"dqn"};
  o.measure = false;
  const Workload w = LoadWorkloadSpec("synthetic:tiny");
  try {
    RunBenchmark(w, o);
    FAIL() << "no checkpoint given";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--checkpoint"), std::string::npos) << e.what();
  }
  // A checkpoint for another workload leaves this one without an agent: the
  // row says so and the other policies still run.
  o.policies = {"all-slow", "dqn"};
  o.checkpoints = {"some-other-model=" + SaveAgent("dqn")};
  std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), o.dram_fractions.size() * 2);
  for (const BenchmarkRow& r : rows) {
    if (r.policy == "dqn") EXPECT_NE(r.note.find("needs --checkpoint"), std::string::npos) << r.note;
    else EXPECT_TRUE(r.note.empty()) << r.note;
  }
  // A file that is no checkpoint is refused with both formats named.
  const std::string junk = TempPath("junk.ckpt");
  WriteFileAtomically(junk, "not a checkpoint");
  o.checkpoints = {junk};
  EXPECT_THROW(RunBenchmark(w, o), std::runtime_error);
}

// Per-round ratios cancel what load does to a whole round: all-DRAM and the
// plan both twice as slow in one round leave the plan at half of all-DRAM.
TEST(Benchmark, RoundRatiosCancelALoadedRoundAndFlagPlansFasterThanAllDram) {
  const std::vector<double> all_dram = {100, 200, 100, 101, 99};
  RoundComparison c = CompareToAllDram({200, 400, 200, 202, 198}, all_dram);
  EXPECT_DOUBLE_EQ(c.relative, 0.5);
  EXPECT_DOUBLE_EQ(c.low, 0.5);
  EXPECT_DOUBLE_EQ(c.high, 0.5);
  EXPECT_DOUBLE_EQ(c.confidence, 0.9375);
  EXPECT_FALSE(c.faster_than_all_dram);
  // Rounds that disagree give an interval around the median.
  c = CompareToAllDram({190, 380, 195, 200, 198}, all_dram);
  EXPECT_LT(c.low, c.relative);
  EXPECT_GT(c.high, c.relative);
  c = CompareToAllDram({95, 190, 99, 100, 97}, all_dram);
  EXPECT_TRUE(c.faster_than_all_dram);
  EXPECT_THROW(CompareToAllDram({1, 2}, {1}), std::invalid_argument);
}

// The normalised clock's arithmetic: the computing part (the time less the
// emulated waits and copies) is scaled by the profile's speed over the
// round's all-DRAM speed; what the emulated device and the copies took stays.
TEST(Benchmark, NormalisedClockScalesTheComputingPartAlone) {
  EXPECT_DOUBLE_EQ(NormalisedRoundNs(100, 100, 240, 200), 100);  // all waiting: unchanged
  EXPECT_DOUBLE_EQ(NormalisedRoundNs(300, 100, 400, 200), 200);  // computing twice as slow: halved
  EXPECT_DOUBLE_EQ(NormalisedRoundNs(150, 50, 180, 200), 50 + 100 * 200.0 / 180);  // faster than the profile
  EXPECT_DOUBLE_EQ(NormalisedRoundNs(240, 0, 240, 200), 200);  // all-DRAM itself: the reference
  EXPECT_DOUBLE_EQ(NormalisedRoundNs(90, 100, 240, 200), 100);  // waits counted above the time: no negative computing
}

// Real iterations of a real model on this host's slow tier: the measured
// columns are filled and name their backend; all-DRAM and all-slow run in
// every round.
TEST(Benchmark, MeasuredRowsOnRealIterations) {
  const Workload w = testing::ProfiledWithTimesFromSizes("alexnet", 1, 32);
  BenchmarkOptions o = testing::MeasuredBenchmark({"all-slow", "first-touch", "autotm-sync"}, 0.3, 3);
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), 3u);
  for (const BenchmarkRow& r : rows) {
    ASSERT_TRUE(r.measured) << r.policy << ": " << r.note;
    EXPECT_EQ(r.backend, "emulated:optane-dcpmm");
    EXPECT_GT(r.measured_ns, 0);
    EXPECT_GT(r.measured_relative, 0);
    EXPECT_EQ(r.measured_rounds, 3u);
    EXPECT_LE(r.measured_relative_low, r.measured_relative);
    EXPECT_GE(r.measured_relative_high, r.measured_relative);
    EXPECT_DOUBLE_EQ(r.measured_relative_confidence, 0.75);
    EXPECT_EQ(r.faster_than_all_dram, r.measured_relative > 1);
    EXPECT_GT(r.measured_all_slow_relative, 0);
    EXPECT_EQ(r.measured_all_slow_relative, rows[0].measured_all_slow_relative);
    EXPECT_GT(r.measured_all_dram_ns, 0);
    EXPECT_EQ(r.measured_all_dram_ns, rows[0].measured_all_dram_ns);  // the rounds' references, shared
    EXPECT_GT(r.measured_all_slow_ns, r.measured_all_dram_ns);
    // By default the normalised clock: all-DRAM reads the cost model's time
    // in every round, and the plans' emulated time stays whole.
    EXPECT_EQ(r.measured_clock, "normalised");
    EXPECT_DOUBLE_EQ(r.measured_all_dram_ns, MinCostNs(w));
    EXPECT_NEAR(r.measured_relative, r.measured_all_dram_ns / r.measured_ns, 0.25 * r.measured_relative);
    EXPECT_GT(r.measured_wall_ns, 0);
    EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << r.policy;
    EXPECT_EQ(r.oom_events, 0u) << r.policy;
  }
  o.clock = "sundial";
  EXPECT_THROW(RunBenchmark(w, o), std::invalid_argument);
  EXPECT_GT(rows[0].measured_ns, rows[0].measured_emulated_delay_ns);  // all-slow
  EXPECT_LT(rows[0].measured_relative, 1);
  // The undisturbed clock as measured: the rounds' own all-DRAM runs.
  o.clock = "undisturbed";
  const std::vector<BenchmarkRow> undisturbed = RunBenchmark(w, o);
  ASSERT_EQ(undisturbed.size(), 3u);
  for (const BenchmarkRow& r : undisturbed) {
    ASSERT_TRUE(r.measured) << r.policy << ": " << r.note;
    EXPECT_EQ(r.measured_clock, "undisturbed");
    EXPECT_NE(r.measured_all_dram_ns, MinCostNs(w));
    EXPECT_GT(r.measured_all_slow_ns, r.measured_all_dram_ns);
  }
  // All-slow reads everything from the slow tier: the emulated device adds time.
  EXPECT_GT(rows[0].measured_emulated_delay_ns, 0);
  EXPECT_EQ(rows[0].measured_bytes_migrated, 0u);
  // The ILP's plan migrates as predicted during the iteration, the copies
  // back of persistent tensors it ends elsewhere included. Set-up before an
  // iteration (measured_setup_bytes, not timed) puts back at most the
  // tensors whose room in a region was taken; it once laid out whole regions
  // again (54.7 MB on this plan for 46.9 MB of migrations).
  EXPECT_EQ(rows[2].measured_bytes_migrated - rows[2].measured_setup_bytes, rows[2].bytes_migrated)
      << "refused " << rows[2].migrations_refused << " skipped " << rows[2].migrations_skipped;
  EXPECT_GT(rows[2].bytes_migrated, 0u);
  EXPECT_LT(rows[2].measured_setup_bytes, rows[2].bytes_migrated);

  // A plan given as such (train's final plan), measured in rounds the same way.
  o.clock = "normalised";
  PlacementPlan given = PlacementPlan::Uniform(w, Tier::kSlow, rows[0].dram_limit_bytes);
  const std::vector<BenchmarkRow> measured = MeasurePlans(w, o, {{"dqn-greedy v7", given}});
  ASSERT_EQ(measured.size(), 1u);
  ASSERT_TRUE(measured[0].measured) << measured[0].note;
  EXPECT_EQ(measured[0].policy, "dqn-greedy v7");
  EXPECT_EQ(measured[0].backend, "emulated:optane-dcpmm");
  EXPECT_EQ(measured[0].measured_rounds, 3u);
  EXPECT_GT(measured[0].predicted_ns, 0);
  EXPECT_GT(measured[0].measured_all_slow_ns, measured[0].measured_all_dram_ns);
  EXPECT_THROW(MeasurePlans(LoadWorkloadSpec("synthetic:vgg:3"), o, {}), std::invalid_argument);  // no model to run
}

// "+ilp+measured": the guided ILP's candidate plans (the greedy plan, each
// formulation's best, plans on the way) run on real iterations at plan time,
// and the fastest kept; the row names which candidate, and its measured
// figure is the bench's own rounds. With no real iterations it is a clear
// error on its row, and the other rows are unharmed.
TEST(Benchmark, TheMeasuredIlpKeepsOneOfItsCandidatesAndNamesIt) {
  const Workload w = testing::ProfiledWithTimesFromSizes("alexnet", 1, 32);
  BenchmarkOptions o = testing::MeasuredBenchmark({"heat+ilp+measured", "dqn+ilp+measured"}, 0.3, 2);
  o.mode = MigrationMode::kAsync;
  o.plan_time_rounds = 2;
  o.checkpoints = {SaveAgent("dqn")};
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), 2u);
  const std::set<std::string> sources = {"greedy", "synchronous", "asynchronous"};
  for (const BenchmarkRow& r : rows) {
    ASSERT_TRUE(r.measured) << r.policy << ": " << r.note;
    EXPECT_EQ(r.measured_rounds, 2u);
    EXPECT_EQ(r.oom_events, 0u);
    EXPECT_EQ(r.migrations_refused + r.migrations_skipped, 0u);
    const std::string prefix = r.policy + " (";
    ASSERT_EQ(r.plan_source.rfind(prefix, 0), 0u) << r.plan_source;
    std::string source = r.plan_source.substr(prefix.size(), r.plan_source.size() - prefix.size() - 1);
    source = source.substr(0, source.find(','));  // "asynchronous, improvement 2 of 5"
    EXPECT_EQ(sources.count(source), 1u) << r.plan_source;
  }
  const std::string dir = TempPath("measured_ilp");
  WriteBenchmarkResults(dir, rows);
  const nlohmann::json json = nlohmann::json::parse(ReadFile(dir + "/bench.json"));
  EXPECT_EQ(json[0]["plan_source"], rows[0].plan_source);

  o.measure = false;
  o.policies = {"first-touch", "heat+ilp+measured"};
  const std::vector<BenchmarkRow> unmeasured = RunBenchmark(w, o);
  ASSERT_EQ(unmeasured.size(), 2u);
  EXPECT_TRUE(unmeasured[0].note.empty()) << unmeasured[0].note;
  EXPECT_GT(unmeasured[0].predicted_ns, 0);
  EXPECT_NE(unmeasured[1].note.find("measures plans on real iterations at plan time"), std::string::npos)
      << unmeasured[1].note;
}

}  // namespace
}  // namespace tensortier
