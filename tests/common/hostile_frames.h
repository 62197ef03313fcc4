// Frames a hostile peer sends, built by hand: the generated Cap'n Proto
// builders where a field is honest, AnyPointer and raw words where it is not,
// never protocol/codec's encoder (which cannot produce them); and a plain
// ZeroMQ DEALER to send them, as any peer on the network could.
#pragma once

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "envs/placement_env.h"
#include "protocol/codec.h"
#include "tensortier.capnp.h"

namespace tensortier::testing {

// The standard framing (segment table, then the segments), as a peer's
// libcapnp writes it.
inline std::string FrameBytes(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  return std::string(reinterpret_cast<const char*>(words.asBytes().begin()), words.asBytes().size());
}

inline std::string HandRegister(const std::string& host, const std::string& name = "rogue") {
  capnp::MallocMessageBuilder message;
  auto envelope = message.initRoot<schema::Envelope>();
  envelope.setProtocolVersion(kProtocolVersion);
  auto reg = envelope.getBody().initRegister();
  reg.setHost(host);
  reg.setPid(4242);
  reg.setWorkerName(name);
  reg.setSlowTierBackend("cost-model");
  return FrameBytes(message);
}

// An envelope of this protocol version holding a TransitionBatch of one chunk.
inline schema::TransitionBatch::Builder InitBatch(capnp::MessageBuilder& message, uint32_t worker_id,
                                                  uint64_t episode_id) {
  auto envelope = message.initRoot<schema::Envelope>();
  envelope.setProtocolVersion(kProtocolVersion);
  auto batch = envelope.getBody().initTransitions();
  batch.setWorkerId(worker_id);
  batch.setEpisodeId(episode_id);
  batch.setChunkCount(1);
  return batch;
}

// A TransitionBatch of `rows` well-formed rows (observations of
// kObservationSize floats), each value given by `value(row, index)`
// (index kObservationSize.. for the next observation, -1 for the reward).
template <typename ValueOf>
std::string HandBatch(uint32_t worker_id, uint64_t episode_id, unsigned rows, ValueOf value) {
  capnp::MallocMessageBuilder message;
  auto list = InitBatch(message, worker_id, episode_id).initTransitions(rows);
  for (unsigned r = 0; r < rows; ++r) {
    auto observation = list[r].initObservation(kObservationSize);
    auto next = list[r].initNextObservation(kObservationSize);
    for (unsigned i = 0; i < kObservationSize; ++i) {
      observation.set(i, value(r, static_cast<int>(i)));
      next.set(i, value(r, static_cast<int>(kObservationSize + i)));
    }
    list[r].setAction(static_cast<uint8_t>(r % 2));
    list[r].setReward(value(r, -1));
    list[r].setDone(r + 1 == rows);
  }
  return FrameBytes(message);
}

// Issue 17's frame: `rows` rows whose observations and next observations
// all point at one list of kObservationSize structs of `data_words` data
// words each (Cap'n Proto reads a struct list where List(Float32) is
// expected: each struct's first 4 bytes are its float). About 12 KB with
// the defaults; every read of one of its 2 * rows lists costs 1,500 words.
inline std::string SharedStructListBatch(uint32_t worker_id, uint64_t episode_id, unsigned rows = 3,
                                         unsigned data_words = 100) {
  capnp::MallocMessageBuilder message(8192);  // one segment: the patch below indexes it
  auto list = InitBatch(message, worker_id, episode_id).initTransitions(rows);
  for (unsigned r = 0; r < rows; ++r) {
    list[r].setAction(0);
    list[r].setReward(1.0f);
    list[r].setDone(r + 1 == rows);
  }
  auto structs = capnp::AnyStruct::Builder(list[0]).getPointerSection()[0].initAsListOfAnyStruct(
      static_cast<uint16_t>(data_words), 0, kObservationSize);
  for (unsigned i = 0; i < kObservationSize; ++i) {
    const float v = 0.25f;
    std::memcpy(structs[i].getDataSection().begin(), &v, sizeof v);
  }
  // Where each row's two pointers lie in the segment: right after its data section.
  const kj::ArrayPtr<const capnp::word> segment = message.getSegmentsForOutput()[0];
  auto pointer_index = [&](unsigned row, unsigned pointer) {
    const kj::byte* data_end = capnp::AnyStruct::Reader(list[row].asReader()).getDataSection().end();
    return static_cast<size_t>(reinterpret_cast<const capnp::word*>(data_end) - segment.begin()) + pointer;
  };
  std::string bytes = FrameBytes(message);
  constexpr size_t kTableWords = 1;  // one segment: its count and its size
  auto word_at = [&](size_t segment_index) { return &bytes[(kTableWords + segment_index) * 8]; };
  uint64_t first;
  std::memcpy(&first, word_at(pointer_index(0, 0)), 8);
  const int32_t first_offset = static_cast<int32_t>(static_cast<uint32_t>(first)) >> 2;
  const int64_t target = static_cast<int64_t>(pointer_index(0, 0)) + 1 + first_offset;
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned p = 0; p < 2; ++p) {
      if (r == 0 && p == 0) continue;
      const int64_t at = static_cast<int64_t>(pointer_index(r, p));
      const int32_t offset = static_cast<int32_t>(target - (at + 1));
      const uint64_t pointer = (first & 0xffffffff00000000ull) | (static_cast<uint32_t>(offset) << 2) | 1u;
      std::memcpy(word_at(static_cast<size_t>(at)), &pointer, 8);
    }
  return bytes;
}

// A plain ZeroMQ DEALER on loopback: what any process can open.
class RawDealer {
 public:
  explicit RawDealer(const std::string& endpoint) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  void Send(const std::string& frame) { socket_.send(zmq::buffer(frame), zmq::send_flags::none); }
  void SendParts(const std::vector<std::string>& parts) {
    for (size_t i = 0; i < parts.size(); ++i)
      socket_.send(zmq::buffer(parts[i]), i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  // The next message of type M within `timeout`; others are skipped.
  template <typename M>
  std::optional<M> ReceiveA(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) <= 0) continue;
      zmq::message_t in;
      if (!socket_.recv(in, zmq::recv_flags::dontwait)) continue;
      DecodeResult r = DecodeMessage(in.data(), in.size());
      if (auto* m = std::get_if<Message>(&r))
        if (auto* typed = std::get_if<M>(m)) return *typed;
    }
    return std::nullopt;
  }

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
};

}  // namespace tensortier::testing
