// Reliability of the fleet: frames delayed, duplicated and dropped by a
// faulty link are neither fatal nor counted twice; a worker killed in the
// middle of an episode is declared dead within a few heartbeats; a stalled
// worker times out and re-registers under its old id when it wakes; a
// learner that comes up while a worker waits to reconnect is heard.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <map>
#include <set>

#include "common/files.h"
#include "tests/integration/faulty_link.h"
#include "tests/integration/fleet_harness.h"
#include "tests/integration/process.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::FaultyLink;
using testing::LinkFaults;
using testing::TinyLearner;
using testing::WorkerThreads;

TEST(FleetReliability, FaultyLinkLosesAndDoublesNothing) {
  LearnerConfig c = TinyLearner(80);
  c.heartbeat_liveness = 5;
  c.keep_batch_log = true;
  c.min_workers = 3;
  Learner learner(c);
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });
  LinkFaults faults;
  faults.drop = 0.08;
  faults.duplicate = 0.08;
  faults.delay = 0.15;
  faults.seed = 7;
  FaultyLink link(learner.endpoint(), faults);
  WorkerThreads fleet(link.endpoint(), 3);
  serve.join();  // the learner survives and finishes
  std::vector<WorkerStats> stats = fleet.StopAndJoin();

  EXPECT_EQ(result.episodes, 80u);
  EXPECT_GT(link.counters().dropped.load(), 0u);
  EXPECT_GT(link.counters().duplicated.load(), 0u);
  EXPECT_GT(link.counters().delayed.load(), 0u);

  // Every (worker, episode) was counted once...
  std::set<std::pair<uint32_t, uint64_t>> reported;
  for (const EpisodeRecord& r : result.records)
    EXPECT_TRUE(reported.insert({r.worker_id, r.worker_episode}).second)
        << "worker " << r.worker_id << " episode " << r.worker_episode << " counted twice";
  // ...every batch ingested once, and the transitions counted are exactly
  // those of the distinct batches.
  std::set<std::pair<uint64_t, uint64_t>> batches;
  uint64_t transitions = 0;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> batch_sizes;
  for (const IngestedBatch& b : result.batches) {
    EXPECT_TRUE(batches.insert({b.incarnation, b.episode_id}).second);
    transitions += b.transitions;
    batch_sizes[{b.worker_id, b.episode_id}] = b.transitions;
  }
  EXPECT_EQ(result.counters.transitions_ingested, transitions);
  EXPECT_EQ(result.rate_limiter.inserts, transitions);
  // An episode's report and its transitions agree on its length.
  for (const EpisodeRecord& r : result.records) {
    auto it = batch_sizes.find({r.worker_id, r.worker_episode});
    if (it != batch_sizes.end()) {
      EXPECT_EQ(it->second, r.steps);
    }
  }
  // The faults were seen and absorbed: duplicates were dropped (and
  // re-acknowledged), lost frames resent.
  uint64_t resent = 0;
  for (const WorkerStats& s : stats) resent += s.episodes_resent;
  EXPECT_GT(result.counters.duplicate_batches + result.counters.duplicate_reports, 0u);
  EXPECT_GT(resent, 0u);
  EXPECT_GT(result.updates, 0u);
  EXPECT_EQ(result.counters.malformed_frames, 0u);
}

// Waits until `done` or a generous deadline; returns whether `done` held.
template <typename F>
bool AwaitCondition(F done, std::chrono::seconds limit = std::chrono::seconds(60)) {
  for (auto deadline = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < deadline;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

using testing::TempDir;

TEST(FleetReliability, KilledWorkerIsDeclaredDeadAndStalledWorkerTimesOut) {
  const std::string dir = TempDir("dead-worker");
  LearnerConfig c = TinyLearner(1000000);
  c.bind_endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePort());
  c.min_workers = 2;
  Learner learner(c);
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });
  ChildProcess killed({"worker", "--connect", c.bind_endpoint, "--name", "doomed", "--give-up-seconds", "60",
                       "--metrics-address", "off"},
                      dir + "/doomed.log");
  ChildProcess stalled({"worker", "--connect", c.bind_endpoint, "--name", "stalled", "--give-up-seconds", "60",
                        "--metrics-address", "off"},
                       dir + "/stalled.log");
  ASSERT_TRUE(AwaitCondition([&] { return learner.status().episodes >= 20; })) << ReadFile(dir + "/doomed.log");
  ASSERT_EQ(learner.status().workers_connected, 2u);

  // Killed mid-run (mid-episode, most likely): gone within liveness beats.
  killed.Kill(SIGKILL);
  ASSERT_TRUE(AwaitCondition([&] { return learner.status().counters.workers_expired >= 1; }));
  ASSERT_TRUE(AwaitCondition([&] { return learner.status().workers_connected == 1; }));

  // Stalled: it stops heartbeating and times out the same way.
  stalled.Kill(SIGSTOP);
  ASSERT_TRUE(AwaitCondition([&] { return learner.status().counters.workers_expired >= 2; }));
  EXPECT_EQ(learner.status().workers_connected, 0u);
  const uint64_t episodes_while_stalled = learner.status().episodes;

  // Woken, it registers again as the same worker (a new registration, not a new id) and goes on.
  stalled.Kill(SIGCONT);
  ASSERT_TRUE(AwaitCondition([&] {
    LearnerStatus s = learner.status();
    return s.workers_connected == 1 && s.episodes > episodes_while_stalled + 5;
  })) << ReadFile(dir + "/stalled.log");
  EXPECT_GE(learner.status().counters.workers_registered, 3u);
  learner.Stop();
  serve.join();
  EXPECT_EQ(result.workers_seen.size(), 2u);
  // The woken worker resends what was never acknowledged (some of it the
  // learner had counted before expiring it): taken once, re-acknowledged.
  std::set<std::pair<uint32_t, uint64_t>> reported;
  for (const EpisodeRecord& r : result.records) EXPECT_TRUE(reported.insert({r.worker_id, r.worker_episode}).second);
  fs::remove_all(dir);
}

// A worker that waits out its reconnect back-off when the learner comes up
// hears the learner's answer to the registration queued on its socket: it
// neither drops that socket nor registers again from a new one. (Dropping it
// lost the answer, and with it the task and the learner's farewell: the
// learner counted a worker that never heard it, and the worker ran on after
// the learner had ended.)
TEST(FleetReliability, LearnerThatComesUpDuringTheReconnectBackOffIsHeard) {
  const std::string dir = TempDir("late-learner");
  const std::string endpoint = "ipc://" + dir + "/learner.ipc";
  WorkerConfig wc;
  wc.learner_endpoint = endpoint;
  wc.name = "early";
  wc.give_up_seconds = 60;
  wc.reconnect_initial_ms = 4000;  // far longer than the learner takes to come up below
  Worker worker(wc, std::make_unique<CostModelEvaluator>());
  WorkerStats stats;
  std::thread work([&] { stats = worker.Run(); });
  // The worker calls the learner silent after three unanswered one-second
  // heartbeat intervals and then waits its back-off: the learner binds inside it.
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  FleetServer learner(endpoint);
  std::set<std::string> registered_from;
  bool heartbeat_with_id = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!heartbeat_with_id && std::chrono::steady_clock::now() < deadline) {
    auto in = learner.Receive(std::chrono::milliseconds(50));
    if (!in) continue;
    DecodeResult d = DecodeMessage(in->frame.data(), in->frame.size());
    auto* m = std::get_if<Message>(&d);
    ASSERT_NE(m, nullptr);
    if (std::holds_alternative<RegisterMsg>(*m)) {
      registered_from.insert(in->peer);
      learner.Send(in->peer, EncodeMessage(RegisterAckMsg{7, 100, 3}));
    } else if (auto* hb = std::get_if<HeartbeatMsg>(m)) {
      heartbeat_with_id = hb->worker_id == 7;
    }
  }
  ASSERT_TRUE(heartbeat_with_id) << "the worker never heartbeated under the id it was given";
  EXPECT_EQ(registered_from.size(), 1u) << "the worker registered from a new socket after the learner answered";
  for (const std::string& peer : registered_from) learner.Send(peer, EncodeMessage(ShutdownMsg{"test over"}));
  work.join();  // the farewell reaches it
  EXPECT_TRUE(stats.shutdown_by_learner);
  EXPECT_EQ(stats.reconnects, 0u);
  EXPECT_GE(stats.registrations, 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
