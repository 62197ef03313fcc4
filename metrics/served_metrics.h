// What every service's metrics (LearnerMetrics, WorkerMetrics) hold besides
// their series: the endpoint Prometheus scrapes and, where asked, the
// file_sd target file that names it. Free of prometheus-cpp, so that the
// services' headers stay so too.
#pragma once

#include <map>
#include <memory>
#include <string>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tensortier {

class MetricsServer;
class FileSdTarget;

class ServedMetrics {
 public:
  ServedMetrics(const ServedMetrics&) = delete;
  ServedMetrics& operator=(const ServedMetrics&) = delete;

  std::string address() const;  // host:port as bound
  std::string url() const;

 protected:
  ServedMetrics();
  ~ServedMetrics();
  // Serves on `address` (see metrics_server.h); returns the registry the
  // series go into.
  prometheus::Registry& Serve(const std::string& address);
  // With `sd_dir` set, writes the file_sd target (FileSdTarget) there; the
  // series should exist by then, so that the first scrape finds them.
  void Advertise(const std::string& sd_dir, const std::string& role, const std::string& name,
                 const std::map<std::string, std::string>& labels = {});

 private:
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<FileSdTarget> sd_target_;
};

}  // namespace tensortier
