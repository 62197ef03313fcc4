// A batch of one episode's transitions between ingest (network thread),
// which checked and staged it, and the trainer (training thread), which
// copies its rows into replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "envs/placement_env.h"
#include "protocol/codec.h"

namespace tensortier {

struct StagedBatch {
  uint32_t worker_id = 0;
  uint64_t incarnation = 0;
  uint64_t episode_id = 0;
  size_t size = 0;                              // transitions
  std::unique_ptr<TransitionBatchFrame> frame;  // the wire form, or else:
  std::vector<Transition> transitions;
  std::vector<float> priorities;
  size_t next = 0;               // transitions already inserted
  size_t already_in_replay = 0;  // of them, inserted before a resume (Ingest::partly_in_replay)
  // An episode in several chunks is staged chunk by chunk; only its last
  // chunk, once inserted, makes the episode count as taken in.
  bool completes_episode = true;
  uint64_t episode_transitions = 0;

  const std::vector<float>& row_priorities() const { return frame ? frame->priorities() : priorities; }
  std::optional<double> priority(size_t i) const {
    const std::vector<float>& p = row_priorities();
    return p.empty() ? std::nullopt : std::optional<double>(p[i]);
  }
};

// What the trainer put into replay, for the network thread's acks and counters.
struct InsertedBatch {
  uint32_t worker_id = 0;
  uint64_t incarnation = 0;
  uint64_t episode_id = 0;
  uint64_t transitions = 0;
  bool completes_episode = true;
  uint64_t episode_transitions = 0;
};

// (incarnation, episode) -> transitions of that episode replay holds.
using EpisodeRows = std::map<std::pair<uint64_t, uint64_t>, uint64_t>;

}  // namespace tensortier
