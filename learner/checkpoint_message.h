// The learner checkpoint's payload: one LearnerCheckpoint message
// (learner/checkpoint.capnp) in Cap'n Proto's standard framing. A payload
// that passed the frame's checksum is still not trusted: reads are bounded
// by its size (a legal checkpoint of any size loads, a small one whose
// pointers make it read the same words over and over does not), and
// whatever Cap'n Proto throws about it comes back as a CheckpointError.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "learner/checkpoint.capnp.h"
#include "learner/checkpoint_store.h"

namespace tensortier {

// The message as a payload for CheckpointStore::Write.
std::string PayloadOf(capnp::MessageBuilder& message);

// A payload opened for reading (through ReadCheckpoint, which turns what
// Cap'n Proto throws into CheckpointError); throws CheckpointError when it
// is not one whole message.
class CheckpointMessage {
 public:
  explicit CheckpointMessage(const std::string& payload);
  schema::LearnerCheckpoint::Reader root();

 private:
  kj::Array<capnp::word> words_;  // the payload copied into aligned words
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
};

// `read` applied to the payload's message: its result (values, not readers:
// the message is gone when it returns), or a CheckpointError saying why the
// payload does not read as a learner checkpoint. What `read` throws itself
// (CheckpointError, or std::invalid_argument for a checkpoint of another
// run) passes through.
template <typename Read>
auto ReadCheckpoint(const std::string& payload, Read&& read) {
  try {
    CheckpointMessage message(payload);
    return read(message.root());
  } catch (const kj::Exception& e) {
    throw CheckpointError("the checkpoint payload is not a valid learner checkpoint message: " +
                          std::string(e.getDescription().cStr()));
  }
}

// Copies between a list of numbers and a container (Cap'n Proto's list
// iterators are not standard ones): `out` was initialised to values.size().
template <typename Values, typename ListBuilder>
void FillList(const Values& values, ListBuilder out) {
  unsigned i = 0;
  for (const auto& v : values) out.set(i++, v);
}
template <typename ListReader>
auto VectorOf(ListReader list) {
  std::vector<std::decay_t<decltype(list[0])>> values;
  values.reserve(list.size());
  for (auto v : list) values.push_back(v);
  return values;
}

// Throws CheckpointError naming the section when `present` is false: a
// message without it is not a learner checkpoint, though Cap'n Proto would
// read the missing section as one of zeros.
void RequireSection(bool present, const char* section);

}  // namespace tensortier
