#include "learner/checkpoint_message.h"

#include <cstring>

namespace tensortier {
namespace {

// Reads in proportion to the payload, as the protocol codec does for frames
// (protocol/codec.cc): reading a legal message once costs its size in words.
capnp::ReaderOptions BoundedBy(size_t words) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 1024 + 8 * static_cast<uint64_t>(words);
  return options;
}

}  // namespace

std::string PayloadOf(capnp::MessageBuilder& message) {
  std::string payload(capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word), '\0');
  kj::ArrayOutputStream out(kj::arrayPtr(reinterpret_cast<kj::byte*>(&payload[0]), payload.size()));
  capnp::writeMessage(out, message);
  return payload;
}

CheckpointMessage::CheckpointMessage(const std::string& payload) {
  if (payload.empty() || payload.size() % sizeof(capnp::word) != 0)
    throw CheckpointError("the checkpoint payload (" + std::to_string(payload.size()) +
                          " bytes) is not a whole number of Cap'n Proto words");
  words_ = kj::heapArray<capnp::word>(payload.size() / sizeof(capnp::word));
  std::memcpy(words_.begin(), payload.data(), payload.size());
  reader_ = std::make_unique<capnp::FlatArrayMessageReader>(words_.asPtr(), BoundedBy(words_.size()));
  if (reader_->getEnd() != words_.end())
    throw CheckpointError("the checkpoint payload has " +
                          std::to_string((words_.end() - reader_->getEnd()) * sizeof(capnp::word)) +
                          " bytes after its message");
}

schema::LearnerCheckpoint::Reader CheckpointMessage::root() { return reader_->getRoot<schema::LearnerCheckpoint>(); }

void RequireSection(bool present, const char* section) {
  if (!present) throw CheckpointError(std::string("the checkpoint has no ") + section + " section");
}

}  // namespace tensortier
