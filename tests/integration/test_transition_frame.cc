// TransitionBatchFrame (protocol/codec.h), the learner's ingest form of a
// TransitionBatch: the same rows as DecodeMessage, copied into reused
// storage, and null for anything DecodeMessage must judge.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "envs/placement_env.h"
#include "protocol/codec.h"
#include "tests/common/hostile_frames.h"

namespace tensortier {
namespace {

Transition Row(float tag, uint8_t action, bool done) {
  Transition t;
  for (int i = 0; i < kObservationSize; ++i) {
    t.observation.push_back(tag + 0.01f * static_cast<float>(i));
    t.next_observation.push_back(-tag - 0.01f * static_cast<float>(i));
  }
  t.action = action;
  t.reward = tag * 3;
  t.done = done;
  return t;
}

TransitionBatchMsg Batch(size_t rows) {
  TransitionBatchMsg m;
  m.worker_id = 7;
  m.task_id = 3;
  m.episode_id = 1ull << 40;
  m.policy_version = 12;
  for (size_t i = 0; i < rows; ++i) {
    m.transitions.push_back(Row(static_cast<float>(i), static_cast<uint8_t>(i % 2), i + 1 == rows));
    m.priorities.push_back(0.5f * static_cast<float>(i));
  }
  return m;
}

TEST(TransitionBatchFrame, ReadsTheSameRowsAsDecodeMessage) {
  const TransitionBatchMsg sent = Batch(3000);  // past one default segment
  const std::string frame = EncodeMessage(sent);
  auto f = TransitionBatchFrame::Open(frame.data(), frame.size());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->worker_id(), 7u);
  EXPECT_EQ(f->task_id(), 3u);
  EXPECT_EQ(f->episode_id(), 1ull << 40);
  EXPECT_EQ(f->policy_version(), 12u);
  ASSERT_EQ(f->size(), sent.transitions.size());
  EXPECT_EQ(f->observation_floats(), static_cast<size_t>(kObservationSize));
  EXPECT_EQ(f->max_action(), 1);
  EXPECT_EQ(f->priorities(), sent.priorities);
  // Into a row that held something else (and had other sizes) before.
  Transition row = Row(99, 1, false);
  row.observation.resize(3);
  for (size_t i = 0; i < f->size(); ++i) {
    f->CopyRow(i, row);
    const Transition& want = sent.transitions[i];
    ASSERT_EQ(row.observation, want.observation) << i;
    ASSERT_EQ(row.next_observation, want.next_observation) << i;
    ASSERT_EQ(row.action, want.action) << i;
    ASSERT_EQ(row.reward, want.reward) << i;
    ASSERT_EQ(row.done, want.done) << i;
  }
}

TEST(TransitionBatchFrame, FlagsRowsOfDifferentShapes) {
  TransitionBatchMsg m = Batch(4);
  m.transitions[2].next_observation.pop_back();
  const std::string frame = EncodeMessage(m);
  auto f = TransitionBatchFrame::Open(frame.data(), frame.size());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->observation_floats(), 0u);
}

TEST(TransitionBatchFrame, IsNullForOtherMessagesAndBadFrames) {
  const std::string heartbeat = EncodeMessage(HeartbeatMsg{1, 2, {}});
  EXPECT_EQ(TransitionBatchFrame::Open(heartbeat.data(), heartbeat.size()), nullptr);
  const std::string other_version = EncodeMessageWithVersion(Batch(2), kProtocolVersion + 1);
  EXPECT_EQ(TransitionBatchFrame::Open(other_version.data(), other_version.size()), nullptr);
  const std::string frame = EncodeMessage(Batch(50));
  EXPECT_EQ(TransitionBatchFrame::Open(frame.data(), 0), nullptr);
  EXPECT_EQ(TransitionBatchFrame::Open(frame.data(), frame.size() - 3), nullptr);  // not whole words
  // Cut short, or with bytes flipped all over: null or a frame whose rows
  // can all be read, never a crash or a throw.
  for (size_t cut = 8; cut < frame.size(); cut += 64) {
    auto f = TransitionBatchFrame::Open(frame.data(), cut);
    if (!f) continue;
    Transition row;
    for (size_t i = 0; i < f->size(); ++i) f->CopyRow(i, row);
  }
  for (size_t stride = 7; stride < 200; stride += 13) {
    std::string bad = frame;
    for (size_t i = 0; i < bad.size(); i += stride) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto f = TransitionBatchFrame::Open(bad.data(), bad.size());
    if (!f) continue;
    Transition row;
    for (size_t i = 0; i < f->size(); ++i) EXPECT_NO_THROW(f->CopyRow(i, row));
  }
}

// Issue 17: three rows whose six float lists all point at one list of
// kObservationSize structs of 100 words. It passed Open (8 words estimated per list) and
// made CopyRow, on the training thread, exceed the traversal limit.
TEST(TransitionBatchFrame, RefusesListsThatShareTheirWords) {
  const std::string frame = testing::SharedStructListBatch(7, 1);
  ASSERT_LT(frame.size(), 800u * kObservationSize + 1000u);  // ~12 KB with 15 floats
  ASSERT_GT(frame.size(), 800u * kObservationSize);
  DecodeError refused;
  auto f = TransitionBatchFrame::Open(frame.data(), frame.size(), {}, &refused);
  if (f) {
    Transition row;
    for (size_t i = 0; i < f->size(); ++i) EXPECT_NO_THROW(f->CopyRow(i, row));
  }
  ASSERT_EQ(f, nullptr);
  EXPECT_EQ(refused.reason, DecodeErrorReason::kAmplified) << refused.detail;
}

// A struct list standing in for floats is refused even unshared: its
// reads cost its structs' words, not 4 bytes a float.
TEST(TransitionBatchFrame, RefusesStructListsStandingInForFloats) {
  const std::string frame = testing::SharedStructListBatch(7, 1, /*rows=*/1, /*data_words=*/1);
  DecodeError refused;
  EXPECT_EQ(TransitionBatchFrame::Open(frame.data(), frame.size(), {}, &refused), nullptr);
  EXPECT_EQ(refused.reason, DecodeErrorReason::kAmplified) << refused.detail;
}

// Rows of zero words cost nothing to send: 16 million of them in a frame of
// a few words must be refused before anything is sized by their count.
TEST(TransitionBatchFrame, RefusesRowsThatCostNoWords) {
  capnp::MallocMessageBuilder message;
  auto batch = testing::InitBatch(message, 7, 1);
  capnp::AnyStruct::Builder(kj::mv(batch)).getPointerSection()[0].initAsListOfAnyStruct(0, 0, 1u << 24);
  const std::string frame = testing::FrameBytes(message);
  ASSERT_LT(frame.size(), 200u);
  DecodeError refused;
  EXPECT_EQ(TransitionBatchFrame::Open(frame.data(), frame.size(), {}, &refused), nullptr);
  EXPECT_EQ(refused.reason, DecodeErrorReason::kAmplified) << refused.detail;
}

TEST(TransitionBatchFrame, RefusesNonFiniteValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::string fine = testing::HandBatch(7, 1, 3, [](unsigned, int) { return 0.5f; });
  EXPECT_NE(TransitionBatchFrame::Open(fine.data(), fine.size()), nullptr);
  const std::string nan_reward =
      testing::HandBatch(7, 1, 3, [&](unsigned r, int i) { return r == 2 && i < 0 ? nan : 0.5f; });
  const std::string inf_observation =
      testing::HandBatch(7, 1, 3, [&](unsigned r, int i) { return r == 1 && i == 4 ? -inf : 0.5f; });
  const std::string inf_next =
      testing::HandBatch(7, 1, 3, [&](unsigned r, int i) { return r == 0 && i == kObservationSize ? inf : 0.5f; });
  for (const std::string* frame : {&nan_reward, &inf_observation, &inf_next}) {
    DecodeError refused;
    EXPECT_EQ(TransitionBatchFrame::Open(frame->data(), frame->size(), {}, &refused), nullptr);
    EXPECT_EQ(refused.reason, DecodeErrorReason::kNonFinite) << refused.detail;
  }
  TransitionBatchMsg m = Batch(3);
  m.priorities[1] = nan;
  const std::string nan_priority = EncodeMessage(m);
  DecodeError refused;
  EXPECT_EQ(TransitionBatchFrame::Open(nan_priority.data(), nan_priority.size(), {}, &refused), nullptr);
  EXPECT_EQ(refused.reason, DecodeErrorReason::kNonFinite) << refused.detail;
}

}  // namespace
}  // namespace tensortier
