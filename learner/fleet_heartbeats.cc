#include "learner/fleet_heartbeats.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "protocol/codec.h"

namespace tensortier {

size_t FleetHeartbeats::KeepAlive(bool queue_drained) {
  if (Clock::now() - last_ < interval_) return 0;
  last_ = Clock::now();
  const Clock::time_point now = Clock::now();
  size_t expired = 0;
  if (queue_drained)
    for (const WorkerState& gone : fleet_.ExpireSilent(now, interval_ * liveness_)) {
      LogWarn("worker_expired").kv("worker", gone.id).kv("name", gone.name)
          .kv("silent_ms", std::chrono::duration_cast<std::chrono::milliseconds>(now - gone.last_seen).count());
      ++expired;
    }
  for (const auto& [peer, w] : fleet_.workers()) {
    HeartbeatMsg hb;
    hb.worker_id = w.id;
    hb.episodes_done = w.last_episode_id;
    server_.Send(peer, EncodeMessage(hb));
  }
  return expired;
}

void FleetHeartbeats::Farewell(const std::string& reason) {
  const std::string frame = EncodeMessage(ShutdownMsg{reason});
  std::set<std::string> told;
  for (const auto& [peer, state] : fleet_.workers()) told.insert(peer);
  const auto until = Clock::now() + interval_ * liveness_;
  size_t late = 0;
  for (;;) {
    const bool waiting = std::any_of(fleet_.expired_peers().begin(), fleet_.expired_peers().end(),
                                     [&](const std::string& p) { return told.count(p) == 0; });
    auto in = server_.Receive(std::chrono::milliseconds(waiting ? 20 : 0));
    if (in && told.insert(in->peer).second) {
      server_.Send(in->peer, frame);
      ++late;
    }
    if ((!in && !waiting) || Clock::now() >= until) break;
  }
  if (late > 0) LogInfo("farewell").kv("peers", late).kv("reason", reason);
}

}  // namespace tensortier
