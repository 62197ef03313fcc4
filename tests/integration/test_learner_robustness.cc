// A learner that is fed garbage keeps serving real workers, and counts
// what it refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "learner/learner.h"
#include "protocol/codec.h"
#include "tests/integration/fleet_harness.h"
#include "tests/common/hostile_frames.h"
#include "transport/channel.h"
#include "worker/worker.h"

namespace tensortier {
namespace {

using testing::OomReport;
using testing::QuickLearner;
using testing::RegisterByHand;
using testing::ServingLearner;
using testing::ReceiveA;

// One real worker on `endpoint` until the learner shuts it down.
WorkerStats RunOneWorker(const std::string& endpoint) {
  WorkerConfig wc;
  wc.learner_endpoint = endpoint;
  wc.give_up_seconds = 30;
  Worker worker(wc, std::make_unique<CostModelEvaluator>());
  return worker.Run();
}

TEST(LearnerRobustness, BadFramesAreCountedAnsweredAndSurvived) {
  ServingLearner serving(QuickLearner(30));
  const std::string endpoint = serving.learner.endpoint();

  FleetClient rogue(endpoint);
  // Garbage, an empty frame, a wrong version, a frame from an unregistered peer.
  rogue.Send(std::string("\x01\x02\x03 definitely not capnp", 24));
  ASSERT_TRUE(ReceiveA<ErrorMsg>(rogue, std::chrono::seconds(5)).has_value());
  rogue.Send("");
  auto empty = ReceiveA<ErrorMsg>(rogue, std::chrono::seconds(5));
  ASSERT_TRUE(empty.has_value());
  rogue.Send(EncodeMessageWithVersion(HeartbeatMsg{1, 0, {}}, kProtocolVersion + 1));
  auto version = ReceiveA<ErrorMsg>(rogue, std::chrono::seconds(5));
  ASSERT_TRUE(version.has_value());
  EXPECT_EQ(version->code, ErrorCode::kWrongVersion);
  rogue.Send(EncodeMessage(TransitionBatchMsg{}));
  auto unknown = ReceiveA<ErrorMsg>(rogue, std::chrono::seconds(5));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, ErrorCode::kUnknownWorker);

  // A registered peer sending transitions of the wrong shape is refused too.
  rogue.Send(EncodeMessage(RegisterMsg{"rogue-host", 1, "rogue", {}, "none"}));
  auto ack = ReceiveA<RegisterAckMsg>(rogue, std::chrono::seconds(5));
  ASSERT_TRUE(ack.has_value());
  TransitionBatchMsg bad;
  bad.worker_id = ack->worker_id;
  bad.episode_id = 1;
  bad.transitions.push_back(Transition{{1.0f, 2.0f}, 0, 1.0f, {1.0f}, true});
  rogue.Send(EncodeMessage(bad));

  // A real worker still trains to the end.
  WorkerStats stats = RunOneWorker(endpoint);
  const LearnerResult& result = serving.Wait();

  EXPECT_TRUE(stats.shutdown_by_learner);
  EXPECT_EQ(result.episodes, 30u);
  EXPECT_GE(result.counters.malformed_frames, 3u);  // garbage, empty, bad transitions
  EXPECT_EQ(result.counters.wrong_version_frames, 1u);
  EXPECT_GE(result.counters.unknown_worker_frames, 1u);
  EXPECT_GT(result.weights_version, 1u);
  EXPECT_GT(result.counters.transitions_ingested, 0u);
}

// Issue 17: a registered peer's decodable hostile frames, built by hand and
// sent on a plain DEALER, neither stop the run nor reach training.
TEST(LearnerRobustness, HostileBatchesAreRefusedAndTheRunCompletes) {
  LearnerConfig config = QuickLearner(30);
  config.dqn.learning_starts = 8;
  ServingLearner serving(config);
  const std::string endpoint = serving.learner.endpoint();

  testing::RawDealer rogue(endpoint);
  // Its host name carries a CR and an ESC (the log escapes them: test_log.cc).
  rogue.Send(testing::HandRegister("rogue\rts=2026-01-01T00:00:00.000Z level=error event=forged\x1b[2J"));
  auto ack = rogue.ReceiveA<RegisterAckMsg>(std::chrono::seconds(5));
  ASSERT_TRUE(ack.has_value());
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::string hostile[] = {
      testing::SharedStructListBatch(ack->worker_id, 1),
      testing::HandBatch(ack->worker_id, 2, 40, [&](unsigned, int i) { return i < 0 ? nan : 0.5f; }),
      testing::HandBatch(ack->worker_id, 3, 40, [&](unsigned, int i) { return i < 0 ? 1.0f : inf; }),
  };
  for (const std::string& frame : hostile) {
    rogue.Send(frame);
    // Not an ASSERT: the learner's thread must be joined whatever happens.
    auto error = rogue.ReceiveA<ErrorMsg>(std::chrono::seconds(5));
    EXPECT_TRUE(error.has_value());
    if (error) {
      EXPECT_EQ(error->code, ErrorCode::kMalformed) << error->reason;
    }
  }

  // A report whose runtime is NaN, by hand: refused, not counted as an episode.
  {
    capnp::MallocMessageBuilder message;
    auto envelope = message.initRoot<schema::Envelope>();
    envelope.setProtocolVersion(kProtocolVersion);
    auto report = envelope.getBody().initEpisodeReport();
    report.setWorkerId(ack->worker_id);
    report.setEpisodeId(2);
    report.setRuntimeNs(std::numeric_limits<double>::quiet_NaN());
    report.initPlan().setFormatVersion(PlacementPlan::kFormatVersion);
    rogue.Send(testing::FrameBytes(message));
    auto error = rogue.ReceiveA<ErrorMsg>(std::chrono::seconds(5));
    EXPECT_TRUE(error.has_value());
  }

  WorkerStats stats = RunOneWorker(endpoint);
  const LearnerResult& result = serving.Wait();

  EXPECT_TRUE(stats.shutdown_by_learner);
  EXPECT_EQ(result.episodes, 30u);
  EXPECT_EQ(result.counters.amplified_frames, 1u);
  EXPECT_EQ(result.counters.non_finite_frames, 3u);
  EXPECT_EQ(result.counters.updates_skipped, 0u);
  for (const EpisodeRecord& r : result.records) EXPECT_NE(r.worker_id, ack->worker_id);
  EXPECT_GT(result.updates, 0u);
  ASSERT_EQ(result.records.size(), 30u);
  for (const EpisodeRecord& r : result.records) {
    EXPECT_TRUE(std::isfinite(r.loss)) << "episode " << r.episode;
    EXPECT_TRUE(std::isfinite(r.mean_q)) << "episode " << r.episode;
  }
}

// Issue 17: registrations are counted as registrations (a peer registering
// three times is three, on one worker id), and a message of several frames
// is counted and logged, not silently dropped.
TEST(LearnerRobustness, RegistrationsAndMultipartMessagesAreCounted) {
  ServingLearner serving(QuickLearner(10));
  const std::string endpoint = serving.learner.endpoint();
  testing::RawDealer peer(endpoint);
  for (int i = 0; i < 3; ++i) {
    peer.Send(testing::HandRegister("h"));
    EXPECT_TRUE(peer.ReceiveA<RegisterAckMsg>(std::chrono::seconds(5)).has_value());
  }
  peer.SendParts({testing::HandRegister("h"), "second part"});
  {
    testing::WorkerThreads fleet(endpoint, 1);
    serving.Wait();
  }
  const LearnerResult& result = serving.result;
  EXPECT_EQ(result.episodes, 10u);
  EXPECT_GE(result.counters.workers_registered, 4u);  // the peer's three, the worker's
  EXPECT_EQ(result.workers_seen.size(), 2u);
  EXPECT_EQ(result.counters.multipart_frames, 1u);
}

// Issue 17: libzmq drops a frame over ZMQ_MAXMSGSIZE together with its
// connection and tells no one; the server counts the closed connection from
// the socket's monitor, and the peer's libzmq reconnects and is heard again.
TEST(FleetTransport, AFrameOverTheSizeLimitClosesItsConnectionWhichIsCounted) {
  ChannelOptions options;
  options.max_frame_bytes = 4096;
  FleetServer server("tcp://127.0.0.1:*", options);
  testing::RawDealer peer(server.endpoint());
  peer.Send("hello");
  ASSERT_TRUE(server.Receive(std::chrono::seconds(5)).has_value());
  EXPECT_EQ(server.connections_closed(), 0u);

  peer.Send(std::string(8192, 'x'));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server.connections_closed() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server.connections_closed(), 1u);

  // A frame the peer sends before its own libzmq has seen the connection
  // go goes down with it (seen once beside a busy loop): like a worker, the
  // peer sends again until it is heard.
  std::optional<IncomingFrame> again;
  const auto heard_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!again && std::chrono::steady_clock::now() < heard_by) {
    peer.Send("again");
    again = server.Receive(std::chrono::seconds(1));
  }
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->frame, "again");  // the oversized frame never arrived
  EXPECT_EQ(server.connections_closed(), 1u);
}

// The same at the default limit (64 MiB) against a learner: counted as a
// closed connection while the learner runs, and every episode still arrives.
TEST(LearnerRobustness, AFrameOver64MiBIsCountedAsAClosedConnectionAndTheRunGoesOn) {
  ServingLearner serving(QuickLearner(10));
  Learner& learner = serving.learner;
  const std::string endpoint = learner.endpoint();
  {
    testing::RawDealer peer(endpoint);
    peer.Send(testing::HandRegister("big"));
    ASSERT_TRUE(peer.ReceiveA<RegisterAckMsg>(std::chrono::seconds(5)).has_value());
    peer.Send(std::string((size_t{64} << 20) + 1, '\0'));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (learner.status().counters.connections_closed == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(learner.status().counters.connections_closed, 1u);
    EXPECT_EQ(learner.status().counters.malformed_frames, 0u);
  }
  testing::WorkerThreads fleet(endpoint, 1);
  const LearnerResult& result = serving.Wait();
  EXPECT_EQ(result.episodes, 10u);
  EXPECT_GE(result.counters.connections_closed, 1u);
}

TEST(LearnerRobustness, DuplicateBatchesAreIngestedOnce) {
  ServingLearner serving(QuickLearner(1));
  FleetClient client(serving.learner.endpoint());
  const uint32_t id = RegisterByHand(client, "dup");
  ASSERT_NE(id, 0u);
  TransitionBatchMsg batch;
  batch.worker_id = id;
  batch.episode_id = 7;
  batch.transitions.push_back(Transition{std::vector<float>(kObservationSize, 0.5f), 1, 1.0f,
                                         std::vector<float>(kObservationSize, 0.0f), true});
  client.Send(EncodeMessage(batch));
  client.Send(EncodeMessage(batch));
  client.Send(OomReport(id, 7));
  const LearnerResult& result = serving.Wait();
  EXPECT_EQ(result.counters.transitions_ingested, 1u);
  EXPECT_EQ(result.counters.duplicate_batches, 1u);
  EXPECT_EQ(result.episodes, 1u);
}

// An episode longer than one frame comes in chunks: the learner takes it in
// once every chunk is there, whatever their order, once, and refuses chunk
// numbers out of range; an episode with a chunk missing is not taken in.
TEST(LearnerRobustness, ChunkedEpisodesAreIngestedWholeAndOnce) {
  LearnerConfig config = QuickLearner(2);
  config.keep_batch_log = true;
  ServingLearner serving(config);
  FleetClient client(serving.learner.endpoint());
  const uint32_t worker_id = RegisterByHand(client, "chunks");
  ASSERT_NE(worker_id, 0u);
  auto episode = [&](uint64_t id, size_t transitions) {
    TransitionBatchMsg batch;
    batch.worker_id = worker_id;
    batch.episode_id = id;
    for (size_t i = 0; i < transitions; ++i)
      batch.transitions.push_back(Transition{std::vector<float>(kObservationSize, 0.5f), static_cast<uint8_t>(i & 1),
                                             1.0f, std::vector<float>(kObservationSize, 0.0f), i + 1 == transitions});
    return SplitIntoChunks(batch, 3);
  };
  auto report = [&](uint64_t id) { return OomReport(worker_id, id); };
  // Episode 8: chunks 0 and 1 of 3 only, then its report.
  std::vector<TransitionBatchMsg> partial = episode(8, 7);
  ASSERT_EQ(partial.size(), 3u);
  client.Send(EncodeMessage(partial[0]));
  client.Send(EncodeMessage(partial[1]));
  client.Send(report(8));
  // Episode 9: 10 transitions in 4 chunks, out of order, one twice, one bad.
  std::vector<TransitionBatchMsg> whole = episode(9, 10);
  ASSERT_EQ(whole.size(), 4u);
  TransitionBatchMsg bad = whole[0];
  bad.chunk_index = 9;
  client.Send(EncodeMessage(whole[2]));
  client.Send(EncodeMessage(whole[0]));
  client.Send(EncodeMessage(whole[2]));
  client.Send(EncodeMessage(bad));
  client.Send(EncodeMessage(whole[3]));
  client.Send(EncodeMessage(whole[1]));
  client.Send(report(9));
  const LearnerResult& result = serving.Wait();
  EXPECT_EQ(result.episodes, 2u);
  EXPECT_EQ(result.counters.transitions_ingested, 10u);
  EXPECT_EQ(result.counters.duplicate_batches, 1u);
  EXPECT_EQ(result.counters.malformed_frames, 1u);
  ASSERT_EQ(result.batches.size(), 1u);
  EXPECT_EQ(result.batches[0].episode_id, 9u);
  EXPECT_EQ(result.batches[0].transitions, 10u);
}

// A worker the learner gave up on (it was starved for longer than the
// liveness period) and that speaks again only after the run ended is not in
// the Shutdown broadcast: the learner still tells it to shut down, instead of
// leaving it to retry until its give-up time.
TEST(LearnerRobustness, AWorkerGivenUpOnStillHearsTheShutdown) {
  LearnerConfig config = QuickLearner(8);
  ServingLearner serving(config);
  FleetClient late(serving.learner.endpoint());
  const uint32_t id = RegisterByHand(late, "starved");
  ASSERT_NE(id, 0u);
  // Silent for ten liveness periods: the learner expires it (it keeps
  // heartbeating the others meanwhile). Then it speaks again, as a starved
  // process does, but answers nothing it is told (no re-registering).
  std::this_thread::sleep_for(std::chrono::milliseconds(10 * config.heartbeat_interval_ms * config.heartbeat_liveness));
  std::optional<ShutdownMsg> shutdown;
  std::thread speaker([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!shutdown && std::chrono::steady_clock::now() < give_up) {
      late.Send(EncodeMessage(HeartbeatMsg{id, 0, {}}));
      shutdown = ReceiveA<ShutdownMsg>(late, std::chrono::milliseconds(50));
    }
  });
  {
    testing::WorkerThreads fleet(serving.learner.endpoint(), 1);
    serving.Wait();
  }
  const LearnerResult& result = serving.result;
  speaker.join();
  EXPECT_EQ(result.episodes, 8u);
  EXPECT_GE(result.counters.workers_expired, 1u);
  ASSERT_TRUE(shutdown.has_value()) << "the expired worker was never told the run is over";
  EXPECT_EQ(shutdown->reason, "training finished");
}

}  // namespace
}  // namespace tensortier
