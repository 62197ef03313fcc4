#include "metrics/served_metrics.h"

#include "metrics/metrics_server.h"

namespace tensortier {

ServedMetrics::ServedMetrics() = default;
ServedMetrics::~ServedMetrics() = default;

std::string ServedMetrics::address() const { return server_->address(); }
std::string ServedMetrics::url() const { return server_->url(); }

prometheus::Registry& ServedMetrics::Serve(const std::string& address) {
  server_ = std::make_unique<MetricsServer>(address);
  return server_->registry();
}

void ServedMetrics::Advertise(const std::string& sd_dir, const std::string& role, const std::string& name,
                              const std::map<std::string, std::string>& labels) {
  if (!sd_dir.empty()) sd_target_ = std::make_unique<FileSdTarget>(sd_dir, role, name, server_->address(), labels);
}

}  // namespace tensortier
