// Frames <-> messages. Decoding never trusts its input: the frame is copied
// into word-aligned memory, read with explicit traversal and nesting limits,
// its size and protocol version are checked, and every failure comes back as
// a DecodeError (never an exception, never a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

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

// Same as EncodeMessage but with another protocol version stamped on the
// envelope: for tests of version checks and for compatibility probes.
std::string EncodeMessageWithVersion(const Message& m, uint16_t version);

}  // namespace tensortier
