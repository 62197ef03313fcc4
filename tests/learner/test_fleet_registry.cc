// The fleet registry on its own: ids and exploration indices follow a
// worker incarnation across sockets and checkpoints, silence expires a
// worker only past its deadline, and the fleet starts at its minimum size.
#include <gtest/gtest.h>

#include <chrono>

#include "learner/fleet_registry.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using Clock = FleetRegistry::Clock;
using Tasks = FleetRegistry::Registration::Tasks;

RegisterMsg Hello(uint64_t incarnation, const std::string& name = "w") {
  RegisterMsg reg;
  reg.incarnation = incarnation;
  reg.worker_name = name;
  reg.host = "host";
  reg.slow_tier_backend = "cost-model";
  return reg;
}

TEST(LearnerFleetRegistry, NewIncarnationsGetTheNextIdAndIndex) {
  FleetRegistry fleet(1);
  const Clock::time_point t0{};
  auto a = fleet.Register("peer-a", Hello(111), t0);
  auto b = fleet.Register("peer-b", Hello(222), t0);
  EXPECT_TRUE(a.new_worker);
  EXPECT_TRUE(b.new_worker);
  EXPECT_EQ(a.worker->id, 1u);
  EXPECT_EQ(b.worker->id, 2u);
  EXPECT_EQ(a.worker->exploration_index, 0u);
  EXPECT_EQ(b.worker->exploration_index, 1u);
  EXPECT_EQ(b.worker->incarnation, 222u);
  EXPECT_EQ(b.worker->backend, "cost-model");
  EXPECT_EQ(fleet.size(), 2u);
}

TEST(LearnerFleetRegistry, AReconnectKeepsTheIdAndForgetsTheOldSocket) {
  FleetRegistry fleet(1);
  const Clock::time_point t0{};
  fleet.Register("peer-a", Hello(111), t0);
  fleet.Register("peer-b", Hello(222), t0);
  auto again = fleet.Register("peer-a2", Hello(111), t0);
  EXPECT_FALSE(again.new_worker);
  EXPECT_EQ(again.worker->id, 1u);
  EXPECT_EQ(again.worker->exploration_index, 0u);
  EXPECT_EQ(fleet.Find("peer-a"), nullptr);
  EXPECT_EQ(fleet.size(), 2u);
  ASSERT_NE(fleet.FindByIncarnation(111), nullptr);
  EXPECT_EQ(fleet.FindByIncarnation(111)->peer, "peer-a2");
  EXPECT_EQ(fleet.FindByIncarnation(333), nullptr);
}

TEST(LearnerFleetRegistry, WorkersWithoutAnIncarnationGetOneThatCannotCollide) {
  FleetRegistry fleet(1);
  auto old = fleet.Register("peer-old", Hello(0), Clock::time_point{});
  EXPECT_EQ(old.worker->incarnation, (1ull << 63) | old.worker->id);
}

TEST(LearnerFleetRegistry, TheFleetStartsAtItsMinimumSize) {
  FleetRegistry fleet(3);
  const Clock::time_point t0{};
  EXPECT_EQ(fleet.Register("a", Hello(1), t0).tasks, Tasks::kNone);
  EXPECT_EQ(fleet.Register("b", Hello(2), t0).tasks, Tasks::kNone);
  EXPECT_EQ(fleet.Register("c", Hello(3), t0).tasks, Tasks::kEveryone);
  EXPECT_EQ(fleet.Register("d", Hello(4), t0).tasks, Tasks::kThisWorker);
  // Started is started: a fleet that shrank below its minimum still hands out tasks.
  fleet.ExpireSilent(t0 + std::chrono::seconds(10), std::chrono::seconds(1));
  EXPECT_EQ(fleet.size(), 0u);
  EXPECT_EQ(fleet.Register("a", Hello(1), t0).tasks, Tasks::kThisWorker);
}

TEST(LearnerFleetRegistry, OnlySilencePastTheDeadlineExpires) {
  FleetRegistry fleet(1);
  const Clock::time_point t0{};
  const auto deadline = std::chrono::milliseconds(300);
  fleet.Register("quiet", Hello(1), t0);
  fleet.Register("chatty", Hello(2), t0);
  fleet.Find("chatty")->last_seen = t0 + std::chrono::milliseconds(250);
  EXPECT_TRUE(fleet.ExpireSilent(t0 + deadline, deadline).empty());  // exactly at the deadline: alive
  std::vector<WorkerState> gone = fleet.ExpireSilent(t0 + std::chrono::milliseconds(301), deadline);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].peer, "quiet");
  EXPECT_EQ(fleet.Find("quiet"), nullptr);
  EXPECT_EQ(fleet.FindByIncarnation(1), nullptr);
  EXPECT_EQ(fleet.expired_peers().count("quiet"), 1u);
  EXPECT_NE(fleet.Find("chatty"), nullptr);
  // Registering again clears the expiry, and the incarnation keeps its id.
  auto back = fleet.Register("quiet", Hello(1), t0 + std::chrono::seconds(1));
  EXPECT_FALSE(back.new_worker);
  EXPECT_EQ(back.worker->id, 1u);
  EXPECT_TRUE(fleet.expired_peers().empty());
}

TEST(LearnerFleetRegistry, ACheckpointKeepsIdsAcrossALearnerRestart) {
  FleetRegistry before(1);
  const Clock::time_point t0{};
  before.Register("a", Hello(111), t0);
  before.Register("b", Hello(222), t0);
  testing::SectionMessage<schema::FleetSection> section;
  before.Save(section.Init());
  FleetRegistry after(1);
  after.Load(section.Read());
  auto b = after.Register("b-new", Hello(222), t0);
  EXPECT_FALSE(b.new_worker);
  EXPECT_EQ(b.worker->id, 2u);
  EXPECT_EQ(b.worker->exploration_index, 1u);
  auto c = after.Register("c", Hello(333), t0);
  EXPECT_TRUE(c.new_worker);
  EXPECT_EQ(c.worker->id, 3u);
  EXPECT_EQ(c.worker->exploration_index, 2u);
}

// A task no worker takes ends the run, but only once every connected
// worker refused it and nobody took it for the whole give-up period.
TEST(LearnerFleetRegistry, NoWorkerTakesTheTaskOnlyWhenEveryWorkerRefusedForTheWholePeriod) {
  FleetRegistry fleet(1);
  const Clock::time_point t0{};
  const auto give_up = std::chrono::seconds(120);
  EXPECT_FALSE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::hours(1), give_up));  // nobody refused
  WorkerState& a = *fleet.Register("peer-a", Hello(111), t0).worker;
  WorkerState& b = *fleet.Register("peer-b", Hello(222), t0).worker;
  fleet.OnTaskRefused(a, "workload differs", t0);
  EXPECT_FALSE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::seconds(500), give_up));  // b has not refused
  fleet.OnTaskRefused(b, "signature 1 differs from 2", t0 + std::chrono::seconds(10));
  EXPECT_FALSE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::seconds(119), give_up));
  EXPECT_TRUE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::seconds(120), give_up));
  EXPECT_EQ(fleet.last_refusal(), "signature 1 differs from 2");
  // One worker taking the task (its episode's data arrives) restarts the wait.
  fleet.OnTaskAccepted(a);
  EXPECT_FALSE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::hours(1), give_up));
  fleet.OnTaskRefused(a, "again", t0 + std::chrono::seconds(200));
  EXPECT_FALSE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::seconds(319), give_up));
  EXPECT_TRUE(fleet.NoWorkerTakesTheTask(t0 + std::chrono::seconds(320), give_up));
}

}  // namespace
}  // namespace tensortier
