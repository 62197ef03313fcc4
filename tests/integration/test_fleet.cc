// A learner and two workers as separate processes on loopback, started with
// the same command lines a user types.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/files.h"
#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"
#include "tests/integration/process.h"
#include "tests/common/csv_rows.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

using testing::ReadCsv;
using testing::TempDir;

TEST(Fleet, LearnerAndTwoWorkerProcessesTrainEndToEnd) {
  const std::string dir = TempDir("fleet");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePort());
  const std::string workload = "synthetic:resnet:4:1048576";
  ChildProcess learner({"learner", "--bind", endpoint, "--workload", workload, "--episodes", "400", "--min-workers", "2",
                        "--epsilon-decay-episodes", "250", "--heartbeat-ms", "200", "--out", dir + "/run"},
                       dir + "/learner.log");
  ChildProcess w1({"worker", "--connect", endpoint, "--name", "w1", "--give-up-seconds", "60"}, dir + "/w1.log");
  ChildProcess w2({"worker", "--connect", endpoint, "--name", "w2", "--give-up-seconds", "60"}, dir + "/w2.log");

  ASSERT_EQ(learner.Wait(std::chrono::seconds(240)), 0) << ReadFile(dir + "/learner.log");
  // Workers leave when the learner says training is over.
  EXPECT_EQ(w1.Wait(std::chrono::seconds(20)), 0) << ReadFile(dir + "/w1.log");
  EXPECT_EQ(w2.Wait(std::chrono::seconds(20)), 0) << ReadFile(dir + "/w2.log");

  // Episodes arrived from both workers.
  auto rows = ReadCsv(dir + "/run/metrics.csv");
  ASSERT_EQ(rows.size(), 401u);
  ASSERT_EQ(rows[0][1], "worker_id");
  ASSERT_EQ(rows[0][3], "policy_version");
  std::set<std::string> workers;
  uint64_t first_version = std::stoull(rows[1][3]), last_version = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    workers.insert(rows[i][1]);
    last_version = std::max<uint64_t>(last_version, std::stoull(rows[i][3]));
  }
  EXPECT_EQ(workers.size(), 2u);
  // The weights version advanced, and workers acted with new weights.
  EXPECT_GT(last_version, first_version + 100);

  auto summary = nlohmann::json::parse(ReadFile(dir + "/run/summary.json"));
  EXPECT_EQ(summary["episodes"], 400);
  EXPECT_GT(summary["updates"].get<uint64_t>(), 1000u);
  EXPECT_EQ(summary["counters"]["malformed_frames"], 0);

  // The final plan beats first-touch on the cost model.
  Workload w = ReadWorkloadFile(dir + "/run/workload.ttwl");
  PlacementPlan plan = ReadPlanFile(dir + "/run/final_plan.ttplan");
  CostReport learned = EvaluatePlan(w, plan);
  CostReport first_touch = EvaluatePlan(w, FirstTouchPlan(w, plan.dram_limit_bytes));
  EXPECT_FALSE(learned.oom);
  EXPECT_LE(learned.dram_peak_bytes, plan.dram_limit_bytes);
  EXPECT_LT(learned.total_ns, first_touch.total_ns);
  EXPECT_EQ(w.Signature(), LoadWorkloadSpec(workload).Signature());

  // The comparison: references, the default baselines, the greedy policy,
  // the search and the best training episode; the final plan's row is marked.
  auto comparison = nlohmann::json::parse(ReadFile(dir + "/run/comparison.json"));
  EXPECT_EQ(comparison[1]["policy"], "first-touch");
  std::set<std::string> sources;
  int finals = 0;
  for (const auto& row : comparison) {
    const std::string source = row["source"];
    // "plan-time search from relaxation's plan": where it went on from.
    sources.insert(source.rfind("plan-time search", 0) == 0 ? "plan-time search"
                                                             : source.substr(0, source.find(" (final plan)")));
    if (source.find("(final plan)") != std::string::npos) {
      ++finals;
      EXPECT_DOUBLE_EQ(row["runtime_ns"].get<double>(), learned.total_ns);
    }
  }
  EXPECT_EQ(finals, 1);
  EXPECT_EQ(sources, (std::set<std::string>{"reference", "baseline", "greedy policy", "plan-time search",
                                            "plan-time ILP", "best episode seen in training"}));
  ASSERT_TRUE(summary.contains("plan_ilp"));
  EXPECT_FALSE(summary["plan_ilp"]["solves"].empty());
  // The search after training starts from the ILP's plan and from the
  // fastest baseline's too (the MDP replays a sync plan exactly), so it is
  // never slower than either.
  ASSERT_TRUE(summary.contains("plan_search"));
  const int start = summary["plan_search"]["starting_plan"].get<int>();
  EXPECT_TRUE(start >= -1 && start <= 1) << start;
  const std::string started_from = summary["plan_search"]["started_from"];
  EXPECT_EQ(started_from.empty(), start == -1) << started_from;
  double searched_ns = 0, ilp_ns = 0, fastest_baseline_ns = 1e300;
  std::string searched_source;
  for (const auto& row : comparison) {
    const std::string source = row["source"];
    if (source.rfind("plan-time search", 0) == 0) searched_ns = row["runtime_ns"].get<double>(), searched_source = source;
    if (source.rfind("plan-time ILP", 0) == 0) ilp_ns = row["runtime_ns"].get<double>();
    if (source == "baseline" && !row["oom"].get<bool>())
      fastest_baseline_ns = std::min(fastest_baseline_ns, row["runtime_ns"].get<double>());
  }
  if (!started_from.empty())
    EXPECT_NE(searched_source.find("from " + started_from + "'s plan"), std::string::npos) << searched_source;
  ASSERT_GT(ilp_ns, 0);
  EXPECT_LE(searched_ns, ilp_ns * (1 + 1e-9));
  EXPECT_LE(searched_ns, fastest_baseline_ns * (1 + 1e-9));
  EXPECT_EQ(summary["final_plan"]["source"].get<std::string>().empty(), false);
  EXPECT_TRUE(summary["imitation"].contains("expert"));
  fs::remove_all(dir);
}

TEST(Fleet, WorkerReconnectsToALearnerThatStartsLate) {
  const std::string dir = TempDir("late");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePort());
  ChildProcess worker({"worker", "--connect", endpoint, "--give-up-seconds", "60"}, dir + "/w.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ChildProcess learner({"learner", "--bind", endpoint, "--workload", "synthetic:tiny:3:65536", "--episodes", "20",
                        "--heartbeat-ms", "200", "--out", dir + "/run"},
                       dir + "/learner.log");
  ASSERT_EQ(learner.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/learner.log");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(20)), 0) << ReadFile(dir + "/w.log");
  EXPECT_EQ(ReadCsv(dir + "/run/metrics.csv").size(), 21u);
  fs::remove_all(dir);
}

TEST(Fleet, ARunsConfigFileReproducesItsSettings) {
  const std::string dir = TempDir("config");
  ChildProcess first({"train", "--workload", "synthetic:tiny:3:65536", "--episodes", "6", "--hidden", "48", "24",
                      "--workers", "1", "--out", dir + "/a"},
                     dir + "/a.log");
  ASSERT_EQ(first.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/a.log");
  const std::string config = ReadFile(dir + "/a/config.toml");
  EXPECT_NE(config.find("train.hidden=[48, 24]"), std::string::npos) << config;
  // The file alone (plus a new output directory) runs the same training.
  ChildProcess again({"--config", dir + "/a/config.toml", "train", "--out", dir + "/b"}, dir + "/b.log");
  ASSERT_EQ(again.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/b.log");
  const std::string replayed = ReadFile(dir + "/b/config.toml");
  EXPECT_NE(replayed.find("train.hidden=[48, 24]"), std::string::npos);
  EXPECT_NE(replayed.find("train.workload=\"synthetic:tiny:3:65536\""), std::string::npos);
  EXPECT_EQ(ReadCsv(dir + "/b/metrics.csv").size(), 7u);
  fs::remove_all(dir);
}

// A workload file (not a synthetic spec) is recorded as the run's own copy,
// so the config file repeats the run after the original is gone.
TEST(Fleet, ARunsConfigFileNamesItsWorkload) {
  const std::string dir = TempDir("config-workload");
  ChildProcess gen({"generate", "--shape", "tiny", "--layers", "3", "--base-bytes", "65536", "--out",
                    dir + "/w.ttwl"},
                   dir + "/gen.log");
  ASSERT_EQ(gen.Wait(std::chrono::seconds(60)), 0) << ReadFile(dir + "/gen.log");
  ChildProcess first({"train", "--workload", dir + "/w.ttwl", "--episodes", "3", "--workers", "1",
                      "--metrics-address", "off", "--baselines", "none", "--demonstrations", "none", "--out",
                      dir + "/a"},
                     dir + "/a.log");
  ASSERT_EQ(first.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/a.log");
  const std::string config = ReadFile(dir + "/a/config.toml");
  EXPECT_NE(config.find("train.workload=\"" + (fs::absolute(dir) / "a/workload.ttwl").lexically_normal().string() +
                        "\""),
            std::string::npos)
      << config;
  EXPECT_EQ(config.find("train.out"), std::string::npos) << config;
  EXPECT_EQ(config.find("learner."), std::string::npos) << config;
  fs::remove(dir + "/w.ttwl");
  ChildProcess again({"--config", dir + "/a/config.toml", "train", "--out", dir + "/b"}, dir + "/b.log");
  ASSERT_EQ(again.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/b.log");
  EXPECT_EQ(ReadWorkloadFile(dir + "/b/workload.ttwl").Signature(),
            ReadWorkloadFile(dir + "/a/workload.ttwl").Signature());
  EXPECT_EQ(ReadCsv(dir + "/b/metrics.csv").size(), 4u);
  fs::remove_all(dir);
}

// Mistakes in config files are errors naming the file, the line and the key;
// they used to be ignored (exit 0), and a deeply nested array crashed (139).
TEST(Fleet, ConfigFileMistakesAreErrors) {
  const std::string dir = TempDir("config-bad");
  struct Case {
    std::string name, text, message;
  };
  const std::vector<Case> cases = {
      {"typo", "[train]\nepisdoes = 3\n", "bad.toml:2: unknown key 'train.episdoes' (did you mean 'train.episodes'?)"},
      {"underscore", "train.dram_fraction = 0.3\n", "did you mean 'train.dram-fraction'?"},
      {"header", "[train\nepisodes = 3\n", "bad.toml:1: unterminated section header '[train'"},
      {"string", "train.workload = \"synthetic:tiny\n", "bad.toml:1: unterminated string"},
      {"binary", std::string("\x7f\x45\x4c\x46\x02\x01\x01\x00", 8), "bad.toml:1: binary data"},
      {"deep", "train.hidden = " + std::string(80000, '[') + std::string(80000, ']') + "\n",
       "bad.toml:1: arrays inside arrays"},
  };
  for (const Case& c : cases) {
    fs::create_directories(dir + "/" + c.name);
    const std::string file = dir + "/" + c.name + "/bad.toml";
    WriteFileAtomically(file, c.text);
    ChildProcess p({"--config", file, "train", "--workload", "synthetic:tiny:2", "--episodes", "1", "--workers", "1",
                    "--out", dir + "/" + c.name + "/run"},
                   dir + "/" + c.name + ".log");
    const int exit = p.Wait(std::chrono::seconds(60));
    const std::string log = ReadFile(dir + "/" + c.name + ".log");
    EXPECT_NE(exit, 0) << c.name << ": " << log;
    EXPECT_NE(exit, 139) << c.name << ": " << log;
    EXPECT_NE(log.find(c.message), std::string::npos) << c.name << ": " << log;
    EXPECT_FALSE(fs::exists(dir + "/" + c.name + "/run")) << c.name;
  }
  fs::remove_all(dir);
}

// `pretrain` leaves a network that `bench --checkpoint` rolls out on a model
// it never saw; it refuses a used run directory and an unknown expert.
TEST(Fleet, PretrainWritesANetworkThatPlacesAnUnseenModel) {
  const std::string dir = TempDir("pretrain");
  ChildProcess p({"pretrain", "--workloads", "synthetic:vgg:4", "synthetic:resnet:4", "--validation-workloads",
                  "synthetic:mobilenet:3", "--dram-fractions", "0.2", "0.4", "--dagger-rounds", "2", "--polish-updates",
                  "1500", "--seeds", "2", "--portfolio-size", "3", "--out", dir + "/run"},
                 dir + "/p.log");
  ASSERT_EQ(p.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/p.log");
  EXPECT_TRUE(fs::exists(dir + "/run/checkpoints/dqn.ckpt"));
  EXPECT_TRUE(fs::exists(dir + "/run/pretrain.log"));
  // Each workload once per fraction; the validation workload too, marked so.
  const std::string csv = ReadFile(dir + "/run/corpus.csv");
  for (const char* row : {"\"vgg-like-4@0.2\",0,0.2,", "\"vgg-like-4@0.4\",0,0.4,", "\"resnet-like-4@0.2\",0,0.2,",
                          "\"resnet-like-4@0.4\",0,0.4,", "\"mobilenet-like-3@0.2\",1,0.2,", "\"mobilenet-like-3@0.4\",1,0.4,"})
    EXPECT_NE(csv.find(row), std::string::npos) << row << "\n" << csv;
  EXPECT_NE(ReadFile(dir + "/p.log").find("validation"), std::string::npos) << ReadFile(dir + "/p.log");
  // The portfolio: each seed's three best rounds, ranked.
  std::vector<std::string> members;
  for (const auto& entry : fs::directory_iterator(dir + "/run/checkpoints/portfolio"))
    members.push_back(entry.path().filename().string());
  std::sort(members.begin(), members.end());
  ASSERT_EQ(members.size(), 6u);
  EXPECT_EQ(members[0].rfind("seed-1-rank-00-round-", 0), 0u) << members[0];
  EXPECT_EQ(members[3].rfind("seed-2-rank-00-round-", 0), 0u) << members[3];
  EXPECT_NE(ReadFile(dir + "/p.log").find("seed 2, DAgger round 1:"), std::string::npos) << ReadFile(dir + "/p.log");
  // The second seed learns what it learns alone, bit for bit (before
  // InitTorchThreads, a process's first imitation summed its first matrix
  // products on other threads than the ones after it).
  ChildProcess alone({"pretrain", "--workloads", "synthetic:vgg:4", "synthetic:resnet:4", "--validation-workloads",
                      "synthetic:mobilenet:3", "--dram-fractions", "0.2", "0.4", "--dagger-rounds", "2",
                      "--polish-updates", "1500", "--seed", "2", "--portfolio-size", "3", "--out", dir + "/alone"},
                     dir + "/alone.log");
  ASSERT_EQ(alone.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/alone.log");
  std::vector<std::string> alone_members;
  for (const auto& entry : fs::directory_iterator(dir + "/alone/checkpoints/portfolio"))
    alone_members.push_back(entry.path().filename().string());
  std::sort(alone_members.begin(), alone_members.end());
  ASSERT_EQ(alone_members.size(), 3u);
  for (size_t i = 0; i < alone_members.size(); ++i) {
    EXPECT_EQ(members[3 + i], "seed-2-" + alone_members[i]);
    EXPECT_TRUE(ReadFile(dir + "/run/checkpoints/portfolio/" + members[3 + i]) ==
                ReadFile(dir + "/alone/checkpoints/portfolio/" + alone_members[i]))
        << members[3 + i] << " differs from " << alone_members[i] << " of the run of seed 2 alone";
  }
  EXPECT_NE(ReadFile(dir + "/run/corpus.md").find(" of 2 seeds)"), std::string::npos) << ReadFile(dir + "/run/corpus.md");
  EXPECT_NE(ReadFile(dir + "/run/corpus.md").find("Portfolio ("), std::string::npos) << ReadFile(dir + "/run/corpus.md");
  ChildProcess b({"bench", "--workload", "synthetic:mobilenet:4", "--policies", "first-touch", "dqn", "dqn+portfolio",
                  "dqn+portfolio+search", "--checkpoint", dir + "/run/checkpoints/dqn.ckpt", "--portfolio",
                  dir + "/run/checkpoints/portfolio", "--portfolio-search-starts", "2", "--search-seconds", "30",
                  "--dram-fractions", "0.2", "--cost-model-only", "--out", dir + "/bench"},
                 dir + "/b.log");
  ASSERT_EQ(b.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/b.log");
  EXPECT_NE(ReadFile(dir + "/b.log").find("dqn "), std::string::npos) << ReadFile(dir + "/b.log");
  double greedy_ns = 0, portfolio_ns = 0, searched_ns = 0;
  for (const auto& row : ReadCsv(dir + "/bench/bench.csv")) {
    if (row.size() < 6) continue;
    if (row[1] == "dqn") greedy_ns = std::stod(row[5]);
    if (row[1] == "dqn+portfolio") portfolio_ns = std::stod(row[5]);
    if (row[1] == "dqn+portfolio+search") searched_ns = std::stod(row[5]);
  }
  ASSERT_GT(greedy_ns, 0);
  EXPECT_GT(portfolio_ns, 0);
  EXPECT_LE(portfolio_ns, greedy_ns * (1 + 1e-9)) << "the kept round is one of the portfolio's members";
  EXPECT_GT(searched_ns, 0);
  EXPECT_LE(searched_ns, portfolio_ns * (1 + 1e-9)) << "the search starts from the chosen member's plan";
  EXPECT_NE(ReadFile(dir + "/bench/bench.csv").find("best of 2 searches"), std::string::npos)
      << ReadFile(dir + "/bench/bench.csv");
  // Fine-tuning from the run directory starts from the member fastest on the model.
  ChildProcess t({"train", "--workload", "synthetic:mobilenet:4", "--init", dir + "/run", "--demonstrations", "none",
                  "--episodes", "2", "--workers", "1", "--cost-model-only", "--ilp-seconds", "0", "--out",
                  dir + "/fine-tune"},
                 dir + "/t.log");
  ASSERT_EQ(t.Wait(std::chrono::seconds(180)), 0) << ReadFile(dir + "/t.log");
  EXPECT_NE(ReadFile(dir + "/fine-tune/train.log").find("initialized_from_portfolio"), std::string::npos)
      << ReadFile(dir + "/t.log");
  // Its file for hosts, with no plan of its own: the network and the cells,
  // keyed by a DRAM fraction of the workload it is rolled out on; a host's
  // plan for the unseen model comes from it.
  ChildProcess e({"export", "--checkpoint", dir + "/run/checkpoints/dqn.ckpt", "--workload", "synthetic:vgg:4",
                  "--dram-fraction", "0.2", "--out", dir + "/corpus.ttlookup"},
                 dir + "/e.log");
  ASSERT_EQ(e.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/e.log");
  EXPECT_NE(ReadFile(dir + "/e.log").find("(no plan table)"), std::string::npos) << ReadFile(dir + "/e.log");
  EXPECT_NE(ReadFile(dir + "/e.log").find("hosts decide with it"), std::string::npos) << ReadFile(dir + "/e.log");
  ChildProcess l({"bench", "--workload", "synthetic:mobilenet:4", "--policies", "dqn", "lookup:" + dir + "/corpus.ttlookup",
                  "--checkpoint", dir + "/run/checkpoints/dqn.ckpt", "--dram-fractions", "0.2", "--cost-model-only",
                  "--out", dir + "/bench_lookup"},
                 dir + "/l.log");
  ASSERT_EQ(l.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/l.log");
  EXPECT_NE(ReadFile(dir + "/l.log").find("(generalised)"), std::string::npos) << ReadFile(dir + "/l.log");
  // The file's plan is the network's: the same predicted time.
  std::string network_ns, file_ns;
  for (const auto& row : ReadCsv(dir + "/bench_lookup/bench.csv")) {
    if (row.size() < 6) continue;
    if (row[1] == "dqn") network_ns = row[5];
    if (row[1].rfind("lookup:", 0) == 0) file_ns = row[5];
  }
  EXPECT_FALSE(network_ns.empty());
  EXPECT_EQ(file_ns, network_ns);
  // From the portfolio: the member fastest on the model goes into the file.
  ChildProcess pe({"export", "--checkpoint", dir + "/run/checkpoints/portfolio", "--workload", "synthetic:mobilenet:4",
                   "--dram-fraction", "0.2", "--out", dir + "/portfolio.ttlookup"},
                  dir + "/pe.log");
  ASSERT_EQ(pe.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/pe.log");
  EXPECT_NE(ReadFile(dir + "/pe.log").find("portfolio       " + dir + "/run/checkpoints/portfolio/seed-"),
            std::string::npos)
      << ReadFile(dir + "/pe.log");
  ChildProcess pl({"bench", "--workload", "synthetic:mobilenet:4", "--policies", "dqn+portfolio",
                   "lookup:" + dir + "/portfolio.ttlookup", "--portfolio", dir + "/run/checkpoints/portfolio",
                   "--dram-fractions", "0.2", "--cost-model-only", "--out", dir + "/bench_portfolio"},
                  dir + "/pl.log");
  ASSERT_EQ(pl.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/pl.log");
  std::string chosen_ns, exported_ns;
  for (const auto& row : ReadCsv(dir + "/bench_portfolio/bench.csv")) {
    if (row.size() < 6) continue;
    if (row[1] == "dqn+portfolio") chosen_ns = row[5];
    if (row[1].rfind("lookup:", 0) == 0) exported_ns = row[5];
  }
  EXPECT_FALSE(chosen_ns.empty());
  EXPECT_EQ(exported_ns, chosen_ns);
  ChildProcess used({"pretrain", "--workloads", "synthetic:vgg:4", "--out", dir + "/run"}, dir + "/used.log");
  EXPECT_EQ(used.Wait(std::chrono::seconds(60)), 2);
  EXPECT_NE(ReadFile(dir + "/used.log").find("is not empty"), std::string::npos) << ReadFile(dir + "/used.log");
  ChildProcess expert({"pretrain", "--workloads", "synthetic:vgg:4", "--demonstrations", "autotm-snyc", "--out",
                       dir + "/expert"},
                      dir + "/expert.log");
  EXPECT_EQ(expert.Wait(std::chrono::seconds(60)), 2);
  EXPECT_NE(ReadFile(dir + "/expert.log").find("unknown policy 'autotm-snyc'"), std::string::npos)
      << ReadFile(dir + "/expert.log");
  fs::remove_all(dir);
}

TEST(Fleet, BadCommandLinesFailWithAClearMessage) {
  const std::string dir = TempDir("cli");
  ChildProcess a({"train", "--workload", "synthetic:lenet", "--out", dir + "/a"}, dir + "/a.log");
  EXPECT_EQ(a.Wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(ReadFile(dir + "/a.log").find("unknown synthetic shape 'lenet'"), std::string::npos);
  // Exit codes (README): 2 usage, 3 an input file, 4 the work failed.
  ChildProcess b({"inspect", "/nonexistent/file.ttwl"}, dir + "/b.log");
  EXPECT_EQ(b.Wait(std::chrono::seconds(30)), 3) << ReadFile(dir + "/b.log");
  WriteFileAtomically(dir + "/garbage.ttwl", "TTWKLD01 this is not a workload");
  ChildProcess c({"inspect", dir + "/garbage.ttwl"}, dir + "/c.log");
  EXPECT_EQ(c.Wait(std::chrono::seconds(30)), 3);
  EXPECT_NE(ReadFile(dir + "/c.log").find("workload file"), std::string::npos);
  // A misspelt policy or log level is a usage error that lists the valid choices
  // (it used to give an "n/a" row and exit 0, or abort with exit 134).
  ChildProcess d({"bench", "--workload", "synthetic:tiny:2", "--policies", "sentinal", "--cost-model-only",
                  "--out", dir + "/d"},
                 dir + "/d.log");
  EXPECT_NE(d.Wait(std::chrono::seconds(30)), 0);
  EXPECT_NE(ReadFile(dir + "/d.log").find("unknown policy 'sentinal' (valid: "), std::string::npos)
      << ReadFile(dir + "/d.log");
  EXPECT_NE(ReadFile(dir + "/d.log").find("autotm-sync"), std::string::npos);
  // bench and export roll networks out in the scope they name, and refuse one that does not exist.
  for (const char* command : {"bench", "export"}) {
    ChildProcess scope({command, "--workload", "synthetic:tiny:2", "--decision-scope", "per-kernel"},
                       dir + "/scope.log");
    EXPECT_EQ(scope.Wait(std::chrono::seconds(30)), 2) << command;
    EXPECT_NE(ReadFile(dir + "/scope.log").find("unknown decision scope 'per-kernel' (access-gaps, relevant or all-live)"),
              std::string::npos)
        << ReadFile(dir + "/scope.log");
  }
  ChildProcess e({"--log-level", "verbose", "inspect", dir + "/garbage.ttwl"}, dir + "/e.log");
  const int e_exit = e.Wait(std::chrono::seconds(30));
  EXPECT_NE(e_exit, 0);
  EXPECT_NE(e_exit, 134) << "aborted";
  EXPECT_NE(ReadFile(dir + "/e.log").find("debug"), std::string::npos) << ReadFile(dir + "/e.log");
  // A mistyped flag or subcommand gets the nearest valid one (exit codes
  // used to be CLI11's: 105, 106, 109).
  ChildProcess h({"train", "--workload", "synthetic:tiny:2", "--episdoes", "3"}, dir + "/h.log");
  EXPECT_EQ(h.Wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(ReadFile(dir + "/h.log").find("--episdoes: unknown flag of train; did you mean --episodes?"),
            std::string::npos)
      << ReadFile(dir + "/h.log");
  ChildProcess i({"trian", "--episodes", "3"}, dir + "/i.log");
  EXPECT_EQ(i.Wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(ReadFile(dir + "/i.log").find("did you mean train?"), std::string::npos) << ReadFile(dir + "/i.log");
  ChildProcess j({"train", "--config", dir + "/missing.toml"}, dir + "/j.log");
  EXPECT_EQ(j.Wait(std::chrono::seconds(30)), 3) << ReadFile(dir + "/j.log");
  ChildProcess k({"inspect", "--log-level", "warn", dir + "/garbage.ttwl"}, dir + "/k.log");
  EXPECT_EQ(k.Wait(std::chrono::seconds(30)), 3) << "--log-level after the subcommand: " << ReadFile(dir + "/k.log");
  // A run directory that holds something is not overwritten silently.
  fs::create_directories(dir + "/used");
  WriteFileAtomically(dir + "/used/metrics.csv", "an older run\n");
  ChildProcess f({"train", "--workload", "synthetic:tiny:2", "--episodes", "2", "--workers", "1",
                  "--metrics-address", "off", "--out", dir + "/used"},
                 dir + "/f.log");
  EXPECT_EQ(f.Wait(std::chrono::seconds(60)), 2) << ReadFile(dir + "/f.log");
  EXPECT_NE(ReadFile(dir + "/f.log").find("is not empty: continue that run with --resume"), std::string::npos)
      << ReadFile(dir + "/f.log");
  EXPECT_EQ(ReadFile(dir + "/used/metrics.csv"), "an older run\n");
  ChildProcess g({"train", "--workload", "synthetic:tiny:2", "--episodes", "2", "--workers", "1",
                  "--metrics-address", "off", "--out", dir + "/used", "--force"},
                 dir + "/g.log");
  EXPECT_EQ(g.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir + "/g.log");
  EXPECT_NE(ReadFile(dir + "/used/metrics.csv"), "an older run\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
