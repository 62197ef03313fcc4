// The dashboards and the alert rules against a REAL Prometheus: a learner
// and two workers (one running real LibTorch iterations on an emulated slow
// tier, one on the cost model) as separate `tensortier` processes on
// loopback, Prometheus (/usr/bin/prometheus) scraping them every second -
// the learner through a static target, the workers through the file_sd
// target files they write themselves - and every PromQL expression of
// dashboards/grafana/*.json and dashboards/prometheus/alerts.yml queried
// through the HTTP API until it returns data. New panels and rules are
// covered as they are added: the expressions are read from the files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "metrics/prometheus_server.h"
#include "tests/integration/process.h"
#include "tests/observability/promql.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::ChildProcess;

const std::string kSource = TENSORTIER_SOURCE_DIR;
const std::string kPrometheus = "/usr/bin/prometheus";
const std::string kPromtool = "/usr/bin/promtool";

using testing::TempDir;

std::string Tail(const std::string& path, size_t n = 3000) {
  std::string s;
  try {
    s = ReadFile(path);
  } catch (const std::exception&) {
  }
  return s.size() > n ? s.substr(s.size() - n) : s;
}

TEST(Promtool, RepositoryConfigRulesAndRuleTestsPass) {
  if (::access(kPromtool.c_str(), X_OK) != 0) GTEST_SKIP() << kPromtool << " is missing (apt-get install prometheus)";
  const std::string dir = kSource + "/dashboards/prometheus";
  std::string out;
  EXPECT_EQ(testing::RunCommand(kPromtool + " check config " + dir + "/prometheus.yml", out), 0) << out;
  EXPECT_NE(out.find("SUCCESS"), std::string::npos) << out;
  EXPECT_EQ(testing::RunCommand(kPromtool + " check rules " + dir + "/alerts.yml", out), 0) << out;
  // Every alert fires on series made to trip it and stays quiet otherwise.
  EXPECT_EQ(testing::RunCommand("cd " + dir + " && " + kPromtool + " test rules alerts_test.yml", out), 0) << out;
  // Every alert has a unit test.
  const std::string rules = ReadFile(dir + "/alerts.yml"), tests = ReadFile(dir + "/alerts_test.yml");
  std::istringstream in(rules);
  std::string line;
  int alerts = 0;
  while (std::getline(in, line)) {
    const size_t at = line.find("- alert: ");
    if (at == std::string::npos) continue;
    ++alerts;
    const std::string name = line.substr(at + 9);
    EXPECT_NE(tests.find("alertname: " + name + "\n"), std::string::npos) << name << " has no test in alerts_test.yml";
  }
  EXPECT_GE(alerts, 4);
  // The rules compiled into the binary are the file's.
  EXPECT_EQ(std::string(EmbeddedAlertRules()), ReadFile(dir + "/alerts.yml"));
}

TEST(PromQl, BoolComparisonsLeaveMatchersAlone) {
  EXPECT_EQ(testing::WithBoolComparisons("up{job=\"w\", x!=\"1\"} == 0"), "up{job=\"w\", x!=\"1\"} == bool 0");
  EXPECT_EQ(testing::WithBoolComparisons("(rate(a[5m]) == 0) and on(job) (b > 0)"),
            "(rate(a[5m]) == bool 0) and on(job) (b > bool 0)");
  EXPECT_EQ(testing::WithBoolComparisons("a < -(0.1 * abs(b)) or c != c"), "a < bool -(0.1 * abs(b)) or c != bool c");
  EXPECT_EQ(testing::WithBoolComparisons("a >= bool 1"), "a >= bool 1");
}

TEST(Prometheus, EveryDashboardAndAlertQueryReturnsDataFromALiveFleet) {
  if (::access(kPrometheus.c_str(), X_OK) != 0)
    GTEST_SKIP() << kPrometheus << " is missing: install Debian's prometheus package (scripts/bootstrap)";
  const auto started = Clock::now();
  const std::string dir = TempDir("prometheus");
  const std::string targets = dir + "/targets";
  fs::create_directories(targets);

  // A small real model, so that one worker runs real iterations.
  std::string out;
  ASSERT_EQ(testing::RunCommand(testing::TensortierBinary() +
                                    " profile --model alexnet --batch 1 --image-size 16 --classes 2"
                                    " --slow-tier emulated:optane-dcpmm --out " + dir + "/alexnet.ttwl",
                                out),
            0)
      << out;

  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePort());
  const int learner_metrics_port = testing::FreePort();
  ASSERT_GT(learner_metrics_port, 0);
  const std::string learner_metrics = "127.0.0.1:" + std::to_string(learner_metrics_port);
  ChildProcess learner({"learner", "--bind", endpoint, "--workload", dir + "/alexnet.ttwl", "--episodes", "100000",
                        "--max-seconds", "150", "--min-workers", "2", "--heartbeat-ms", "200", "--learning-starts", "64",
                        "--updates-per-episode", "8", "--epsilon-decay-episodes", "100", "--checkpoint-every", "0",
                        "--metrics-address", learner_metrics, "--out", dir + "/run"},
                       dir + "/learner.log");
  const std::vector<std::string> common = {"--connect", endpoint, "--give-up-seconds", "30", "--metrics-address",
                                           "127.0.0.1:0", "--metrics-sd-dir", targets};
  auto worker_args = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"worker"};
    a.insert(a.end(), common.begin(), common.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  ChildProcess real(worker_args({"--name", "real", "--slow-tier", "emulated:optane-dcpmm", "--measure-every", "2",
                                 "--repeats", "1", "--warmup", "0"}),
                    dir + "/worker-real.log");
  ChildProcess model(worker_args({"--name", "model", "--cost-model-only"}), dir + "/worker-model.log");

  // Prometheus: the learner as a static target, the workers by file_sd.
  const std::string rules = kSource + "/dashboards/prometheus/alerts.yml";
  PrometheusScrapeConfig scrape;
  scrape.scrape_interval_seconds = 1;
  scrape.learner_targets = {learner_metrics};
  scrape.targets_dir = targets;
  scrape.rule_files = {rules};
  PrometheusOptions po;
  po.dir = dir + "/prometheus";
  po.config_yaml = PrometheusConfigYaml(scrape);
  for (int i = 0; i < 8; ++i) po.ports.push_back(testing::FreePort());
  std::unique_ptr<PrometheusServer> prometheus;
  try {
    prometheus = std::make_unique<PrometheusServer>(po);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  if (::access(kPromtool.c_str(), X_OK) == 0) {  // the generated configuration is valid too
    EXPECT_EQ(testing::RunCommand(kPromtool + " check config " + prometheus->config_path(), out), 0) << out;
  }

  // What must return data.
  struct Check {
    std::string where, expr;
    bool passed = false;
    nlohmann::json last;
  };
  std::vector<Check> checks;
  for (const testing::PanelQuery& q : testing::DashboardQueries(kSource + "/dashboards/grafana")) {
    const std::string expr = testing::ExpandGrafanaVariables(q.expr);
    ASSERT_EQ(expr.find('$'), std::string::npos) << q.where << ": a Grafana variable this test does not know: " << expr;
    checks.push_back({q.where, expr, false, {}});
  }
  ASSERT_GE(checks.size(), 40u) << "the dashboards lost their panels?";

  // The alert rules as Prometheus loaded them: all of the file's, healthy.
  size_t rules_in_file = 0;
  {
    std::istringstream in(ReadFile(rules));
    std::string line;
    while (std::getline(in, line))
      if (line.find("- alert:") != std::string::npos) ++rules_in_file;
  }
  nlohmann::json loaded = prometheus->Get("/api/v1/rules");
  ASSERT_EQ(loaded.value("status", ""), "success") << loaded.dump();
  std::vector<std::pair<std::string, std::string>> alerts;  // name, query
  for (const auto& g : loaded["data"]["groups"])
    for (const auto& r : g["rules"]) alerts.push_back({r["name"], r["query"]});
  ASSERT_EQ(alerts.size(), rules_in_file) << loaded.dump(2);
  for (const auto& [name, query] : alerts) {
    // As written: it must parse and evaluate (usually to nothing: all is well).
    nlohmann::json r = prometheus->Query(query);
    EXPECT_EQ(r.value("status", ""), "success") << "alert " << name << ": " << query << "\n" << r.dump();
    // Its inputs must exist: the comparisons made `bool` return every series.
    checks.push_back({"alert " + name, testing::WithBoolComparisons(query), false, {}});
  }

  // Poll until every expression returns data, the fleet is done warming up
  // (the real worker profiles its model first) or a minute and a half passed.
  const auto deadline = Clock::now() + std::chrono::seconds(90);
  size_t pending = checks.size();
  while (pending > 0 && Clock::now() < deadline) {
    pending = 0;
    for (Check& c : checks) {
      if (c.passed) continue;
      c.last = prometheus->Query(c.expr);
      c.passed = testing::HasData(c.last);
      pending += !c.passed;
    }
    if (pending) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  for (const Check& c : checks)
    EXPECT_TRUE(c.passed) << c.where << " returned no data:\n  " << c.expr << "\n  last answer: " << c.last.dump();
  if (pending) {
    ADD_FAILURE() << "learner log:\n" << Tail(dir + "/learner.log") << "\nreal worker log:\n"
                  << Tail(dir + "/worker-real.log") << "\nprometheus log:\n" << Tail(prometheus->log_path());
  }
  // Real iterations were measured, and the rules evaluate without errors.
  EXPECT_TRUE(testing::HasData(prometheus->Query("sum(tensortier_worker_measured_iterations_total) > 0")));
  loaded = prometheus->Get("/api/v1/rules");
  for (const auto& g : loaded["data"]["groups"])
    for (const auto& r : g["rules"])
      EXPECT_EQ(r.value("health", ""), "ok") << r["name"] << ": " << r.value("lastError", "");

  // A worker that dies leaves its target file behind: WorkerDown's
  // expression now selects it, and the alert goes pending.
  const double up_before = [&] {
    nlohmann::json r = prometheus->Query("sum(up{job=\"tensortier-worker\"})");
    return testing::HasData(r) ? std::stod(r["data"]["result"][0]["value"][1].get<std::string>()) : 0.0;
  }();
  EXPECT_EQ(up_before, 2);
  model.Kill(SIGKILL);
  model.Wait(std::chrono::seconds(5));
  std::string worker_down;
  for (const auto& [name, query] : alerts)
    if (name == "TensorTierWorkerDown") worker_down = query;
  ASSERT_FALSE(worker_down.empty());
  bool down_seen = false, pending_seen = false;
  for (auto until = Clock::now() + std::chrono::seconds(15); Clock::now() < until && !(down_seen && pending_seen);) {
    down_seen = down_seen || testing::HasData(prometheus->Query(worker_down));
    nlohmann::json a = prometheus->Get("/api/v1/alerts");
    for (const auto& alert : a["data"]["alerts"])
      if (alert["labels"].value("alertname", "") == "TensorTierWorkerDown") pending_seen = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_TRUE(down_seen) << "up == 0 never selected the killed worker";
  EXPECT_TRUE(pending_seen) << "TensorTierWorkerDown did not go pending";

  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::printf("%zu dashboard and alert expressions returned data; %.1f s\n", checks.size(), seconds);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
