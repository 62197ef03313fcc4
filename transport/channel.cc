#include "transport/channel.h"

#include <atomic>
#include <stdexcept>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace tensortier {
namespace {

zmq::context_t& Context() {
  // One context per process, as ZeroMQ recommends; never destroyed so that
  // sockets closed during static destruction cannot hang on it.
  static zmq::context_t* context = new zmq::context_t(1);
  return *context;
}

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

}  // namespace

struct FleetServer::Impl {
  zmq::socket_t socket{Context(), zmq::socket_type::router};
  std::atomic<uint64_t> dropped{0};
};

FleetServer::FleetServer(const std::string& endpoint, ChannelOptions options) : impl_(new Impl) {
  Configure(impl_->socket, options);
  // Report unroutable sends instead of dropping them silently.
  impl_->socket.set(zmq::sockopt::router_mandatory, 1);
  try {
    impl_->socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot bind " + endpoint + ": " + e.what());
  }
}

FleetServer::~FleetServer() = default;

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
    ++impl_->dropped;
    return std::nullopt;
  }
  return IncomingFrame{parts[0].to_string(), parts[1].to_string()};
}

uint64_t FleetServer::dropped_frames() const { return impl_->dropped.load(); }

struct FleetClient::Impl {
  std::string endpoint;
  ChannelOptions options;
  std::unique_ptr<zmq::socket_t> socket;
  void Connect() {
    socket = std::make_unique<zmq::socket_t>(Context(), zmq::socket_type::dealer);
    Configure(*socket, options);
    socket->set(zmq::sockopt::linger, 0);
    socket->connect(endpoint);
  }
};

FleetClient::FleetClient(const std::string& endpoint, ChannelOptions options) : impl_(new Impl) {
  impl_->endpoint = endpoint;
  impl_->options = options;
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
  if (!Poll(*impl_->socket, timeout)) return std::nullopt;
  zmq::message_t msg;
  if (!impl_->socket->recv(msg, zmq::recv_flags::dontwait)) return std::nullopt;
  return IncomingFrame{"", msg.to_string()};
}

void FleetClient::Reconnect() { impl_->Connect(); }

const std::string& FleetClient::endpoint() const { return impl_->endpoint; }

}  // namespace tensortier
