// The policy a run starts from, on its own (learner/starting_policy.h): the
// phases the config asks for, in order, each leaving a candidate with the
// weights it ended on.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>
#include <string>

#include "agents/agent.h"
#include "envs/first_touch.h"
#include "envs/plan_search.h"
#include "learner/checkpoint_store.h"
#include "learner/starting_policy.h"
#include "tests/common/imitation_steps.h"
#include "tests/common/temp_dir.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallDqn;
using testing::SmallEnv;
using testing::SmallWorkload;

LearnerConfig SmallRun() {
  LearnerConfig c;
  c.workload = SmallWorkload();
  c.workload.Finalize();
  c.env = SmallEnv(c.workload);
  c.dqn = SmallDqn(3);
  c.imitation = testing::ImitationSteps(50, 1, 50);
  c.imitation.polish_updates = 0;
  return c;
}

TEST(StartingPolicy, FreshWeightsAndNoPhaseLeaveNoCandidate) {
  LearnerConfig c = SmallRun();
  LearnerResult result;
  StartingPolicy start = StartPolicy(c, result);
  ASSERT_NE(start.agent, nullptr);
  EXPECT_TRUE(start.candidates.empty());
  EXPECT_EQ(c.dqn.observation_size, kObservationSize);  // BuildAgent shaped the config
  EXPECT_TRUE(result.initialized_from.empty());
  EXPECT_FALSE(result.imitated);
}

TEST(StartingPolicy, InitThenImitationThenSelfImitationEachLeaveACandidate) {
  const std::string dir = testing::TempDir("starting-policy");
  DqnConfig other = SmallDqn(11);
  other.hidden = {24, 24};
  std::unique_ptr<PlacementAgent> trained = MakeAgent("dqn", other.ToJson());
  trained->SaveCheckpoint(dir + "/other.ckpt");

  LearnerConfig c = SmallRun();
  c.init_checkpoint = dir + "/other.ckpt";
  c.expert_plans = {FirstTouchPlan(c.workload, c.env.dram_limit_bytes)};
  c.self_imitation.rounds = 1;
  c.self_imitation.search = {8, 4, 0};
  c.self_imitation.imitation = c.imitation;
  LearnerResult result;
  StartingPolicy start = StartPolicy(c, result);

  EXPECT_EQ(c.dqn.hidden, (std::vector<int>{24, 24}));  // the checkpoint's shape, for checkpoints and workers
  ASSERT_EQ(start.candidates.size(), 3u);
  EXPECT_EQ(start.candidates[0].greedy.plan.produced_by, "dqn-init");
  EXPECT_EQ(start.candidates[1].greedy.plan.produced_by, "dqn-imitation");
  EXPECT_EQ(start.candidates[2].greedy.plan.produced_by, "dqn-self-imitation");
  // The first candidate is the other run's network as it was.
  EXPECT_EQ(start.candidates[0].weights, trained->SerializeWeights());
  EXPECT_DOUBLE_EQ(result.initialized_runtime_ns, start.candidates[0].greedy.cost.total_ns);
  EXPECT_EQ(result.initialized_from, c.init_checkpoint);
  EXPECT_TRUE(result.imitated);
  EXPECT_EQ(result.self_imitation.rounds.size(), 1u);
  // The agent ends with the last phase's weights.
  EXPECT_EQ(start.agent->SerializeWeights(), start.candidates[2].weights);
  std::filesystem::remove_all(dir);
}

// A directory of checkpoints is a portfolio: the run starts from the
// member whose greedy plan is the fastest on its workload, and says which.
TEST(StartingPolicy, APortfolioStartsFromItsFastestMemberOnThisWorkload) {
  const std::string dir = testing::TempDir("starting-policy-portfolio");
  LearnerConfig c = SmallRun();
  std::vector<std::unique_ptr<PlacementAgent>> members;
  std::vector<double> greedy_ns;
  PlacementEnv env(c.workload, c.env);
  for (uint64_t seed : {21, 22, 23, 24}) {
    DqnConfig config = SmallDqn(seed);
    config.observation_size = kObservationSize;
    members.push_back(MakeAgent("dqn", config.ToJson()));
    members.back()->SaveCheckpoint(dir + "/member-" + std::to_string(seed) + ".ckpt");
    greedy_ns.push_back(
        RunEpisode(env, [&](const Observation& o) { return members.back()->Greedy(o.data()); }).cost.total_ns);
  }
  const size_t fastest = std::min_element(greedy_ns.begin(), greedy_ns.end()) - greedy_ns.begin();
  ASSERT_LT(greedy_ns[fastest], *std::max_element(greedy_ns.begin(), greedy_ns.end())) << "members should differ";
  c.init_checkpoint = dir;
  LearnerResult result;
  StartingPolicy start = StartPolicy(c, result);
  ASSERT_EQ(start.candidates.size(), 1u);
  EXPECT_EQ(result.initialized_from, dir + "/member-" + std::to_string(21 + fastest) + ".ckpt");
  EXPECT_EQ(start.candidates[0].weights, members[fastest]->SerializeWeights());
  EXPECT_DOUBLE_EQ(result.initialized_runtime_ns, greedy_ns[fastest]);
  std::filesystem::remove_all(dir);
}

// With self-imitation, the first round's search also starts from the best of
// the searches from the portfolio's members, each guided by its own network.
TEST(StartingPolicy, SelfImitationFromAPortfolioStartsFromTheBestOfItsMembersSearches) {
  const std::string dir = testing::TempDir("starting-policy-portfolio-search");
  LearnerConfig c = SmallRun();
  c.self_imitation.rounds = 1;
  c.self_imitation.search = {8, 4, 0};
  c.self_imitation.search.polish_plan = false;  // the searches' own plans: the polish takes them to one optimum here
  c.self_imitation.imitation = c.imitation;
  PlacementEnv env(c.workload, c.env);
  std::vector<double> searched_ns;
  for (uint64_t seed : {21, 22, 23, 24}) {
    DqnConfig config = SmallDqn(seed);
    config.observation_size = kObservationSize;
    std::unique_ptr<PlacementAgent> member = MakeAgent("dqn", config.ToJson());
    member->SaveCheckpoint(dir + "/member-" + std::to_string(seed) + ".ckpt");
    searched_ns.push_back(SearchPlan(env, ScoresOf(*member), c.self_imitation.search).best.cost.total_ns);
  }
  const double best_ns = *std::min_element(searched_ns.begin(), searched_ns.end());
  c.init_checkpoint = dir;
  auto first_round_ns = [&](int starts) {
    LearnerConfig run = c;
    run.self_imitation.portfolio_search_starts = starts;
    LearnerResult result;
    StartPolicy(run, result);
    EXPECT_EQ(result.self_imitation.rounds.size(), 1u);
    return result.self_imitation.rounds.at(0).searched_cost_ns;
  };
  const double one = first_round_ns(1), four = first_round_ns(4);
  EXPECT_LE(four, best_ns * (1 + 1e-9));
  // Here the chosen member's network alone searches to a slower plan.
  EXPECT_LT(four, one);
  std::filesystem::remove_all(dir);
}

TEST(StartingPolicy, ACheckpointOfAnotherFamilyOrNoneIsRefused) {
  const std::string dir = testing::TempDir("starting-policy-bad");
  MakeAgent("dqn", SmallDqn(1).ToJson())->SaveCheckpoint(dir + "/dqn.ckpt");
  LearnerConfig c = SmallRun();
  c.agent = AgentKind::kSac;
  c.sac.device = "cpu";
  c.init_checkpoint = dir + "/dqn.ckpt";
  LearnerResult result;
  try {
    StartPolicy(c, result);
    ADD_FAILURE() << "a dqn checkpoint started a sac run";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a dqn checkpoint, and this run trains sac"), std::string::npos) << e.what();
  }
  c.agent = AgentKind::kDqn;
  c.init_checkpoint = dir + "/missing.ckpt";
  EXPECT_THROW(StartPolicy(c, result), CheckpointError);  // an input error for the CLI (exit 3)
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
