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

// kAmplified: a frame whose reads would cost more than its size (shared or
// oversized list elements); kNonFinite: NaN or infinity where the learner
// trains on the value.
enum class DecodeErrorReason { kOversized, kMalformed, kWrongVersion, kEmpty, kAmplified, kNonFinite };
const char* DecodeErrorReasonName(DecodeErrorReason r);

struct DecodeError {
  DecodeErrorReason reason = DecodeErrorReason::kMalformed;
  std::string detail;
};

using DecodeResult = std::variant<Message, DecodeError>;

std::string EncodeMessage(const Message& m);
DecodeResult DecodeMessage(const void* data, size_t size, const CodecLimits& limits = {});

// The name of the first NaN or infinite value of `m` where the learner needs
// a finite one, or null: what DecodeMessage refuses as kNonFinite, for the
// files that embed a message (the learner checkpoint's measurement cache).
const char* NonFiniteFieldOf(const Message& m);

// A TransitionBatch checked and copied out of its frame, for the learner's
// ingest: the network thread opens it, the training thread copies its rows
// into replay's rows, and nothing after Open reads Cap'n Proto (a peer's
// pointers are followed once, on the thread that can refuse them). Reads
// are bounded by the frame itself: at most one word read per word received,
// which refuses lists that share their words or that stand in for floats
// with bigger elements (Cap'n Proto accepts a struct list for List(Float32):
// 15 structs of 100 words read as 15 floats cost 1,500 words per read).
// Open returns null for anything that is not a TransitionBatch of this
// protocol version (DecodeMessage then says what it is or what is wrong),
// and null with `refused` filled for a TransitionBatch that breaks a bound
// or carries a non-finite reward, observation or priority.
class TransitionBatchFrame {
 public:
  static std::unique_ptr<TransitionBatchFrame> Open(const void* data, size_t size, const CodecLimits& limits = {},
                                                    DecodeError* refused = nullptr);
  ~TransitionBatchFrame();

  uint32_t worker_id() const { return worker_id_; }
  uint64_t task_id() const { return task_id_; }
  uint64_t episode_id() const { return episode_id_; }
  uint64_t policy_version() const { return policy_version_; }
  uint32_t chunk_index() const { return chunk_index_; }
  uint32_t chunk_count() const { return chunk_count_; }  // >= 1
  size_t size() const { return actions_.size(); }        // transitions
  // Every row has an observation and a next observation of this many
  // floats (0 if the rows disagree) and an action below max_action() + 1.
  size_t observation_floats() const { return observation_floats_; }
  uint8_t max_action() const { return max_action_; }
  const std::vector<float>& priorities() const { return priorities_; }  // one per row or none
  // Row i into `t`, reusing the capacity of its vectors.
  void CopyRow(size_t i, Transition& t) const;

 private:
  TransitionBatchFrame() = default;
  uint32_t worker_id_ = 0;
  uint64_t task_id_ = 0;
  uint64_t episode_id_ = 0;
  uint64_t policy_version_ = 0;
  uint32_t chunk_index_ = 0;
  uint32_t chunk_count_ = 1;
  size_t observation_floats_ = 0;
  uint8_t max_action_ = 0;
  // Row i's observation is floats_[list_begin_[2i], list_begin_[2i+1]), its
  // next observation the span after it.
  std::vector<float> floats_;
  std::vector<size_t> list_begin_;
  std::vector<uint8_t> actions_;
  std::vector<float> rewards_;
  std::vector<uint8_t> done_;
  std::vector<float> priorities_;
};

// Same as EncodeMessage but with another protocol version stamped on the
// envelope: for tests of version checks and for compatibility probes.
std::string EncodeMessageWithVersion(const Message& m, uint16_t version);

}  // namespace tensortier
