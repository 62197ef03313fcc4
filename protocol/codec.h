// Frames <-> messages. Decoding never trusts its input: the frame is copied
// into word-aligned memory, read with explicit traversal and nesting limits,
// its size and protocol version are checked, and every failure comes back as
// a DecodeError (never an exception, never a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "protocol/messages.h"

namespace tensortier {

struct CodecLimits {
  size_t max_frame_bytes = 64u << 20;          // 64 MiB
  uint64_t traversal_limit_words = 16u << 20;  // 128 MiB of reads
  int nesting_limit = 32;
};

enum class DecodeErrorReason { kOversized, kMalformed, kWrongVersion, kEmpty };
const char* DecodeErrorReasonName(DecodeErrorReason r);

struct DecodeError {
  DecodeErrorReason reason = DecodeErrorReason::kMalformed;
  std::string detail;
};

using DecodeResult = std::variant<Message, DecodeError>;

std::string EncodeMessage(const Message& m);
DecodeResult DecodeMessage(const void* data, size_t size, const CodecLimits& limits = {});

// A TransitionBatch frame kept in its wire form, for the learner's ingest:
// the rows are copied straight from the frame into replay's rows, with no
// TransitionBatchMsg (two vectors per transition) in between. Open checks
// everything the accessors read, so they do not fail afterwards; it returns
// null for anything that is not a well-formed TransitionBatch of this
// protocol version (DecodeMessage then says what it is or what is wrong).
// Not synchronised; may be handed to another thread.
class TransitionBatchFrame {
 public:
  static std::unique_ptr<TransitionBatchFrame> Open(const void* data, size_t size, const CodecLimits& limits = {});
  ~TransitionBatchFrame();

  uint32_t worker_id() const;
  uint64_t task_id() const;
  uint64_t episode_id() const;
  uint64_t policy_version() const;
  uint32_t chunk_index() const;
  uint32_t chunk_count() const;         // >= 1
  size_t size() const;                  // transitions
  // Every row has an observation and a next observation of this many
  // floats (0 if the rows disagree) and an action below max_action() + 1.
  size_t observation_floats() const { return observation_floats_; }
  uint8_t max_action() const { return max_action_; }
  const std::vector<float>& priorities() const { return priorities_; }  // one per row or none
  // Row i into `t`, reusing the capacity of its vectors.
  void CopyRow(size_t i, Transition& t) const;

 private:
  TransitionBatchFrame() = default;
  struct Reader;
  std::unique_ptr<Reader> reader_;
  size_t observation_floats_ = 0;
  uint8_t max_action_ = 0;
  std::vector<float> priorities_;
};

// Same as EncodeMessage but with another protocol version stamped on the
// envelope: for tests of version checks and for compatibility probes.
std::string EncodeMessageWithVersion(const Message& m, uint16_t version);

}  // namespace tensortier
