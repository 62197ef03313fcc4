#include "learner/fleet_registry.h"

namespace tensortier {

FleetRegistry::Registration FleetRegistry::Register(const std::string& peer, const RegisterMsg& reg,
                                                    Clock::time_point now) {
  Registration out;
  expired_peers_.erase(peer);
  // Old workers send no incarnation: their routing id's worker id stands in
  // (with the top bit set so it cannot meet a real incarnation).
  const bool known_incarnation = reg.incarnation != 0;
  WorkerState& w = workers_[peer];
  if (known_incarnation) {
    // The same process again on a new socket (it reconnected, or this
    // learner restarted): same id, same exploration; forget the old socket.
    auto slot = slots_.find(reg.incarnation);
    if (slot != slots_.end()) {
      for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->first != peer && it->second.incarnation == reg.incarnation) it = workers_.erase(it);
        else ++it;
      }
      w.id = slot->second.id;
      w.exploration_index = slot->second.exploration_index;
    }
  }
  if (w.id == 0) {
    w.id = next_worker_id_++;
    w.exploration_index = next_exploration_index_++;
    out.new_worker = true;
  }
  w.incarnation = known_incarnation ? reg.incarnation : ((1ull << 63) | w.id);
  slots_[w.incarnation] = Slot{w.id, w.exploration_index};
  peer_of_[w.incarnation] = peer;
  w.peer = peer;
  w.name = reg.worker_name;
  w.host = reg.host;
  w.backend = reg.slow_tier_backend;
  w.last_seen = now;
  out.worker = &w;
  if (started_) {
    out.tasks = Registration::Tasks::kThisWorker;
  } else if (workers_.size() >= min_workers_) {
    started_ = true;
    out.tasks = Registration::Tasks::kEveryone;
  }
  return out;
}

WorkerState* FleetRegistry::Find(const std::string& peer) {
  auto it = workers_.find(peer);
  return it == workers_.end() ? nullptr : &it->second;
}

WorkerState* FleetRegistry::FindByIncarnation(uint64_t incarnation) {
  auto peer = peer_of_.find(incarnation);
  return peer == peer_of_.end() ? nullptr : Find(peer->second);
}

void FleetRegistry::OnTaskRefused(WorkerState& worker, const std::string& reason, Clock::time_point now) {
  worker.refused_task = true;
  last_refusal_ = reason;
  if (!refusing_since_) refusing_since_ = now;
}

void FleetRegistry::OnTaskAccepted(WorkerState& worker) {
  worker.refused_task = false;
  refusing_since_.reset();
}

bool FleetRegistry::NoWorkerTakesTheTask(Clock::time_point now, Clock::duration give_up) const {
  if (!refusing_since_ || workers_.empty() || now - *refusing_since_ < give_up) return false;
  for (const auto& [peer, w] : workers_)
    if (!w.refused_task) return false;
  return true;
}

std::vector<WorkerState> FleetRegistry::ExpireSilent(Clock::time_point now, Clock::duration deadline) {
  std::vector<WorkerState> expired;
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (now - it->second.last_seen <= deadline) {
      ++it;
      continue;
    }
    expired_peers_.insert(it->first);
    auto p = peer_of_.find(it->second.incarnation);
    if (p != peer_of_.end() && p->second == it->first) peer_of_.erase(p);
    expired.push_back(std::move(it->second));
    it = workers_.erase(it);
  }
  return expired;
}

void FleetRegistry::Save(schema::FleetSection::Builder out) const {
  out.setNextWorkerId(next_worker_id_);
  out.setNextExplorationIndex(next_exploration_index_);
  auto slots = out.initSlots(static_cast<unsigned>(slots_.size()));
  unsigned i = 0;
  for (const auto& [incarnation, slot] : slots_) {
    slots[i].setIncarnation(incarnation);
    slots[i].setWorkerId(slot.id);
    slots[i].setExplorationIndex(slot.exploration_index);
    ++i;
  }
}

void FleetRegistry::Load(schema::FleetSection::Reader in) {
  next_worker_id_ = in.getNextWorkerId();
  next_exploration_index_ = in.getNextExplorationIndex();
  slots_.clear();
  for (schema::WorkerSlot::Reader slot : in.getSlots())
    slots_[slot.getIncarnation()] = Slot{slot.getWorkerId(), slot.getExplorationIndex()};
}

}  // namespace tensortier
