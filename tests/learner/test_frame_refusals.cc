// Refused frames are counted by their reason and answered with its code.
#include <gtest/gtest.h>

#include "learner/frame_refusals.h"

namespace tensortier {
namespace {

TEST(LearnerFrameRefusals, EachReasonHasItsCounterAndCode) {
  LearnerCounters c;
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kOversized, c), ErrorCode::kOversized);
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kWrongVersion, c), ErrorCode::kWrongVersion);
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kAmplified, c), ErrorCode::kMalformed);
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kNonFinite, c), ErrorCode::kMalformed);
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kNonFinite, c), ErrorCode::kMalformed);
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kMalformed, c), ErrorCode::kMalformed);
  EXPECT_EQ(CountRefusedFrame(DecodeErrorReason::kEmpty, c), ErrorCode::kMalformed);
  EXPECT_EQ(c.oversized_frames, 1u);
  EXPECT_EQ(c.wrong_version_frames, 1u);
  EXPECT_EQ(c.amplified_frames, 1u);
  EXPECT_EQ(c.non_finite_frames, 2u);
  EXPECT_EQ(c.malformed_frames, 2u);  // malformed and empty
}

}  // namespace
}  // namespace tensortier
