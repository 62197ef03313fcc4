#include "metrics/prometheus_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/files.h"
#include "common/log.h"
#include "metrics/embedded_rules.h"
#include "metrics/http_get.h"

extern char** environ;

namespace tensortier {
namespace {

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }  // a YAML double-quoted string

std::string Tail(const std::string& path, size_t bytes) {
  try {
    std::string s = ReadFile(path);
    return s.size() > bytes ? s.substr(s.size() - bytes) : s;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

const char* EmbeddedAlertRules() { return kEmbeddedAlertRules; }

std::string PrometheusConfigYaml(const PrometheusScrapeConfig& c) {
  std::ostringstream y;
  char interval[32];
  std::snprintf(interval, sizeof interval, "%gs", c.scrape_interval_seconds);
  y << "# Written by TensorTier: scrapes a learner and its workers.\n"
    << "global:\n  scrape_interval: " << interval << "\n  evaluation_interval: " << interval << "\n";
  if (!c.rule_files.empty()) {
    y << "rule_files:\n";
    for (const std::string& f : c.rule_files) y << "  - " << Quote(f) << "\n";
  }
  y << "scrape_configs:\n";
  auto job = [&](const char* name, const std::vector<std::string>& targets, const char* pattern) {
    if (targets.empty() && c.targets_dir.empty()) return;
    y << "  - job_name: " << name << "\n";
    if (!targets.empty()) {
      y << "    static_configs:\n      - targets: [";
      for (size_t i = 0; i < targets.size(); ++i) y << (i ? ", " : "") << Quote(targets[i]);
      y << "]\n";
    }
    if (!c.targets_dir.empty())
      y << "    file_sd_configs:\n      - files: [" << Quote(c.targets_dir + "/" + pattern) << "]\n"
        << "        refresh_interval: 5s\n";
  };
  job("tensortier-learner", c.learner_targets, "learner-*.json");
  job("tensortier-worker", c.worker_targets, "worker-*.json");
  return y.str();
}

bool LoopbackPortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

PrometheusServer::PrometheusServer(PrometheusOptions options) : options_(std::move(options)) {
  if (::access(options_.binary.c_str(), X_OK) != 0)
    throw std::runtime_error("no Prometheus at " + options_.binary + " (Debian: apt-get install prometheus)");
  if (options_.dir.empty()) throw std::invalid_argument("PrometheusOptions::dir is empty");
  MakeDirectories(options_.dir + "/data");
  config_path_ = options_.dir + "/prometheus.yml";
  log_path_ = options_.dir + "/prometheus.log";
  WriteFileAtomically(config_path_, options_.config_yaml);
  std::vector<int> ports = options_.ports;
  if (ports.empty()) {
    for (int p = 9090; p < 9100; ++p) ports.push_back(p);
    for (int p = 19090 + ::getpid() % 1000; ports.size() < 30; p += 37) ports.push_back(p);
  }
  for (int p : ports) {
    if (!LoopbackPortFree(p)) continue;
    if (TryStart(p)) return;
  }
  throw std::runtime_error("Prometheus did not start on any of " + std::to_string(ports.size()) +
                           " loopback ports; its log (" + log_path_ + ") ends:\n" + Tail(log_path_, 2000));
}

bool PrometheusServer::TryStart(int port) {
  std::vector<std::string> args = {options_.binary,
                                   "--config.file=" + config_path_,
                                   "--storage.tsdb.path=" + options_.dir + "/data",
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port),
                                   "--storage.tsdb.retention.time=30d"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  int rc = posix_spawn(&pid_, options_.binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + options_.binary + ": " + std::strerror(rc));
  port_ = port;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.ready_timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: most likely the port was taken meanwhile
      pid_ = -1;
      LogWarn("prometheus_exited").kv("port", port).kv("log", log_path_);
      return false;
    }
    HttpResponse r = HttpGet("127.0.0.1", port, "/-/ready", 2);
    if (r.status == 200) {
      LogInfo("prometheus_ready").kv("url", url()).kv("config", config_path_);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Stop();
  throw std::runtime_error("Prometheus was not ready after " + std::to_string(options_.ready_timeout_seconds) +
                           " s; its log (" + log_path_ + ") ends:\n" + Tail(log_path_, 2000));
}

void PrometheusServer::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {  // it flushes its head block: give it 10 s
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void PrometheusServer::StopAfter(double seconds) {
  if (pid_ <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  Stop();
}

PrometheusServer::~PrometheusServer() { Stop(); }

nlohmann::json PrometheusServer::Get(const std::string& path, double timeout_seconds) const {
  HttpResponse r = HttpGet("127.0.0.1", port_, path, timeout_seconds);
  if (r.status == 0) return {{"status", "error"}, {"error", "no answer: " + r.error}};
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded())
    return {{"status", "error"}, {"error", "HTTP " + std::to_string(r.status) + ", not JSON: " + r.body.substr(0, 300)}};
  return j;
}

nlohmann::json PrometheusServer::Query(const std::string& promql, double timeout_seconds) const {
  return Get("/api/v1/query?query=" + UrlEncode(promql), timeout_seconds);
}

std::unique_ptr<PrometheusServer> StartRunPrometheus(const std::string& dir, const std::string& targets_dir,
                                                     const std::string& binary, double scrape_interval_seconds) {
  namespace fs = std::filesystem;
  if (targets_dir.empty())
    throw std::invalid_argument("a Prometheus for the run needs the processes' file_sd targets (--metrics-sd-dir)");
  const std::string abs_dir = fs::absolute(dir).lexically_normal().string();
  MakeDirectories(abs_dir);
  MakeDirectories(targets_dir);
  WriteFileAtomically(abs_dir + "/alerts.yml", EmbeddedAlertRules());
  PrometheusScrapeConfig scrape;
  scrape.scrape_interval_seconds = scrape_interval_seconds;
  scrape.targets_dir = fs::absolute(targets_dir).lexically_normal().string();
  scrape.rule_files = {abs_dir + "/alerts.yml"};
  PrometheusOptions o;
  o.binary = binary;
  o.dir = abs_dir;
  o.config_yaml = PrometheusConfigYaml(scrape);
  return std::make_unique<PrometheusServer>(o);
}

}  // namespace tensortier
