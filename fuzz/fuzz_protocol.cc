// Fuzz target: the learner's and the worker's frame decoder
// (protocol/codec.h). Any bytes must come back as a Message or a
// DecodeError: no crash, no exception, no sanitizer report, no blow-up. A
// decoded message must encode and decode again to the same kind.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "protocol/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensortier;
  CodecLimits limits;
  limits.max_frame_bytes = 1u << 20;  // keep single runs small; the checks are the same
  DecodeResult r = DecodeMessage(data, size, limits);
  if (auto* m = std::get_if<Message>(&r)) {
    const std::string again = EncodeMessage(*m);
    // Amplification: what a frame decodes to must stay in proportion to the
    // frame (a 160-byte frame once decoded to hundreds of MB; see
    // corpus/protocol/regression-amplified-list).
    if (again.size() > 64 * size + 65536) std::abort();
    DecodeResult r2 = DecodeMessage(again.data(), again.size());
    auto* m2 = std::get_if<Message>(&r2);
    if (!m2 || m2->index() != m->index()) std::abort();  // our own encoding must read back
  } else {
    (void)DecodeErrorReasonName(std::get<DecodeError>(r).reason);
  }
  return 0;
}
