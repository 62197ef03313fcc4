// A frame that failed its checks (protocol/codec.h) is counted by its
// reason and answered with the matching error code; the loop logs and
// replies. One place, so that summary.json, the metrics and the peer's
// error agree on every reason.
#pragma once

#include "learner/learner.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace tensortier {

// Counts the refusal in `counters` and returns the code the peer is told.
ErrorCode CountRefusedFrame(DecodeErrorReason reason, LearnerCounters& counters);

}  // namespace tensortier
