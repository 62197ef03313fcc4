// A fake worker's view of the learner: wait for one frame of a given type.
#pragma once

#include <chrono>
#include <optional>
#include <variant>

#include "protocol/codec.h"
#include "transport/channel.h"

namespace tensortier::testing {

// Waits for one frame that decodes to a message of type M; others are dropped.
template <typename M>
std::optional<M> ReceiveA(FleetClient& client, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto in = client.Receive(std::chrono::milliseconds(20));
    if (!in) continue;
    DecodeResult r = DecodeMessage(in->frame.data(), in->frame.size());
    if (auto* m = std::get_if<Message>(&r))
      if (auto* typed = std::get_if<M>(m)) return *typed;
  }
  return std::nullopt;
}

}  // namespace tensortier::testing
