// The weights publisher on its own, on an injected clock: a frame is due
// once reports advanced the version and the interval passed (or forced),
// and the frame carries the version and the agent's current weights.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "learner/weights_publisher.h"
#include "protocol/codec.h"
#include "replay/replay_buffer.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallAgent;
using Clock = WeightsPublisher::Clock;
using std::chrono::milliseconds;

WeightsMsg Decode(const std::string& frame) {
  DecodeResult d = DecodeMessage(frame.data(), frame.size());
  return std::get<WeightsMsg>(std::get<Message>(d));
}

TEST(LearnerWeightsPublisher, AFrameIsDueOnceTheVersionAdvancedAndTheIntervalPassed) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  WeightsPublisher weights(milliseconds(50));
  const Clock::time_point t0{};
  weights.Advance();
  weights.Publish(*agent, t0);
  EXPECT_FALSE(weights.Due(t0 + milliseconds(100)));  // no report since
  weights.Advance();
  EXPECT_FALSE(weights.Due(t0 + milliseconds(49)));
  EXPECT_TRUE(weights.Due(t0 + milliseconds(49), /*force=*/true));
  EXPECT_TRUE(weights.Due(t0 + milliseconds(50)));
  weights.Publish(*agent, t0 + milliseconds(50));
  EXPECT_FALSE(weights.Due(t0 + milliseconds(500)));
}

TEST(LearnerWeightsPublisher, WithoutAnIntervalEveryReportIsDue) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  WeightsPublisher weights(milliseconds(0));
  const Clock::time_point t0{};
  weights.Publish(*agent, t0);
  weights.Advance();
  EXPECT_TRUE(weights.Due(t0));
}

TEST(LearnerWeightsPublisher, TheFrameCarriesTheVersionAndTheCurrentWeights) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  WeightsPublisher weights(milliseconds(50));
  weights.Restore(41);  // a resumed run goes on from its version
  weights.Advance();
  weights.Publish(*agent, Clock::time_point{});
  WeightsMsg msg = Decode(weights.frame());
  EXPECT_EQ(msg.version, 42u);
  EXPECT_EQ(msg.agent, "dqn");
  EXPECT_EQ(msg.blob, agent->SerializeWeights());

  // A gradient step changes the weights: the next frame has the new ones.
  const std::string before = msg.blob;
  ReplayBuffer replay(64);
  for (int i = 0; i < 32; ++i)
    replay.Add(testing::Row(0.1f * static_cast<float>(i % 5), static_cast<uint8_t>(i & 1), static_cast<float>(i % 3)));
  std::mt19937_64 rng(1);
  agent->Update(replay, rng);
  EXPECT_EQ(weights.Blob(*agent), agent->SerializeWeights());
  EXPECT_NE(weights.Blob(*agent), before);
  weights.Advance();
  weights.Publish(*agent, Clock::time_point{});
  EXPECT_EQ(Decode(weights.frame()).blob, agent->SerializeWeights());
  EXPECT_EQ(Decode(weights.frame()).version, 43u);
}

}  // namespace
}  // namespace tensortier
