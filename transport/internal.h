// Shared by channel.cc and security.cc only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <zmq.hpp>

namespace tensortier {
namespace transport_internal {

// The process's one ZeroMQ context (the ZAP handler must live in it).
zmq::context_t& Context();

struct AuthCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> refused_unknown_key{0};
};
AuthCounters& ProcessCounters();

// Starts the process's ZAP handler (inproc://zeromq.zap.01) when needed and
// registers an allow-list under a fresh ZAP domain, which the server socket
// must set (zmq::sockopt::zap_domain) before it binds.
std::string RegisterZapDomain(std::set<std::string> z85_keys, std::shared_ptr<AuthCounters> counters,
                              std::string endpoint_for_logs);
void UnregisterZapDomain(const std::string& domain);

}  // namespace transport_internal
}  // namespace tensortier
