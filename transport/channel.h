// ZeroMQ sockets for the fleet, with the protocol's frames on them. The
// learner binds a ROUTER (FleetServer); each worker connects a DEALER
// (FleetClient). Bytes only: encoding and decoding live in protocol/, and
// liveness (Paranoid Pirate heartbeats) in the learner and worker loops.
// Frames above the size limit are dropped by libzmq (ZMQ_MAXMSGSIZE), so an
// oversized frame cannot exhaust a process's memory; libzmq closes the
// sender's connection, which FleetServer counts (connections_closed) but
// cannot tell from a peer that went away.
//
// Security (transport/security.h, docs/security.md): with keys both sides
// speak CURVE and the server admits only the worker keys of its allow-list
// (a ZAP handler); frames from anyone else never reach Receive(). Without
// keys the sockets speak plain text, which the constructors refuse off
// loopback unless TransportSecurity::insecure_plaintext is set.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "transport/security.h"

namespace tensortier {

struct ChannelOptions {
  size_t max_frame_bytes = 64u << 20;
  int send_high_water_mark = 10000;
  int linger_ms = 200;
};

struct IncomingFrame {
  std::string peer;   // ROUTER routing id (empty on the client side)
  std::string frame;
};

class FleetServer {
 public:
  // Binds to `endpoint` ("tcp://127.0.0.1:5555", "tcp://0.0.0.0:*", "ipc:///tmp/x").
  // Throws std::runtime_error with the ZeroMQ reason on failure, and
  // std::invalid_argument when `security` does not allow the endpoint.
  explicit FleetServer(const std::string& endpoint, ChannelOptions options = {});
  FleetServer(const std::string& endpoint, const TransportSecurity& security, ChannelOptions options = {});
  ~FleetServer();
  FleetServer(const FleetServer&) = delete;
  FleetServer& operator=(const FleetServer&) = delete;

  // The endpoint actually bound (with the port a wildcard resolved to).
  std::string endpoint() const;
  // Returns false when the peer is gone or its queue is full (never blocks).
  bool Send(const std::string& peer, const std::string& frame);
  // Waits up to `timeout` for one frame; frames that are not
  // [routing id, payload] are dropped and counted.
  std::optional<IncomingFrame> Receive(std::chrono::milliseconds timeout);
  uint64_t dropped_frames() const;
  // Connections libzmq closed, from the socket's monitor: peers that went
  // away and peers whose frame was over `max_frame_bytes` (libzmq drops
  // such a frame with its connection and does not say which case it was).
  uint64_t connections_closed() const;
  // Whether peers must authenticate (CURVE with an allow-list).
  bool authenticated() const;
  // Handshakes accepted and refused on this socket (all zero in plain text).
  AuthStats auth_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class FleetClient {
 public:
  explicit FleetClient(const std::string& endpoint, ChannelOptions options = {});
  FleetClient(const std::string& endpoint, const TransportSecurity& security, ChannelOptions options = {});
  ~FleetClient();
  FleetClient(const FleetClient&) = delete;
  FleetClient& operator=(const FleetClient&) = delete;

  bool Send(const std::string& frame);
  std::optional<IncomingFrame> Receive(std::chrono::milliseconds timeout);
  // Drops the socket (and anything queued on it) and connects a new one:
  // the Paranoid Pirate way to recover from a learner that went away.
  void Reconnect();
  const std::string& endpoint() const;
  // CURVE handshakes of this client that failed (each is also logged with
  // the likely cause: key not listed, or wrong learner key); 0 in plain text.
  uint64_t handshake_failures() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortier
