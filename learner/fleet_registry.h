// The learner's view of its fleet: which worker each routing id is, the id
// and Ape-X exploration index each worker incarnation keeps across its
// reconnects and the learner's restarts, liveness, and when the fleet is big
// enough to start. Network thread only; it sends nothing itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "learner/checkpoint.capnp.h"
#include "protocol/messages.h"

namespace tensortier {

struct WorkerState {
  uint32_t id = 0;
  uint64_t incarnation = 0;  // the dedupe key's first half (never 0: see FleetRegistry::Register)
  uint32_t exploration_index = 0;
  std::string peer;
  std::string name;
  std::string host;
  std::string backend;
  std::chrono::steady_clock::time_point last_seen;
  uint64_t episodes = 0;
  uint64_t last_episode_id = 0;  // newest episode fully ingested
  bool refused_task = false;     // its latest answer to the task was a refusal
};

class FleetRegistry {
 public:
  using Clock = std::chrono::steady_clock;

  // Tasks are held back until `min_workers` registered, so that every
  // worker starts from the same policy.
  explicit FleetRegistry(uint32_t min_workers) : min_workers_(min_workers) {}

  struct Registration {
    WorkerState* worker = nullptr;
    bool new_worker = false;    // an incarnation never seen before (not a reconnect)
    // Who gets a task now: nobody (the fleet is still too small), every
    // connected worker (this registration started the fleet), or this one.
    enum class Tasks { kNone, kEveryone, kThisWorker } tasks = Tasks::kNone;
  };
  Registration Register(const std::string& peer, const RegisterMsg& reg, Clock::time_point now);

  // The worker on this routing id; null if it is not registered.
  WorkerState* Find(const std::string& peer);
  // The connected worker of this incarnation; null if it is gone.
  WorkerState* FindByIncarnation(uint64_t incarnation);

  // A task every worker refuses (a corrupted workload, a model no host can
  // profile alike) would keep the run waiting forever. The registry notes
  // each refusal and each sign that a worker took the task (an episode's
  // data); NoWorkerTakesTheTask is true once every connected worker refused
  // and nobody took the task for `give_up`.
  void OnTaskRefused(WorkerState& worker, const std::string& reason, Clock::time_point now);
  void OnTaskAccepted(WorkerState& worker);
  bool NoWorkerTakesTheTask(Clock::time_point now, Clock::duration give_up) const;
  const std::string& last_refusal() const { return last_refusal_; }

  // Removes the workers silent for longer than `deadline` and returns them.
  std::vector<WorkerState> ExpireSilent(Clock::time_point now, Clock::duration deadline);

  std::map<std::string, WorkerState>& workers() { return workers_; }
  const std::map<std::string, WorkerState>& workers() const { return workers_; }
  size_t size() const { return workers_.size(); }
  // Routing ids given up on and not registered since.
  const std::set<std::string>& expired_peers() const { return expired_peers_; }

  // Checkpoint section: the next ids and each incarnation's id and index.
  void Save(schema::FleetSection::Builder out) const;
  void Load(schema::FleetSection::Reader in);

 private:
  // Where a worker incarnation sits in the fleet.
  struct Slot {
    uint32_t id = 0;
    uint32_t exploration_index = 0;
  };

  const uint32_t min_workers_;
  std::optional<Clock::time_point> refusing_since_;
  std::string last_refusal_;
  std::map<std::string, WorkerState> workers_;  // by routing id
  std::map<uint64_t, Slot> slots_;              // by incarnation
  std::map<uint64_t, std::string> peer_of_;     // routing id by incarnation, connected workers only
  std::set<std::string> expired_peers_;
  uint32_t next_worker_id_ = 1;
  uint32_t next_exploration_index_ = 0;
  bool started_ = false;
};

}  // namespace tensortier
