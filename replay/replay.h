// What an agent's update needs of replay, uniform or prioritised: draw a
// batch, and (prioritised only) take the batch's |TD error|s back as new
// priorities. ReplayBuffer (replay/replay_buffer.h) and PrioritizedReplay
// (replay/prioritized_replay.h) implement it; RateLimiter
// (replay/rate_limiter.h) paces inserts against samples for either.
//
// Plain C++ (no LibTorch, no network), not synchronised: the learner
// guards replay and the agent with one mutex.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "envs/transition.h"

namespace tensortier {

struct ReplaySample {
  std::vector<const Transition*> transitions;
  std::vector<float> weights;         // importance weights, max 1; empty: all 1 (uniform)
  std::vector<uint64_t> keys;         // prioritised only: for UpdatePriorities
  std::vector<double> probabilities;  // prioritised only: P(i) of each draw
};

class Replay {
 public:
  virtual ~Replay() = default;
  virtual size_t size() const = 0;
  virtual size_t capacity() const = 0;
  virtual uint64_t total_added() const = 0;
  // Whether draws are weighted by priority, so that the trainer should
  // weight its loss by `weights` and hand |TD error|s to UpdatePriorities.
  virtual bool prioritized() const = 0;
  // `batch` draws with replacement into *out, whose vectors are reused (an
  // update loop allocates nothing per batch). Throws std::logic_error when
  // the replay is empty.
  virtual void SampleInto(size_t batch, std::mt19937_64& rng, ReplaySample* out) const = 0;
  // Raw priorities (|TD error|) for the items with these keys; returns how
  // many were applied (uniform replay has no priorities: 0).
  virtual size_t UpdatePriorities(const std::vector<uint64_t>& keys, const std::vector<double>& priorities) = 0;
};

}  // namespace tensortier
