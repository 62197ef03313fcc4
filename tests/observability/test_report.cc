// `tensortier train --prometheus` and `tensortier report`: a short embedded
// run with its own Prometheus, whose stored series are read back after the
// run, and the run directory rendered as one self-contained HTML page.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "learner/metrics_csv.h"
#include "metrics/prometheus_server.h"
#include "report/report.h"
#include "tests/integration/process.h"
#include "tests/observability/promql.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

TEST(Report, ChartsAreSvgAndEmptySeriesSayNoData) {
  std::string svg = SvgLineChart("t <&>", "x", "y", {{"a", "#000", {{0, 1}, {1, 2}, {2, 4}}, false}},
                                 {{"ref", "#f00", 3}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("t &lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(SvgLineChart("t", "x", "y", {{"a", "#000", {}, false}}).find("no data"), std::string::npos);
  EXPECT_THROW(RenderRunReport("/nonexistent"), std::runtime_error);
}

// Bench writes charts as files of their own: they must carry their style
// (an unstyled frame <rect> fills black), show a policy measured at one
// budget, and keep legend labels apart however many policies there are.
// A run that ran real iterations: its measured plot has the all-DRAM and
// all-slow times the workers measured as reference lines, and the page says
// what the final plan took on real iterations (issue 16).
TEST(Report, MeasuredPlotHasMeasuredReferencesAndTheFinalPlansMeasurement) {
  const std::string dir = TempDir("report-measured");
  std::vector<EpisodeRecord> records(4);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].episode = i + 1;
    records[i].runtime_ns = 50e6 + 1e6 * static_cast<double>(i);
    records[i].backend = i % 2 == 0 ? "emulated:optane-dcpmm" : "cost-model";
    records[i].best_runtime_ns = 60e6;
  }
  WriteFileAtomically(dir + "/metrics.csv", MetricsCsv(records));
  nlohmann::json summary;
  summary["measured_references"] = {
      {{"backend", "emulated:optane-dcpmm"}, {"plans_measured", 2}, {"all_dram_ns", 20.5e6}, {"all_slow_ns", 88.25e6}}};
  summary["final_plan"] = {{"produced_by", "dqn-greedy v9"},
                           {"measured", {{"measured", true}, {"backend", "emulated:optane-dcpmm"},
                                         {"method", "after training, 3 rounds"}, {"runtime_ns", 54.5e6},
                                         {"all_dram_ns", 20.5e6}, {"all_slow_ns", 88.25e6}, {"oom", false},
                                         {"relative_performance", 0.376}, {"normalised_cost", 0.5}}}};
  WriteFileAtomically(dir + "/summary.json", summary.dump());
  // The comparison's measured rows are rows of the table, not the cost
  // model's reference lines.
  WriteFileAtomically(dir + "/comparison.csv",
                      "policy,source,runtime_ns,relative_performance,normalised_cost,dram_peak_bytes,bytes_migrated,oom,"
                      "memory_cost_dollars\n"
                      "\"all-slow\",\"reference\",80000000,0.25,1,0,1000,0,0.01\n"
                      "\"all-slow\",\"measured on emulated:optane-dcpmm\",88250000,0.2323,1,,,0,\n");
  const std::string html = RenderRunReport(dir);
  EXPECT_NE(html.find("<td>all-slow</td><td>measured on emulated:optane-dcpmm</td><td>88.250</td><td>23.2%</td>"
                      "<td>1.000</td><td>–</td><td>–</td><td>no</td><td>–</td>"),
            std::string::npos);
  const size_t best_chart = html.find("Best plan's runtime against the baselines");
  ASSERT_NE(best_chart, std::string::npos);
  const std::string cost_model_chart = html.substr(best_chart, html.find("</svg>", best_chart) - best_chart);
  EXPECT_NE(cost_model_chart.find(">all-slow</text>"), std::string::npos) << cost_model_chart;
  EXPECT_EQ(cost_model_chart.find(">all-slow</text>"), cost_model_chart.rfind(">all-slow</text>"))
      << "one reference line, the cost model's: " << cost_model_chart;
  const size_t chart = html.find("Measured iteration time of the episodes' plans");
  ASSERT_NE(chart, std::string::npos);
  const std::string measured_chart = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_NE(measured_chart.find(">all-DRAM, measured</text>"), std::string::npos) << measured_chart;
  EXPECT_NE(measured_chart.find(">all-slow, measured</text>"), std::string::npos) << measured_chart;
  EXPECT_NE(html.find("Measured on emulated:optane-dcpmm: the final plan 54.500 ms (37.6% of all-DRAM), all-DRAM "
                      "20.500 ms, all-slow 88.250 ms"),
            std::string::npos);

  summary["final_plan"]["measured"] = {{"measured", false},
                                       {"reason", "final plan not measured: no episode ran real iterations"}};
  summary.erase("measured_references");
  WriteFileAtomically(dir + "/summary.json", summary.dump());
  const std::string unmeasured = RenderRunReport(dir);
  EXPECT_NE(unmeasured.find("final plan not measured: no episode ran real iterations"), std::string::npos);
  EXPECT_EQ(unmeasured.find("all-DRAM, measured"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Report, ChartsRenderOnTheirOwn) {
  std::vector<ChartSeries> series;
  for (const char* name : {"all-slow", "autotm-static", "autotm-sync", "ca-l", "ca-lm", "ca-lmp", "deeptm-heuristic",
                           "dqn", "first-touch", "sac", "sentinel", "a-rather-long-policy-name+search"})
    series.push_back({name, "#123456", {{0.2, 50}}, false});
  const std::string svg = SvgLineChart("fig14", "DRAM / peak", "% of all-DRAM", series, {{"90%", "#999", 90}});

  EXPECT_NE(svg.find("<style>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"frame\" fill=\"none\""), std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_GE(circles, 2 * series.size()) << "a marker per point and per legend entry";

  const std::regex viewbox("viewBox=\"0 0 ([0-9.]+) ([0-9.]+)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, viewbox));
  const double width = std::stod(m[1]), height = std::stod(m[2]);
  // Legend labels: each starts after the previous one ends (same row) and
  // ends inside the chart; 6.6 px a character bounds an 11 px label.
  const std::regex label("<text class=\"legend\"[^>]* x=\"([0-9.]+)\" y=\"([0-9.]+)\">([^<]*)</text>");
  double prev_end = 0, prev_y = -1;
  size_t labels = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    const double end = x + 6.6 * static_cast<double>((*it)[3].length());
    if (y == prev_y) {
      EXPECT_GT(x, prev_end) << (*it)[3];
    }
    EXPECT_LE(end, width) << (*it)[3];
    EXPECT_LE(y, height) << (*it)[3];
    prev_end = end;
    prev_y = y;
    ++labels;
  }
  EXPECT_EQ(labels, series.size() + 1);
}

TEST(TrainWithPrometheus, RunIsScrapedAndReportIsSelfContained) {
  const bool have_prometheus = ::access("/usr/bin/prometheus", X_OK) == 0;
  const std::string dir = TempDir("train-prom");
  const std::string run = dir + "/run";
  // Prometheus's discovery passes new targets on every 5 s: the run lasts
  // long enough for the workers to be scraped a few times.
  std::vector<std::string> args = {"train", "--workload", "synthetic:resnet:4:1048576", "--episodes", "1000000",
                                   "--max-seconds", "14", "--workers", "2", "--learning-starts", "64", "--updates-per-episode", "8",
                                   "--epsilon-decay-episodes", "50", "--heartbeat-ms", "200", "--out", run};
  if (have_prometheus) args.push_back("--prometheus");
  testing::ChildProcess train(args, dir + "/train.log");
  ASSERT_EQ(train.Wait(std::chrono::seconds(240)), 0) << ReadFile(dir + "/train.log");
  const std::string log = ReadFile(dir + "/train.log");
  EXPECT_TRUE(std::regex_search(log, std::regex("learner metrics: http://127\\.0\\.0\\.1:[0-9]+/metrics"))) << log;

  if (have_prometheus) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, std::regex("Prometheus: (http://127\\.0\\.0\\.1:[0-9]+)"))) << log;
    ASSERT_TRUE(fs::exists(run + "/prometheus/prometheus.yml"));
    ASSERT_TRUE(fs::exists(run + "/prometheus/alerts.yml"));
    // Workers removed their target files when they left.
    for (const auto& e : fs::directory_iterator(run + "/prometheus/targets"))
      EXPECT_EQ(e.path().filename().string().rfind("worker-", 0), std::string::npos) << e.path();
    // Serve the run's data again and read what was scraped during the run.
    PrometheusOptions o;
    o.dir = run + "/prometheus";
    o.config_yaml = ReadFile(run + "/prometheus/prometheus.yml");
    for (int i = 0; i < 8; ++i) o.ports.push_back(testing::FreePort());
    PrometheusServer again(o);
    auto value = [&](const std::string& q) {
      nlohmann::json r = again.Query(q);
      return testing::HasData(r) ? std::stod(r["data"]["result"][0]["value"][1].get<std::string>()) : -1.0;
    };
    EXPECT_GT(value("max(max_over_time(tensortier_learner_episodes_total[1h]))"), 0);
    EXPECT_EQ(value("count(count_over_time(up{job=\"tensortier-worker\"}[1h]))"), 2);
    EXPECT_GT(value("sum(max_over_time(tensortier_worker_episodes_total[1h]))"), 0);
  }

  // The report.
  std::string out;
  ASSERT_EQ(testing::RunCommand(testing::TensortierBinary() + " report " + run, out), 0) << out;
  ASSERT_TRUE(fs::exists(run + "/report.html")) << out;
  const std::string html = ReadFile(run + "/report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_GE(std::count(html.begin(), html.end(), '\n'), 20);
  size_t svgs = 0;
  for (size_t p = 0; (p = html.find("<svg", p)) != std::string::npos; ++p) ++svgs;
  EXPECT_GE(svgs, 5u);
  for (const char* policy : {"all-dram (no limit)", "first-touch", "all-slow"})
    EXPECT_NE(html.find(policy), std::string::npos) << policy;
  EXPECT_NE(html.find("Episode return"), std::string::npos);
  EXPECT_NE(html.find("TD loss"), std::string::npos);
  EXPECT_EQ(html.find("no data"), std::string::npos) << "a convergence chart is empty";
  // Self-contained: no scripts, no links to fetch, no URL but the SVG namespace.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  std::string without_ns = html;
  testing::ReplaceAll(without_ns, "http://www.w3.org/2000/svg", "");
  EXPECT_EQ(without_ns.find("http://"), std::string::npos);
  EXPECT_EQ(without_ns.find("https://"), std::string::npos);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
