// DQN on the placement MDP itself: on a graph small enough to enumerate
// every action sequence, the trained greedy policy reaches the best return.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "agents/local_training.h"
#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "replay/replay_buffer.h"
#include "tests/agents/hand_graph_mdp.h"
#include "tests/core/brute_force.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {

TEST(DqnPlacement, GreedyPolicyReachesTheBruteForceOptimum) {
  Workload w = testing::HandGraph();
  PlacementEnv env(w, testing::HandGraphEnv());

  int leaves = 0;
  const double optimum = testing::BestReturn(env, &leaves);
  ASSERT_GE(leaves, 64);  // the search really branched

  // Seeds 1-8 but 3 reach it with the 18-float observation (3 did with 17).
  const DqnConfig config = testing::HandGraphDqn(1);
  DqnAgent agent(config);
  ReplayBuffer replay(20000);
  std::mt19937_64 rng(7);
  LocalTraining schedule;
  schedule.episodes = 1500;
  schedule.learning_starts = static_cast<size_t>(config.learning_starts);
  TrainLocally(agent, env, replay, schedule, rng);

  const double greedy = testing::GreedyReturn(env, agent, rng);
  EXPECT_NEAR(greedy, optimum, 1e-3 * std::abs(optimum) + 1e-6)
      << "optimum " << optimum << " over " << leaves << " action sequences";
}

}  // namespace
}  // namespace tensortier
