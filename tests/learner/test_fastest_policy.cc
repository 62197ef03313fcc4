// The fastest evaluated policy on its own: which weights it keeps, the
// search it starts, and the checkpoint `export` takes from a run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "agents/agent.h"
#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "learner/fastest_policy.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallAgent;
using testing::SmallEnv;
using testing::SmallWorkload;

EpisodeSummary GreedyEpisode(const Workload& w, const EnvConfig& env, const PlacementAgent& agent,
                             const std::string& name) {
  PlacementEnv e(w, env);
  EpisodeSummary s = RunEpisode(e, [&](const Observation& o) { return agent.Greedy(o.data()); });
  s.plan.produced_by = name;
  return s;
}

TEST(FastestPolicy, KeepsTheWeightsOfTheFastestPlanThatFits) {
  const Workload w = SmallWorkload();
  const EnvConfig env = SmallEnv(w);
  std::unique_ptr<PlacementAgent> a = SmallAgent(7), b = SmallAgent(8);
  EpisodeSummary sa = GreedyEpisode(w, env, *a, "a"), sb = GreedyEpisode(w, env, *b, "b");
  FastestPolicy f;
  EXPECT_TRUE(f.empty());
  f.Consider(sa, a->SerializeWeights());
  EXPECT_EQ(f.name(), "a");
  // A faster plan that ran out of memory, and one without weights, are not policies to keep.
  EpisodeSummary oom = sb;
  oom.oom = true;
  oom.cost.total_ns = sa.cost.total_ns / 2;
  f.Consider(oom, b->SerializeWeights());
  EpisodeSummary no_weights = sb;
  no_weights.cost.total_ns = sa.cost.total_ns / 2;
  f.Consider(no_weights, "");
  EXPECT_EQ(f.name(), "a");
  EpisodeSummary faster = sb;
  faster.cost.total_ns = sa.cost.total_ns * 0.5;
  f.Consider(faster, b->SerializeWeights());
  EXPECT_EQ(f.name(), "b");
  EXPECT_DOUBLE_EQ(f.runtime_ns(), sa.cost.total_ns * 0.5);
  EpisodeSummary slower = sa;
  slower.cost.total_ns = sa.cost.total_ns;
  f.Consider(slower, a->SerializeWeights());
  EXPECT_EQ(f.name(), "b");

  // The search starts from b's greedy plan, and its checkpoint holds b's weights.
  PlanSearchOptions one;
  one.max_rollouts = 1;
  PlanSearchResult r = f.Search(w, env, b->name(), b->config_json(), one);
  EXPECT_TRUE(r.greedy.plan.migrations == sb.plan.migrations);
  EXPECT_TRUE(r.greedy.plan.initial_tiers == sb.plan.initial_tiers);
  EXPECT_EQ(r.greedy.plan.produced_by, "b");
  EXPECT_EQ(r.best.plan.produced_by, "b+search");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tt_fastest_" + std::to_string(::getpid()) + ".ckpt")).string();
  f.SaveCheckpoint(path, b->name(), b->config_json());
  std::unique_ptr<PlacementAgent> loaded = LoadAgentCheckpoint(path);
  EXPECT_EQ(loaded->SerializeWeights(), b->SerializeWeights());
  std::filesystem::remove(path);
  EXPECT_THROW(FastestPolicy().SaveCheckpoint(path, "dqn", ""), std::logic_error);
}

// A search that ended below one of its starting plans returns that plan as
// given, under the search's name; one that ended above them, its own; a
// start over the DRAM limit is never taken.
TEST(FastestPolicy, ASearchThatEndsBelowItsStartKeepsTheStart) {
  const Workload w = SmallWorkload();
  const EnvConfig env = SmallEnv(w);
  const PlacementPlan slow = PlacementPlan::Uniform(w, Tier::kSlow, env.dram_limit_bytes);
  const PlacementPlan first_touch = FirstTouchPlan(w, env.dram_limit_bytes);
  PlacementPlan dram = PlacementPlan::Uniform(w, Tier::kDram, env.dram_limit_bytes);
  ASSERT_LT(EvaluatePlan(w, first_touch).total_ns, EvaluatePlan(w, slow).total_ns);
  ASSERT_TRUE(EvaluatePlan(w, dram).oom);
  PlanSearchResult r;
  r.best.plan = slow;
  r.best.plan.produced_by = "dqn+search";
  r.best.cost = EvaluatePlan(w, slow);
  r.starting_plan = -1;
  const std::vector<PlacementPlan> starts = {dram, slow, first_touch};
  EXPECT_EQ(KeepFasterStart(w, starts, r), 2);
  EXPECT_EQ(r.starting_plan, 2);
  EXPECT_EQ(r.best.plan.produced_by, "dqn+search");
  EXPECT_EQ(r.best.plan.initial_tiers, first_touch.initial_tiers);
  EXPECT_EQ(r.best.plan.migrations.size(), first_touch.migrations.size());
  EXPECT_DOUBLE_EQ(r.best.cost.total_ns, EvaluatePlan(w, first_touch).total_ns);
  // Now at least as fast as every start: nothing changes.
  const PlanSearchResult before = r;
  EXPECT_EQ(KeepFasterStart(w, starts, r), -1);
  EXPECT_EQ(KeepFasterStart(w, {}, r), -1);
  EXPECT_EQ(r.starting_plan, before.starting_plan);
  EXPECT_DOUBLE_EQ(r.best.cost.total_ns, before.best.cost.total_ns);
}

}  // namespace
}  // namespace tensortier
