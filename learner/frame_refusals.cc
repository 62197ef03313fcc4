#include "learner/frame_refusals.h"

namespace tensortier {

ErrorCode CountRefusedFrame(DecodeErrorReason reason, LearnerCounters& counters) {
  switch (reason) {
    case DecodeErrorReason::kOversized:
      ++counters.oversized_frames;
      return ErrorCode::kOversized;
    case DecodeErrorReason::kWrongVersion:
      ++counters.wrong_version_frames;
      return ErrorCode::kWrongVersion;
    case DecodeErrorReason::kAmplified:
      ++counters.amplified_frames;
      return ErrorCode::kMalformed;
    case DecodeErrorReason::kNonFinite:
      ++counters.non_finite_frames;
      return ErrorCode::kMalformed;
    default:
      ++counters.malformed_frames;
      return ErrorCode::kMalformed;
  }
}

}  // namespace tensortier
