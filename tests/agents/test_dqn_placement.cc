// DQN on the placement MDP itself: on a graph small enough to enumerate
// every action sequence, the trained greedy policy reaches the best return.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "agents/local_training.h"
#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "replay/replay_buffer.h"
#include "tests/core/brute_force.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {


TEST(DqnPlacement, GreedyPolicyReachesTheBruteForceOptimum) {
  Workload w = testing::HandGraph();
  EnvConfig c;
  c.dram_limit_bytes = 1000;
  c.scope = DecisionScope::kAllLive;
  c.beta = 1.0;  // performance only: the step rewards carry the whole objective
  PlacementEnv env(w, c);

  std::vector<int> prefix;
  int leaves = 0;
  const double optimum = testing::BestReturn(env, prefix, &leaves);
  ASSERT_GE(leaves, 64);  // the search really branched

  DqnConfig config;
  config.observation_size = kObservationSize;
  config.hidden = {64, 64};
  config.learning_rate = 1e-3;
  config.gamma = 1.0;  // finite episodes: optimise the return itself
  config.batch_size = 32;
  config.target_update_interval = 100;
  config.learning_starts = 64;
  // Seeds 1-8 but 3 reach it with the 18-float observation (3 did with 17).
  config.seed = 1;
  DqnAgent agent(config);
  ReplayBuffer replay(20000);
  std::mt19937_64 rng(7);
  LocalTraining schedule;
  schedule.episodes = 1500;
  schedule.learning_starts = static_cast<size_t>(config.learning_starts);
  TrainLocally(agent, env, replay, schedule, rng);

  double greedy = 0;
  Observation obs = env.Reset();
  while (!env.done()) {
    StepResult r = env.Step(agent.Act(obs.data(), 0.0, rng));
    greedy += r.reward;
    obs = r.observation;
  }
  EXPECT_NEAR(greedy, optimum, 1e-3 * std::abs(optimum) + 1e-6)
      << "optimum " << optimum << " over " << leaves << " action sequences";
}

}  // namespace
}  // namespace tensortier
