// The workers' exploration: the epsilon schedule (worker/exploration.h) and
// that the epsilon a worker reports is the schedule's at the weights
// version it played with.
#include <gtest/gtest.h>

#include "tests/integration/fleet_harness.h"
#include "worker/exploration.h"

namespace tensortier {
namespace {

TEST(Exploration, ScheduleIsLinearThenFlat) {
  ExplorationSettings e;
  e.epsilon_start = 0.9;
  e.epsilon_end = 0.1;
  e.schedule_episodes = 100;
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 0), 0.9);
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 50), 0.5);
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 75), 0.3);
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 100), 0.1);
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 1000000), 0.1);
  for (uint64_t v = 1; v < 120; ++v) EXPECT_LE(ScheduledEpsilon(e, v), ScheduledEpsilon(e, v - 1));
}

TEST(Exploration, NoScheduleMeansTheFixedEpsilon) {
  ExplorationSettings e;
  e.epsilon_start = 0.9;
  e.epsilon_end = 0.1;
  e.epsilon = 0.25;  // Ape-X: this worker's own
  e.schedule_episodes = 0;
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 0), 0.25);
  EXPECT_DOUBLE_EQ(ScheduledEpsilon(e, 1000), 0.25);
}

// The learner's task carries DqnConfig's schedule; every episode's epsilon
// is the schedule's at the weights version the worker played it with.
TEST(Exploration, WorkersActWithTheLearnersSchedule) {
  LearnerConfig c = testing::TinyLearner(30);
  c.dqn.epsilon_start = 1.0;
  c.dqn.epsilon_end = 0.2;
  c.dqn.epsilon_decay_episodes = 8;
  // Weights after every report, before its acknowledgement: a worker's
  // j-th episode (j >= 3) plays version j - 1 or later, so the 15th of the
  // busier worker is on the flat end whatever the timing.
  c.weights_publish_interval_ms = 0;
  Learner learner(c);
  LearnerResult r = testing::RunFleet(learner, 2);
  ASSERT_EQ(r.records.size(), 30u);
  ExplorationSettings schedule;
  schedule.epsilon_start = 1.0;
  schedule.epsilon_end = 0.2;
  schedule.schedule_episodes = 8;
  bool reached_the_end = false;
  for (const EpisodeRecord& rec : r.records) {
    EXPECT_DOUBLE_EQ(rec.epsilon, ScheduledEpsilon(schedule, rec.policy_version)) << "episode " << rec.episode;
    reached_the_end |= rec.policy_version >= 8;
  }
  EXPECT_TRUE(reached_the_end);  // the flat end was played too
}

}  // namespace
}  // namespace tensortier
