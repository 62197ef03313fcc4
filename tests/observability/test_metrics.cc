// The metrics endpoint on its own: addresses, the exposition over HTTP,
// file_sd target files, and the learner's and workers' metric names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <regex>
#include <set>

#include "common/files.h"
#include "envs/synthetic.h"
#include "metrics/http_get.h"
#include "learner/learner_metrics.h"
#include "metrics/metrics_server.h"
#include "worker/worker_metrics.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

TEST(MetricsAddress, ParsesAndDefaultsToLoopback) {
  MetricsAddress a = ParseMetricsAddress("127.0.0.1:0");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 0);
  a = ParseMetricsAddress("9464");  // a bare port is loopback, never every interface
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9464);
  a = ParseMetricsAddress("[::1]:9464");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.ToString(), "[::1]:9464");
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  for (const char* bad : {"", ":9464", "host:", "host:port", "1.2.3.4:70000", "::1:9464", "[::1]9464"})
    EXPECT_THROW(ParseMetricsAddress(bad), std::invalid_argument) << bad;
  EXPECT_TRUE(MetricsDisabled("off"));
  EXPECT_TRUE(MetricsDisabled(""));
  EXPECT_FALSE(MetricsDisabled(kDefaultMetricsAddress));
}

TEST(MetricsServer, ServesTheRegistryOnAnEphemeralLoopbackPort) {
  MetricsServer server(kDefaultMetricsAddress);
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
  auto& c = prometheus::BuildCounter().Name("tensortier_test_things_total").Help("Things").Register(server.registry());
  c.Add({{"kind", "a"}}).Increment(3);
  HttpResponse r = HttpGet("127.0.0.1", server.port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_NE(r.body.find("# TYPE tensortier_test_things_total counter"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("tensortier_test_things_total{kind=\"a\"} 3"), std::string::npos) << r.body;
  EXPECT_EQ(HttpGet("127.0.0.1", server.port(), "/nothing").status, 404);
  EXPECT_EQ(server.scrapes(), 1u);
  // A second server gets another port; a taken fixed port is an error.
  MetricsServer other(kDefaultMetricsAddress);
  EXPECT_NE(other.port(), server.port());
  EXPECT_THROW(MetricsServer(server.address()), std::runtime_error);
}

TEST(FileSdTarget, WritesATargetFileAndRemovesItOnExit) {
  const std::string dir = (fs::temp_directory_path() / ("tt-sd-" + std::to_string(::getpid()))).string();
  std::string path;
  {
    FileSdTarget t(dir, "worker", "gpu node/7", "127.0.0.1:1234", {{"worker", "gpu node/7"}});
    path = t.path();
    EXPECT_EQ(fs::path(path).filename().string().rfind("worker-gpu_node_7-", 0), 0u) << path;
    auto j = nlohmann::json::parse(ReadFile(path));
    EXPECT_EQ(j[0]["targets"][0], "127.0.0.1:1234");
    EXPECT_EQ(j[0]["labels"]["worker"], "gpu node/7");
  }
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

// Names follow Prometheus conventions, and no label could carry a tensor.
void CheckExposition(const std::string& body, const std::set<std::string>& required) {
  std::set<std::string> names;
  std::regex type_line("^# TYPE (\\S+) (\\S+)$");
  std::istringstream in(body);
  std::string line;
  const std::set<std::string> allowed_labels = {"workload", "agent", "tier", "direction", "reason", "policy",
                                                "backend", "kind", "type", "device", "result", "le"};
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) {
      const std::string name = m[1], type = m[2];
      names.insert(name);
      EXPECT_EQ(name.rfind("tensortier_", 0), 0u) << name;
      if (type == "counter") {
        EXPECT_EQ(name.substr(name.size() - 6), "_total") << name;
      }
      EXPECT_EQ(name.find("_ms"), std::string::npos) << name << ": seconds, not milliseconds";
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t open = line.find('{');
    if (open == std::string::npos) continue;
    std::regex label("([a-z_]+)=\"");
    for (auto it = std::sregex_iterator(line.begin() + open, line.end(), label); it != std::sregex_iterator(); ++it)
      EXPECT_TRUE(allowed_labels.count((*it)[1])) << "label " << (*it)[1] << " in " << line;
  }
  for (const std::string& r : required) EXPECT_TRUE(names.count(r)) << "missing " << r;
}

TEST(LearnerMetrics, ExposesConventionalNamesFromStartUp) {
  SyntheticOptions o;
  Workload w = GenerateSynthetic(o);
  EnvConfig env;
  env.dram_limit_bytes = w.peak_live_bytes() / 4;
  auto m = LearnerMetrics::Start(kDefaultMetricsAddress, "", w, env, "dqn", "cpu", 1000);
  ASSERT_NE(m, nullptr);
  EpisodeRecord rec;
  rec.episode = 1;
  rec.step_reward_sum = -3;
  rec.episodic_reward = 10;
  rec.runtime_ns = 2e6;
  rec.backend = "cost-model";
  rec.best_runtime_ns = 2e6;
  m->OnEpisode(rec);
  LearnerCounters c;
  c.malformed_frames = 2;
  m->Sync(c, 3, 100, 7, 64);
  const size_t colon = m->address().rfind(':');
  HttpResponse r = HttpGet("127.0.0.1", std::stoi(m->address().substr(colon + 1)), "/metrics");
  ASSERT_EQ(r.status, 200);
  CheckExposition(r.body, {"tensortier_learner_episodes_total", "tensortier_learner_reward",
                           "tensortier_learner_loss", "tensortier_learner_epsilon", "tensortier_learner_q_value_mean",
                           "tensortier_learner_baseline_runtime_seconds", "tensortier_learner_best_runtime_seconds",
                           "tensortier_learner_evaluation_runtime_seconds", "tensortier_learner_replay_size",
                           "tensortier_learner_transitions_total", "tensortier_learner_policy_version",
                           "tensortier_learner_workers_connected", "tensortier_learner_message_errors_total",
                           "tensortier_learner_heartbeats_received_total", "tensortier_learner_info"});
  EXPECT_NE(r.body.find("tensortier_learner_message_errors_total{reason=\"malformed\"} 2"), std::string::npos);
  EXPECT_NE(r.body.find("tensortier_learner_reward{agent=\"dqn\",kind=\"return\",workload=\"" + w.name + "\"} 7"),
            std::string::npos);
  EXPECT_NE(r.body.find("policy=\"first-touch\""), std::string::npos);
  EXPECT_NE(r.body.find("tensortier_learner_workers_connected 3"), std::string::npos);
}

TEST(WorkerMetrics, CountsEvaluationsByDirectionAndBackend) {
  auto m = WorkerMetrics::Start(kDefaultMetricsAddress, "", "w1", "emulated:optane-dcpmm");
  ASSERT_NE(m, nullptr);
  m->OnTask("resnet18", "dqn", "emulated:optane-dcpmm", 1 << 20);
  EpisodeSummary s;
  s.spills = 2;
  PlanMeasurement pm;
  pm.backend = "emulated:optane-dcpmm";
  pm.runtime_ns = 5e6;
  pm.min_runtime_ns = 4e6;
  pm.max_runtime_ns = 9e6;
  pm.counters.measured = true;
  pm.counters.repeats = 3;
  pm.counters.bytes_to_slow = 1000;
  pm.counters.migrations_to_slow = 2;
  pm.counters.minor_faults = 10;
  m->OnEpisode(s, pm, 0.02);
  m->FlowControl(true);
  m->FlowControl(false);
  WorkerStats st;
  st.heartbeats_sent = 5;
  m->Sync(st, true, 4);
  const size_t colon = m->address().rfind(':');
  HttpResponse r = HttpGet("127.0.0.1", std::stoi(m->address().substr(colon + 1)), "/metrics");
  ASSERT_EQ(r.status, 200);
  CheckExposition(r.body, {"tensortier_worker_info", "tensortier_worker_episodes_total",
                           "tensortier_worker_iteration_seconds", "tensortier_worker_tier_peak_bytes",
                           "tensortier_worker_migrated_bytes_total", "tensortier_worker_migrations_total",
                           "tensortier_worker_oom_events_total", "tensortier_worker_limit_events_total",
                           "tensortier_worker_page_faults_total", "tensortier_worker_flow_control_waits_total",
                           "tensortier_worker_heartbeats_total"});
  EXPECT_NE(r.body.find("tensortier_worker_info{backend=\"emulated:optane-dcpmm\"} 1"), std::string::npos);
  EXPECT_NE(r.body.find("tensortier_worker_migrated_bytes_total{backend=\"emulated:optane-dcpmm\",direction=\"to_slow\"} 3000"),
            std::string::npos) << r.body;
  EXPECT_NE(r.body.find("tensortier_worker_page_faults_total{type=\"minor\"} 30"), std::string::npos);
  EXPECT_NE(r.body.find("tensortier_worker_limit_events_total{reason=\"placement_spill\"} 2"), std::string::npos);
  EXPECT_NE(r.body.find("tensortier_worker_iteration_seconds_count{backend=\"emulated:optane-dcpmm\",policy=\"dqn\",workload=\"resnet18\"} 1"),
            std::string::npos);
  EXPECT_NE(r.body.find("tensortier_worker_flow_control_waits_total 1"), std::string::npos);
  EXPECT_NE(r.body.find("tensortier_worker_heartbeats_total{direction=\"sent\"} 5"), std::string::npos);
}

}  // namespace
}  // namespace tensortier
