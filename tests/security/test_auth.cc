// CURVE with a ZAP allow-list on real sockets: workers without a key, with
// an unlisted key or with the wrong learner key get nothing through, and are
// counted; a listed worker works (transport level and with a real learner).
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "learner/learner.h"
#include "protocol/codec.h"
#include "tests/integration/fleet_harness.h"
#include "transport/channel.h"
#include "transport/security.h"
#include "worker/worker.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Fleet {
  std::string dir;
  TransportSecurity learner, worker, stranger, wrong_server;
};

// learner.key, workers/w1.{key,pub} (listed), stranger.key (not listed),
// impostor.key (whose public key a misled worker takes for the learner's).
Fleet MakeFleet(const std::string& name) {
  Fleet f;
  f.dir = (fs::temp_directory_path() / ("tensortier-auth-" + name + "-" + std::to_string(::getpid()))).string();
  fs::remove_all(f.dir);
  WriteKeyPairFiles(f.dir, "learner", false);
  WriteKeyPairFiles(f.dir + "/workers", "w1", false);
  WriteKeyPairFiles(f.dir, "stranger", false);
  WriteKeyPairFiles(f.dir, "impostor", false);
  f.learner.secret_key_file = f.dir + "/learner.key";
  f.learner.authorized_keys = f.dir + "/workers";
  f.worker.secret_key_file = f.dir + "/workers/w1.key";
  f.worker.server_key = f.dir + "/learner.pub";
  f.stranger.secret_key_file = f.dir + "/stranger.key";
  f.stranger.server_key = f.dir + "/learner.pub";
  f.wrong_server.secret_key_file = f.dir + "/workers/w1.key";
  f.wrong_server.server_key = f.dir + "/impostor.pub";
  return f;
}

// Waits (bounded) until `done` holds; the bound is a hang guard, not a timing assert.
template <typename F>
bool WaitFor(F done, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

// Sends `frame` every few ms while draining `server`, until the server has
// refused `refusals` more handshakes than `before` (read before the client
// was made: its handshake may fail at once); returns the frames that got through.
size_t HammerUntilRefused(FleetServer& server, FleetClient& client, const std::string& frame, uint64_t before,
                          uint64_t refusals, uint64_t AuthStats::*field) {
  size_t received = 0;
  WaitFor([&] {
    client.Send(frame);
    while (server.Receive(milliseconds(5))) ++received;
    return server.auth_stats().*field >= before + refusals;
  });
  EXPECT_GE(server.auth_stats().*field, before + refusals);
  // Whatever was queued before the refusal had its chance to arrive.
  for (int i = 0; i < 20; ++i)
    while (server.Receive(milliseconds(5))) ++received;
  return received;
}

TEST(Auth, OnlyListedWorkersGetFramesThrough) {
  Fleet f = MakeFleet("transport");
  FleetServer server("tcp://127.0.0.1:*", f.learner);
  ASSERT_TRUE(server.authenticated());
  const std::string endpoint = server.endpoint();
  const AuthStats process_before = ProcessAuthStats();

  // No key at all: plain text against a CURVE socket. (libzmq does not
  // reconnect a socket whose handshake failed: one refusal per socket.)
  {
    const uint64_t before = server.auth_stats().refused;
    FleetClient plain(endpoint);
    EXPECT_EQ(HammerUntilRefused(server, plain, "hello from nowhere", before, 1, &AuthStats::refused), 0u);
  }
  // A valid key pair that the allow-list does not hold: the ZAP handler refuses it.
  {
    const uint64_t before = server.auth_stats().refused_unknown_key;
    FleetClient stranger(endpoint, f.stranger);
    EXPECT_EQ(HammerUntilRefused(server, stranger, "hello from a stranger", before, 1, &AuthStats::refused_unknown_key),
              0u);
    // The stranger learns that it was refused (and logs why).
    EXPECT_TRUE(WaitFor([&] { return stranger.handshake_failures() >= 1; }));
  }
  // A listed worker that was given the wrong learner key cannot complete the handshake.
  {
    // (The stranger's socket may still add refusals: read the count after it is gone.)
    const uint64_t before = server.auth_stats().refused;
    FleetClient misled(endpoint, f.wrong_server);
    EXPECT_EQ(HammerUntilRefused(server, misled, "hello from a misled worker", before, 1, &AuthStats::refused), 0u);
    EXPECT_TRUE(WaitFor([&] { return misled.handshake_failures() >= 1; }));
  }
  EXPECT_EQ(server.auth_stats().accepted, 0u);

  // The listed worker gets through, both ways, encrypted.
  FleetClient good(endpoint, f.worker);
  std::optional<IncomingFrame> in;
  ASSERT_TRUE(WaitFor([&] {
    good.Send("hello");
    in = server.Receive(milliseconds(20));
    return in.has_value();
  }));
  EXPECT_EQ(in->frame, "hello");
  // The monitor's events arrive on their own thread.
  EXPECT_TRUE(WaitFor([&] { return server.auth_stats().accepted == 1; }));
  ASSERT_TRUE(server.Send(in->peer, "welcome"));
  std::optional<IncomingFrame> back;
  ASSERT_TRUE(WaitFor([&] { return (back = good.Receive(milliseconds(20))).has_value(); }));
  EXPECT_EQ(back->frame, "welcome");
  EXPECT_EQ(good.handshake_failures(), 0u);

  // A reconnect (new socket, same keys) is admitted again.
  good.Reconnect();
  ASSERT_TRUE(WaitFor([&] {
    good.Send("again");
    in = server.Receive(milliseconds(20));
    return in.has_value();
  }));
  EXPECT_EQ(in->frame, "again");

  EXPECT_TRUE(WaitFor([&] { return ProcessAuthStats().accepted - process_before.accepted >= 2; }));
  const AuthStats process_after = ProcessAuthStats();
  EXPECT_GE(process_after.refused - process_before.refused, 3u);
  EXPECT_GE(process_after.refused_unknown_key - process_before.refused_unknown_key, 1u);
  EXPECT_GE(process_after.accepted - process_before.accepted, 2u);
}

TEST(Auth, TwoSecuredServersKeepTheirOwnAllowLists) {
  Fleet a = MakeFleet("a"), b = MakeFleet("b");
  FleetServer sa("tcp://127.0.0.1:*", a.learner), sb("tcp://127.0.0.1:*", b.learner);
  // b's worker is a stranger to a (its key is not in a's list; it knows a's key).
  TransportSecurity b_worker_to_a = b.worker;
  b_worker_to_a.server_key = a.dir + "/learner.pub";
  const uint64_t before = sa.auth_stats().refused_unknown_key;
  FleetClient cross(sa.endpoint(), b_worker_to_a);
  EXPECT_EQ(HammerUntilRefused(sa, cross, "cross", before, 1, &AuthStats::refused_unknown_key), 0u);
  FleetClient own(sb.endpoint(), b.worker);
  ASSERT_TRUE(WaitFor([&] {
    own.Send("mine");
    return sb.Receive(milliseconds(20)).has_value();
  }));
  EXPECT_EQ(sb.auth_stats().refused, 0u);
}

LearnerConfig SmallLearner(const TransportSecurity& security, uint64_t episodes) {
  LearnerConfig c = testing::QuickLearner(episodes);
  c.security = security;
  return c;
}

// Keeps registering and submitting transitions until stopped, on a new
// socket every round (as a worker does when the learner stays silent).
void Submit(const std::string& endpoint, const TransportSecurity& security, std::atomic<bool>& stop,
            std::atomic<uint64_t>& replies) {
  TransitionBatchMsg batch;
  batch.worker_id = 1;
  batch.episode_id = 1;
  batch.transitions.push_back(Transition{std::vector<float>(kObservationSize, 0.5f), 1, 1.0f,
                                         std::vector<float>(kObservationSize, 0.5f), true});
  const std::string reg = EncodeMessage(RegisterMsg{"rogue-host", 1, "rogue", {}, "none"});
  const std::string frame = EncodeMessage(batch);
  while (!stop.load()) {
    FleetClient client(endpoint, security);
    for (int i = 0; i < 10 && !stop.load(); ++i) {
      client.Send(reg);
      client.Send(frame);
      while (client.Receive(milliseconds(10))) ++replies;
    }
  }
}

TEST(Auth, LearnerIngestsNothingFromUnauthenticatedWorkers) {
  Fleet f = MakeFleet("learner");
  Learner learner(SmallLearner(f.learner, 1000));
  const std::string endpoint = learner.endpoint();
  const AuthStats before = ProcessAuthStats();
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> plain_replies{0}, stranger_replies{0};
  std::thread t1([&] { Submit(endpoint, TransportSecurity{}, stop, plain_replies); });
  std::thread t2([&] { Submit(endpoint, f.stranger, stop, stranger_replies); });
  // Both were refused, more than once (they keep reconnecting).
  EXPECT_TRUE(WaitFor([&] {
    AuthStats now = ProcessAuthStats();
    return now.refused_unknown_key - before.refused_unknown_key >= 2 && now.refused - before.refused >= 4;
  }));
  stop = true;
  t1.join();
  t2.join();
  learner.Stop();
  serve.join();

  EXPECT_EQ(result.counters.frames_received, 0u);
  EXPECT_EQ(result.counters.workers_registered, 0u);
  EXPECT_EQ(result.counters.transitions_ingested, 0u);
  EXPECT_EQ(result.episodes, 0u);
  EXPECT_TRUE(result.workers_seen.empty());
  EXPECT_EQ(plain_replies.load(), 0u);  // not even an Error came back
  EXPECT_EQ(stranger_replies.load(), 0u);
}

TEST(Auth, AuthenticatedWorkerTrainsWhileStrangersAreRefused) {
  Fleet f = MakeFleet("train");
  Learner learner(SmallLearner(f.learner, 20));
  const std::string endpoint = learner.endpoint();
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> stranger_replies{0};
  std::thread rogue([&] { Submit(endpoint, f.stranger, stop, stranger_replies); });

  WorkerConfig wc;
  wc.learner_endpoint = endpoint;
  wc.give_up_seconds = 60;
  wc.security = f.worker;
  Worker worker(wc, std::make_unique<CostModelEvaluator>());
  WorkerStats stats = worker.Run();
  stop = true;
  rogue.join();
  serve.join();

  EXPECT_TRUE(stats.shutdown_by_learner);
  EXPECT_EQ(result.episodes, 20u);
  EXPECT_EQ(result.counters.workers_registered, 1u);  // the listed worker only
  EXPECT_EQ(result.workers_seen.size(), 1u);
  EXPECT_GT(result.counters.transitions_ingested, 0u);
  EXPECT_LE(result.counters.transitions_ingested, stats.transitions_sent);
  EXPECT_EQ(result.counters.malformed_frames, 0u);
  EXPECT_EQ(stranger_replies.load(), 0u);
}

}  // namespace
}  // namespace tensortier
