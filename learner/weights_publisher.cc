#include "learner/weights_publisher.h"

#include "protocol/codec.h"

namespace tensortier {

const std::string& WeightsPublisher::Blob(const PlacementAgent& agent) {
  const uint64_t updates_now = agent.updates();
  if (blob_.empty() || updates_now != blob_updates_) {
    blob_ = agent.SerializeWeights();
    blob_updates_ = updates_now;
  }
  return blob_;
}

void WeightsPublisher::Publish(const PlacementAgent& agent, Clock::time_point now) {
  WeightsMsg w;
  w.version = version_;
  w.agent = agent.name();
  w.blob = Blob(agent);
  frame_ = EncodeMessage(w);
  published_version_ = version_;
  published_at_ = now;
}

}  // namespace tensortier
