// The policy's weights as workers get them. Every episode report advances
// the version (which drives the workers' epsilon schedule); the weights
// frame is encoded at most every publish interval, once for every worker,
// and the Torch serialisation is redone only when gradient steps changed
// the weights (an ingest-only learner never repeats it). Network thread;
// the calls that read the agent need the training lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "agents/agent.h"

namespace tensortier {

class WeightsPublisher {
 public:
  using Clock = std::chrono::steady_clock;

  // 0: every advanced version is due at once.
  explicit WeightsPublisher(std::chrono::milliseconds publish_interval) : interval_(publish_interval) {}

  uint64_t version() const { return version_; }
  void Advance() { ++version_; }
  void Restore(uint64_t version) { version_ = version; }  // a resumed run's

  // Whether reports advanced the version past the last frame and the
  // interval has passed since it (or `force`).
  bool Due(Clock::time_point now, bool force = false) const {
    return version_ > published_version_ && (force || now - published_at_ >= interval_);
  }
  // Encodes the frame of the current version. Under the training lock.
  void Publish(const PlacementAgent& agent, Clock::time_point now);
  const std::string& frame() const { return frame_; }

  // SerializeWeights() of the agent as it is now. Under the training lock.
  const std::string& Blob(const PlacementAgent& agent);

 private:
  const std::chrono::milliseconds interval_;
  uint64_t version_ = 0;
  uint64_t published_version_ = 0;
  Clock::time_point published_at_;
  std::string frame_;
  std::string blob_;            // SerializeWeights() at blob_updates_
  uint64_t blob_updates_ = 0;
};

}  // namespace tensortier
