// The learner's side of liveness over its socket: heartbeats to every
// registered worker each interval, expiry of the workers that fell silent,
// and, when the run ends, a goodbye to the peers still talking (expired
// ones included: they come back to a learner that is gone). Network thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "learner/fleet_registry.h"
#include "transport/channel.h"

namespace tensortier {

class FleetHeartbeats {
 public:
  using Clock = std::chrono::steady_clock;
  // `server` and `fleet` outlive this. A worker silent for `interval` x
  // `liveness` is expired.
  FleetHeartbeats(FleetServer& server, FleetRegistry& fleet, std::chrono::milliseconds interval, int liveness)
      : server_(server), fleet_(fleet), interval_(interval), liveness_(liveness) {}

  // The interval counts from now (the run starts).
  void Restart() { last_ = Clock::now(); }
  // Once an interval has passed: expires the silent workers (only when
  // `queue_drained`: a busy learner may not have read their frames yet, and
  // silence is evidence only once everything queued was read; flow-controlled
  // workers stop sending when the learner falls behind, so the queue does
  // empty), then heartbeats the others. Returns how many it expired.
  size_t KeepAlive(bool queue_drained);
  // Shutdown with `reason` to every peer that speaks within one liveness
  // deadline and was not told yet (registered workers were, by the caller's
  // broadcast). A worker given up on shortly before the end (a loaded
  // machine starved it), or one whose frames still wait unread, would
  // otherwise retry until its own give-up time.
  void Farewell(const std::string& reason);

 private:
  FleetServer& server_;
  FleetRegistry& fleet_;
  std::chrono::milliseconds interval_;
  int liveness_;
  Clock::time_point last_ = Clock::now();
};

}  // namespace tensortier
