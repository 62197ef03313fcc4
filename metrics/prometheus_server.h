// A Prometheus server beside a run: writes its configuration, starts
// /usr/bin/prometheus on a free loopback port with its storage in the run
// directory, waits until it is ready, answers PromQL queries over its HTTP
// API, and stops it (SIGTERM) at the end. Used by `tensortier train
// --prometheus` and by the observability tests.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tensortier {

constexpr const char* kDefaultPrometheusBinary = "/usr/bin/prometheus";

// What a generated prometheus.yml scrapes.
struct PrometheusScrapeConfig {
  double scrape_interval_seconds = 2;
  std::vector<std::string> learner_targets;  // static HOST:PORT targets of job tensortier-learner
  std::vector<std::string> worker_targets;   // static HOST:PORT targets of job tensortier-worker
  // file_sd: DIR/learner-*.json feed job tensortier-learner, DIR/worker-*.json
  // job tensortier-worker (the files metrics/metrics_server.h writes).
  std::string targets_dir;
  std::vector<std::string> rule_files;
};
std::string PrometheusConfigYaml(const PrometheusScrapeConfig& c);

// The alert rules of dashboards/prometheus/alerts.yml, compiled in.
const char* EmbeddedAlertRules();

struct PrometheusOptions {
  std::string binary = kDefaultPrometheusBinary;
  std::string dir;          // prometheus.yml, data/ and prometheus.log go here
  std::string config_yaml;  // written to dir/prometheus.yml
  std::vector<int> ports;   // loopback ports to try in order; empty: 9090..9099, then others
  double ready_timeout_seconds = 30;
};

class PrometheusServer {
 public:
  // Starts the server and waits until /-/ready answers. Throws
  // std::runtime_error (binary missing, no port worked, not ready in time:
  // the message quotes the end of its log).
  explicit PrometheusServer(PrometheusOptions options);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  void Stop();
  // Waits `seconds` (a last scrape) and stops.
  void StopAfter(double seconds);
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& config_path() const { return config_path_; }
  const std::string& log_path() const { return log_path_; }

  // GET an API path (e.g. "/api/v1/targets") and parse the JSON answer;
  // {"status":"error","error":...} when there is no parseable answer.
  nlohmann::json Get(const std::string& path, double timeout_seconds = 10) const;
  // An instant query: /api/v1/query?query=EXPR.
  nlohmann::json Query(const std::string& promql, double timeout_seconds = 10) const;

 private:
  bool TryStart(int port);
  PrometheusOptions options_;
  std::string config_path_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The Prometheus of `tensortier train --prometheus`: DIR/prometheus.yml
// scrapes the file_sd targets the learner and the workers write into
// `targets_dir`; DIR/alerts.yml holds the embedded alert rules; DIR/data the
// time series (kept after the run).
std::unique_ptr<PrometheusServer> StartRunPrometheus(const std::string& dir, const std::string& targets_dir,
                                                     const std::string& binary = kDefaultPrometheusBinary,
                                                     double scrape_interval_seconds = 2);

// Whether 127.0.0.1:port could be bound a moment ago.
bool LoopbackPortFree(int port);

}  // namespace tensortier
