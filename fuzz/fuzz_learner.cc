// Fuzz target: a running learner, fed each input as one frame by a peer
// that registered first (a plain ZeroMQ DEALER on loopback), the position
// of issue 17's attacker. Whatever the frame, the learner must answer the
// next frame (no hang), keep running (no trainer failure, no crash) and
// never meet a non-finite loss (updates_skipped stays 0: nothing non-finite
// reached replay).
//
// Each input is followed by a barrier, a RegisterAck (a learner takes none
// and answers Error "unexpected"), so that the input was handled when the
// barrier's answer arrives. The peer is worker 1: seeds in
// corpus/learner/ are frames of worker 1 (fuzz/make_corpus.cc).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/log.h"
#include "envs/workload_spec.h"
#include "learner/learner.h"
#include "protocol/codec.h"

namespace {

using namespace tensortier;

struct Fixture {
  std::unique_ptr<Learner> learner;
  std::thread serve;
  zmq::context_t context;
  std::unique_ptr<zmq::socket_t> peer;
  std::string barrier = EncodeMessage(RegisterAckMsg{1, 1000, 3});

  Fixture() {
    SetLogLevel(LogLevel::kError);  // every refusal is a warn line
    LearnerConfig c;
    c.bind_endpoint = "tcp://127.0.0.1:*";
    c.workload = LoadWorkloadSpec("synthetic:tiny:3:65536");
    c.env.dram_limit_bytes = c.workload.peak_live_bytes() / 3;
    c.episodes = 1ull << 40;
    c.heartbeat_interval_ms = 60000;  // the peer speaks only when it has an input
    c.dqn.hidden = {16, 16};
    c.dqn.learning_starts = 8;
    c.dqn.batch_size = 8;
    c.dqn.device = "cpu";
    c.eval_interval_episodes = 0;
    learner = std::make_unique<Learner>(c);
    serve = std::thread([this] { learner->Run(); });
    peer = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    peer->set(zmq::sockopt::linger, 0);
    peer->connect(learner->endpoint());
    RegisterMsg reg;
    reg.host = "fuzz";
    reg.worker_name = "fuzz";
    reg.slow_tier_backend = "cost-model";
    peer->send(zmq::buffer(EncodeMessage(reg)), zmq::send_flags::none);
    if (!AwaitAnswer([](const Message& m) {
          auto* ack = std::get_if<RegisterAckMsg>(&m);
          return ack && ack->worker_id == 1;
        }))
      Fail("no RegisterAck as worker 1");
  }

  ~Fixture() {
    learner->Stop();
    serve.join();
  }

  [[noreturn]] static void Fail(const char* what) {
    std::fprintf(stderr, "fuzz_learner: %s\n", what);
    std::abort();
  }

  template <typename Match>
  bool AwaitAnswer(Match match) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{static_cast<void*>(*peer), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) <= 0) continue;
      zmq::message_t in;
      if (!peer->recv(in, zmq::recv_flags::dontwait)) continue;
      DecodeResult r = DecodeMessage(in.data(), in.size());
      if (auto* m = std::get_if<Message>(&r))
        if (match(*m)) return true;
    }
    return false;
  }

  void Feed(const uint8_t* data, size_t size) {
    peer->send(zmq::const_buffer(data, size), zmq::send_flags::none);
    peer->send(zmq::buffer(barrier), zmq::send_flags::none);
    const bool answered = AwaitAnswer([](const Message& m) {
      auto* e = std::get_if<ErrorMsg>(&m);
      return e && e->code == ErrorCode::kUnexpected && e->reason.find("register_ack") != std::string::npos;
    });
    const LearnerStatus s = learner->status();
    if (!s.running) Fail("the learner stopped");
    if (!answered) Fail("the learner did not answer the barrier");
    if (s.counters.updates_skipped > 0) Fail("a non-finite loss: something non-finite reached replay");
  }
};

Fixture& TheFixture() {
  static Fixture* fixture = [] {
    auto* f = new Fixture;
    std::atexit([] { delete &TheFixture(); });
    return f;
  }();
  return *fixture;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;  // keep single runs small; the checks are the same
  TheFixture().Feed(data, size);
  return 0;
}
