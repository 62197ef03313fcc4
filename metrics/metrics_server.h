// The /metrics endpoint of a TensorTier process: a prometheus-cpp registry
// served on --metrics-address, and the file_sd target files that let a
// Prometheus find a fleet whose ports are picked at start-up.
//
// Why not prometheus::Exposer: Debian's prometheus-cpp-pull serves through
// CivetWeb 1.15, built with a fixed 100 KiB thread stack; in a process that
// loads LibTorch, OpenBLAS and glog the static TLS alone is larger, so
// pthread_create fails with EINVAL and the Exposer throws ("null context
// when constructing CivetServer"). MetricsServer serialises the registry with
// prometheus-cpp's TextSerializer and answers GET /metrics on one thread of
// its own (default stack): the exposition format and the port semantics are
// the Exposer's.
//
//   MetricsServer server("127.0.0.1:0");   // loopback, ephemeral port
//   LearnerMetrics metrics(server.registry(), ...);
//   LogInfo("metrics").kv("url", server.url());
//
// Addresses: "HOST:PORT", "[V6]:PORT" or a bare "PORT" (then 127.0.0.1, never
// all interfaces). Port 0 picks a free port; port() says which. A
// non-loopback host is bound only when it is asked for, with a warning.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tensortier {

// The default of every --metrics-address flag.
constexpr const char* kDefaultMetricsAddress = "127.0.0.1:0";

// Splits and checks an address; a bare port becomes 127.0.0.1:PORT.
// Throws std::invalid_argument naming what is wrong.
struct MetricsAddress {
  std::string host;  // without brackets
  int port = 0;
  std::string ToString() const;  // host:port, [host]:port for IPv6
};
MetricsAddress ParseMetricsAddress(const std::string& address);
bool IsLoopbackHost(const std::string& host);

// "", "off" and "none" switch the endpoint off.
bool MetricsDisabled(const std::string& address);

class MetricsServer {
 public:
  // Throws std::invalid_argument (bad address) or std::runtime_error
  // (cannot bind).
  explicit MetricsServer(const std::string& address);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  prometheus::Registry& registry() { return *registry_; }
  int port() const { return bound_.port; }
  std::string address() const { return bound_.ToString(); }  // as bound: the real port
  std::string url() const { return "http://" + address() + "/metrics"; }
  uint64_t scrapes() const { return scrapes_.load(); }

 private:
  void Serve();
  void Answer(int fd);
  MetricsAddress bound_;
  std::shared_ptr<prometheus::Registry> registry_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop
  std::atomic<uint64_t> scrapes_{0};
  std::thread thread_;
};

// A Prometheus file_sd target file, DIR/<role>-<name>-<pid>.json:
//   [{"targets": ["127.0.0.1:PORT"], "labels": {...}}]
// written atomically on construction and removed on destruction, so that a
// Prometheus watching DIR/<role>-*.json scrapes the process while it lives
// (a process that dies without cleaning up shows as down: up == 0).
class FileSdTarget {
 public:
  FileSdTarget(const std::string& dir, const std::string& role, const std::string& name, const std::string& address,
               const std::map<std::string, std::string>& labels = {});
  ~FileSdTarget();
  FileSdTarget(const FileSdTarget&) = delete;
  FileSdTarget& operator=(const FileSdTarget&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tensortier
