// A portfolio of networks and the plan-time choice among them
// (agents/policy_portfolio.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/dqn_agent.h"
#include "agents/policy_portfolio.h"
#include "agents/sac_agent.h"
#include "envs/cost_model.h"
#include "envs/synthetic.h"

namespace tensortier {
namespace {

std::filesystem::path FreshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tt_portfolio_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

DqnAgent SmallDqn(uint64_t seed) {
  DqnConfig c;
  c.hidden = {16, 16};
  c.seed = seed;
  c.device = "cpu";
  return DqnAgent(c);
}

Workload SmallVgg() {
  SyntheticOptions so;
  so.shape = SyntheticShape::kVggLike;
  so.layers = 4;
  Workload w = GenerateSynthetic(so);
  w.Finalize();
  return w;
}

ActionScores Constant(float dram, float slow) {
  return [dram, slow](const Observation&) { return std::make_pair(dram, slow); };
}

// Each policy's greedy episode is played; the fastest is chosen, whatever
// its place, and its episode is the one that policy plays alone.
TEST(PolicyPortfolio, FastestGreedyChoosesTheFastestEpisodeWhereverItIs) {
  Workload w = SmallVgg();
  EnvConfig env_config;
  env_config.dram_limit_bytes = w.peak_live_bytes() / 3;
  PlacementEnv env(w, env_config);
  // The slower of "always DRAM" and "always slow" first and last, the faster between.
  const ActionScores dram = Constant(1, 0), slow = Constant(0, 1);
  const double dram_ns = PlayGreedy(env, dram).summary.cost.total_ns;
  const double slow_ns = PlayGreedy(env, slow).summary.cost.total_ns;
  ASSERT_NE(dram_ns, slow_ns);
  const ActionScores faster = dram_ns < slow_ns ? dram : slow, slower = dram_ns < slow_ns ? slow : dram;
  const std::vector<ActionScores> policies = {slower, faster, slower};
  const PortfolioChoice choice = FastestGreedy(env, policies);
  ASSERT_EQ(choice.greedy.size(), 3u);
  EXPECT_EQ(choice.member, 1u);
  EXPECT_LT(choice.greedy[1].cost.total_ns, choice.greedy[0].cost.total_ns);
  EXPECT_DOUBLE_EQ(choice.greedy[0].cost.total_ns, choice.greedy[2].cost.total_ns);
  EXPECT_DOUBLE_EQ(choice.greedy[1].cost.total_ns, PlayGreedy(env, policies[1]).summary.cost.total_ns);
  EXPECT_GE(choice.seconds, 0);
  // A tie goes to the first.
  EXPECT_EQ(FastestGreedy(env, {Constant(0, 1), Constant(0, 1)}).member, 0u);
  EXPECT_THROW(FastestGreedy(env, std::vector<ActionScores>{}), std::invalid_argument);
}

// A directory's checkpoints in name order, files as given; what is neither is
// refused, as is a directory without checkpoints and a portfolio of two families.
TEST(PolicyPortfolio, CheckpointsComeFromFilesAndDirectoriesInNameOrder) {
  const auto dir = FreshDir("order");
  SmallDqn(1).SaveCheckpoint((dir / "rank-01-round-007.ckpt").string());
  SmallDqn(2).SaveCheckpoint((dir / "rank-00-round-012.ckpt").string());
  std::filesystem::create_directories(dir / "empty");
  { std::ofstream((dir / "notes.txt").string()) << "not a checkpoint"; }
  const std::string single = (FreshDir("single") / "one.ckpt").string();
  SmallDqn(3).SaveCheckpoint(single);
  const std::vector<std::string> files = PortfolioCheckpoints({dir.string(), single});
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(std::filesystem::path(files[0]).filename(), "rank-00-round-012.ckpt");
  EXPECT_EQ(std::filesystem::path(files[1]).filename(), "rank-01-round-007.ckpt");
  EXPECT_EQ(files[2], single);
  const std::vector<PortfolioMember> members = LoadPortfolio({dir.string()});
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].agent->name(), "dqn");
  EXPECT_THROW(PortfolioCheckpoints({(dir / "empty").string()}), std::runtime_error);
  EXPECT_THROW(PortfolioCheckpoints({(dir / "missing").string()}), std::runtime_error);
  EXPECT_THROW(PortfolioCheckpoints({}), std::runtime_error);
  SacConfig sac;
  sac.device = "cpu";
  SacAgent(sac).SaveCheckpoint((dir / "rank-02-sac.ckpt").string());
  try {
    LoadPortfolio({dir.string()});
    FAIL() << "a portfolio of two families loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank-02-sac.ckpt"), std::string::npos) << e.what();
  }
  { std::ofstream((dir / "rank-03-corrupt.ckpt").string()) << "TTAGNT99 garbage"; }
  std::filesystem::remove(dir / "rank-02-sac.ckpt");
  EXPECT_THROW(LoadPortfolio({dir.string()}), std::runtime_error);
}

}  // namespace
}  // namespace tensortier
