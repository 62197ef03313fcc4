#include "transport/channel.h"

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/log.h"
#include "transport/internal.h"

namespace tensortier {
namespace transport_internal {

zmq::context_t& Context() {
  // One context per process, as ZeroMQ recommends; never destroyed so that
  // sockets closed during static destruction cannot hang on it.
  static zmq::context_t* context = new zmq::context_t(1);
  return *context;
}

}  // namespace transport_internal

namespace {

using transport_internal::Context;

void Configure(zmq::socket_t& s, const ChannelOptions& o) {
  s.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(o.max_frame_bytes));
  s.set(zmq::sockopt::sndhwm, o.send_high_water_mark);
  s.set(zmq::sockopt::rcvhwm, o.send_high_water_mark);
  s.set(zmq::sockopt::linger, o.linger_ms);
}

bool Poll(zmq::socket_t& s, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{static_cast<void*>(s), 0, ZMQ_POLLIN, 0};
  return zmq::poll(&item, 1, timeout) > 0 && (item.revents & ZMQ_POLLIN);
}

std::atomic<uint64_t> g_next_monitor{1};

void WarnPlaintext(const std::string& endpoint, const TransportSecurity& s) {
  if (s.insecure_plaintext && !IsLocalEndpoint(endpoint))
    LogWarn("insecure_plaintext").kv("endpoint", endpoint)
        .kv("note", "fleet traffic is neither authenticated nor encrypted (--insecure-plaintext)");
}

}  // namespace

struct FleetServer::Impl {
  zmq::socket_t socket{Context(), zmq::socket_type::router};
  std::atomic<uint64_t> dropped{0};
  // CURVE only: the ZAP domain of the allow-list and the handshake counters.
  std::string zap_domain;
  std::shared_ptr<transport_internal::AuthCounters> counters;
  // Connections libzmq closed: a peer that went away, or one that sent a
  // frame over ZMQ_MAXMSGSIZE (libzmq drops it and the connection without
  // saying which). Read from the socket's monitor events by `monitor`.
  std::atomic<uint64_t> connections_closed{0};
  std::string monitor_endpoint;
  std::atomic<bool> stop_monitor{false};
  std::thread monitor;

  ~Impl() {
    // The events stop first, while the reader still drains them. libzmq's
    // I/O thread sends each event under the socket's monitor lock and
    // blocks while the pipe is full or its reader gone (a PAIR socket with
    // no peer); stopping the reader first left it blocked there, and this
    // call waiting on that lock: a learner hung on shutdown beside a client
    // that kept failing its handshake.
    if (!monitor_endpoint.empty()) zmq_socket_monitor(static_cast<void*>(socket), nullptr, 0);
    if (monitor.joinable()) {
      stop_monitor = true;
      monitor.join();
    }
    if (!zap_domain.empty()) transport_internal::UnregisterZapDomain(zap_domain);
  }

  void StartMonitor() {
    monitor_endpoint = "inproc://tensortier-monitor-" + std::to_string(g_next_monitor++);
    const int handshakes = counters ? ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                                    : 0;
    if (zmq_socket_monitor(static_cast<void*>(socket), monitor_endpoint.c_str(),
                           ZMQ_EVENT_DISCONNECTED | handshakes) != 0)
      throw std::runtime_error(std::string("cannot monitor the fleet socket: ") + zmq_strerror(zmq_errno()));
    // Connected here, before the bind, so that no handshake goes unseen.
    auto pair = std::make_shared<zmq::socket_t>(Context(), zmq::socket_type::pair);
    pair->set(zmq::sockopt::linger, 0);
    pair->connect(monitor_endpoint);
    monitor = std::thread([this, pair] {
      while (!stop_monitor.load()) {
        if (!Poll(*pair, std::chrono::milliseconds(100))) continue;
        std::vector<zmq::message_t> event;
        if (!zmq::recv_multipart(*pair, std::back_inserter(event), zmq::recv_flags::dontwait)) continue;
        if (event.empty() || event[0].size() < 6) continue;
        uint16_t id;
        uint32_t value;
        std::memcpy(&id, event[0].data(), 2);
        std::memcpy(&value, static_cast<const char*>(event[0].data()) + 2, 4);
        auto& process = transport_internal::ProcessCounters();
        if (id == ZMQ_EVENT_DISCONNECTED) {
          ++connections_closed;
          LogInfo("connection_closed")
              .kv("note", "a peer went away, or sent a frame over the size limit (libzmq does not say which)");
        } else if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
          ++counters->accepted;
          ++process.accepted;
        } else {
          ++counters->refused;
          ++process.refused;
          LogWarn("handshake_refused")
              .kv("reason", id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH       ? "auth"
                            : id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol"
                                                                        : "no_detail")
              .kv("code", value);
        }
      }
    });
  }
};

FleetServer::FleetServer(const std::string& endpoint, ChannelOptions options)
    : FleetServer(endpoint, TransportSecurity{}, options) {}

FleetServer::FleetServer(const std::string& endpoint, const TransportSecurity& security, ChannelOptions options)
    : impl_(new Impl) {
  CheckEndpointSecurity(endpoint, security, /*server=*/true);
  WarnPlaintext(endpoint, security);
  Configure(impl_->socket, options);
  // Report unroutable sends instead of dropping them silently.
  impl_->socket.set(zmq::sockopt::router_mandatory, 1);
  if (security.curve()) {
    const CurveKeyPair own = ReadSecretKeyFile(security.secret_key_file);
    std::set<std::string> allowed = ReadAuthorizedKeys(security.authorized_keys);
    impl_->counters = std::make_shared<transport_internal::AuthCounters>();
    impl_->zap_domain = transport_internal::RegisterZapDomain(allowed, impl_->counters, endpoint);
    impl_->socket.set(zmq::sockopt::zap_domain, impl_->zap_domain);
    impl_->socket.set(zmq::sockopt::curve_server, 1);
    impl_->socket.set(zmq::sockopt::curve_secretkey, own.secret_key);
    LogInfo("curve_enabled").kv("endpoint", endpoint).kv("public_key", own.public_key)
        .kv("authorized_keys", allowed.size());
  }
  // Before the bind, so that no handshake or closed connection goes unseen.
  impl_->StartMonitor();
  try {
    impl_->socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot bind " + endpoint + ": " + e.what());
  }
}

FleetServer::~FleetServer() = default;

bool FleetServer::authenticated() const { return impl_->counters != nullptr; }

AuthStats FleetServer::auth_stats() const {
  if (!impl_->counters) return {};
  return {impl_->counters->accepted.load(), impl_->counters->refused.load(),
          impl_->counters->refused_unknown_key.load()};
}

std::string FleetServer::endpoint() const { return impl_->socket.get(zmq::sockopt::last_endpoint); }

bool FleetServer::Send(const std::string& peer, const std::string& frame) {
  try {
    std::vector<zmq::const_buffer> parts = {zmq::buffer(peer), zmq::buffer(frame)};
    return zmq::send_multipart(impl_->socket, parts, zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH: the peer disconnected
  }
}

std::optional<IncomingFrame> FleetServer::Receive(std::chrono::milliseconds timeout) {
  if (!Poll(impl_->socket, timeout)) return std::nullopt;
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(impl_->socket, std::back_inserter(parts), zmq::recv_flags::dontwait))
    return std::nullopt;
  if (parts.size() != 2) {
    // The protocol is one frame per message: a peer's extra parts are
    // refused here, where they are still visible.
    ++impl_->dropped;
    size_t bytes = 0;
    for (size_t i = 1; i < parts.size(); ++i) bytes += parts[i].size();
    LogWarn("bad_frame").kv("reason", "multipart").kv("parts", parts.size() - 1).kv("bytes", bytes);
    return std::nullopt;
  }
  return IncomingFrame{parts[0].to_string(), parts[1].to_string()};
}

uint64_t FleetServer::dropped_frames() const { return impl_->dropped.load(); }

uint64_t FleetServer::connections_closed() const { return impl_->connections_closed.load(); }

struct FleetClient::Impl {
  std::string endpoint;
  ChannelOptions options;
  CurveKeyPair own;         // empty in plain text
  std::string server_key;   // the learner's public key (Z85)
  std::unique_ptr<zmq::socket_t> socket;
  // CURVE only: the socket's handshake events, read (without a thread) on
  // each Receive, so that a refused worker says why instead of only that the
  // learner is silent.
  std::unique_ptr<zmq::socket_t> monitor;
  uint64_t handshake_failures = 0;
  ~Impl() { StopMonitor(); }
  // As the server's (FleetServer::Impl::~Impl): the events stop before their
  // reader goes, or libzmq's I/O thread can block for good sending one. The
  // pipe is drained first so that stopping does not wait on a full one.
  void StopMonitor() {
    if (!monitor) return;
    DrainMonitor();
    if (socket) zmq_socket_monitor(static_cast<void*>(*socket), nullptr, 0);
    monitor.reset();
  }
  void Connect() {
    StopMonitor();
    socket = std::make_unique<zmq::socket_t>(Context(), zmq::socket_type::dealer);
    Configure(*socket, options);
    socket->set(zmq::sockopt::linger, 0);
    if (!server_key.empty()) {
      socket->set(zmq::sockopt::curve_serverkey, server_key);
      socket->set(zmq::sockopt::curve_publickey, own.public_key);
      socket->set(zmq::sockopt::curve_secretkey, own.secret_key);
      const std::string ep = "inproc://tensortier-client-monitor-" + std::to_string(g_next_monitor++);
      if (zmq_socket_monitor(static_cast<void*>(*socket), ep.c_str(),
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0) {
        monitor = std::make_unique<zmq::socket_t>(Context(), zmq::socket_type::pair);
        monitor->set(zmq::sockopt::linger, 0);
        monitor->connect(ep);
      }
    }
    socket->connect(endpoint);
  }
  void DrainMonitor() {
    if (!monitor) return;
    for (;;) {
      std::vector<zmq::message_t> event;
      if (!zmq::recv_multipart(*monitor, std::back_inserter(event), zmq::recv_flags::dontwait)) return;
      if (event.empty() || event[0].size() < 6) continue;
      uint16_t id;
      uint32_t value;
      std::memcpy(&id, event[0].data(), 2);
      std::memcpy(&value, static_cast<const char*>(event[0].data()) + 2, 4);
      ++handshake_failures;
      LogWarn("handshake_failed")
          .kv("endpoint", endpoint)
          .kv("public_key", own.public_key)
          .kv("reason", id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                            ? "the learner refused this key: add its .pub file to the learner's --authorized-keys"
                            : "CURVE handshake failed: a wrong --server-key, or the learner does not use CURVE")
          .kv("code", value);
    }
  }
};

FleetClient::FleetClient(const std::string& endpoint, ChannelOptions options)
    : FleetClient(endpoint, TransportSecurity{}, options) {}

FleetClient::FleetClient(const std::string& endpoint, const TransportSecurity& security, ChannelOptions options)
    : impl_(new Impl) {
  CheckEndpointSecurity(endpoint, security, /*server=*/false);
  WarnPlaintext(endpoint, security);
  impl_->endpoint = endpoint;
  impl_->options = options;
  if (security.curve()) {
    impl_->own = ReadSecretKeyFile(security.secret_key_file);
    impl_->server_key = ReadPublicKey(security.server_key);
  }
  try {
    impl_->Connect();
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot connect to " + endpoint + ": " + e.what());
  }
}

FleetClient::~FleetClient() = default;

bool FleetClient::Send(const std::string& frame) {
  try {
    return impl_->socket->send(zmq::buffer(frame), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

std::optional<IncomingFrame> FleetClient::Receive(std::chrono::milliseconds timeout) {
  impl_->DrainMonitor();
  if (!Poll(*impl_->socket, timeout)) return std::nullopt;
  zmq::message_t msg;
  if (!impl_->socket->recv(msg, zmq::recv_flags::dontwait)) return std::nullopt;
  return IncomingFrame{"", msg.to_string()};
}

void FleetClient::Reconnect() { impl_->Connect(); }

uint64_t FleetClient::handshake_failures() const {
  impl_->DrainMonitor();
  return impl_->handshake_failures;
}

const std::string& FleetClient::endpoint() const { return impl_->endpoint; }

}  // namespace tensortier
