// Task frames on their own: with the epsilon schedule every worker gets the
// same task, with Ape-X worker i of N its own fixed epsilon.
#include <gtest/gtest.h>

#include <cmath>

#include "learner/task_frames.h"
#include "protocol/codec.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallAgent;
using testing::SmallEnv;
using testing::SmallWorkload;

TaskMsg Decode(const std::string& frame) {
  DecodeResult d = DecodeMessage(frame.data(), frame.size());
  return std::get<TaskMsg>(std::get<Message>(d));
}

LearnerConfig Config() {
  LearnerConfig c;
  c.workload = SmallWorkload();
  c.env = SmallEnv(c.workload);
  c.dqn.epsilon_start = 0.8;
  c.dqn.epsilon_end = 0.05;
  c.dqn.epsilon_decay_episodes = 120;
  c.dqn.seed = 11;
  return c;
}

TEST(LearnerTaskFrames, TheScheduleGivesEveryWorkerTheSameTask) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  TaskFrames tasks(Config(), *agent);
  EXPECT_EQ(tasks.For(0), tasks.For(5));
  const TaskMsg t = Decode(tasks.For(0));
  EXPECT_EQ(t.agent, "dqn");
  EXPECT_EQ(t.agent_config_json, agent->config_json());
  EXPECT_EQ(t.workload.Signature(), Config().workload.Signature());
  EXPECT_EQ(t.exploration.epsilon_start, 0.8);
  EXPECT_EQ(t.exploration.epsilon_end, 0.05);
  EXPECT_EQ(t.exploration.schedule_episodes, 120u);
  EXPECT_EQ(t.exploration.seed, 11u);
}

TEST(LearnerTaskFrames, ApexGivesWorkerIOfNItsOwnFixedEpsilon) {
  LearnerConfig c = Config();
  c.exploration = ExplorationKind::kApex;
  c.apex_epsilon = 0.4;
  c.apex_alpha = 7;
  c.min_workers = 3;  // N, as apex_workers is 0
  TaskFrames tasks(c, *SmallAgent(1));
  const double expected[] = {0.4, std::pow(0.4, 1 + 3.5), std::pow(0.4, 8.0), 0.4};  // index 3 wraps to 0
  for (uint32_t i = 0; i < 4; ++i) {
    const TaskMsg t = Decode(tasks.For(i));
    EXPECT_EQ(t.exploration.schedule_episodes, 0u) << i;
    EXPECT_NEAR(t.exploration.epsilon, expected[i], 1e-12) << i;
  }
  c.apex_workers = 2;  // an explicit N wins over min_workers
  EXPECT_NEAR(Decode(TaskFrames(c, *SmallAgent(1)).For(1)).exploration.epsilon, std::pow(0.4, 8.0), 1e-12);
}

}  // namespace
}  // namespace tensortier
