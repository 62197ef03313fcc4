// The plan-time search's iterated local search: kicks of several tensors
// at once, each searched from, the faster plan kept.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/synthetic.h"
#include "tests/core/synthetic_graph.h"

namespace tensortier {
namespace {

using testing::FifthOfPeak;
using testing::HeatScores;
using testing::SmallSearch;
using testing::Synthetic;

std::vector<Migration> MigrationsOf(const PlacementPlan& plan, uint32_t tensor) {
  std::vector<Migration> of;
  for (const Migration& m : plan.migrations)
    if (m.tensor == tensor) of.push_back(m);
  return of;
}

// A kick moves exactly the drawn tensors, each wholly to one tier (DRAM all
// its life to the slow tier, anything else to DRAM), draws only from its
// pool, never a pinned tensor, and is the same for the same seed.
TEST(PlanKicks, AKickMovesTheDrawnTensorsWhollyToOneTier) {
  Workload w = Synthetic(SyntheticShape::kResnetLike);
  // A buffer no kernel touches and no plan may move, among the tensors a kick could draw.
  const uint32_t pinned = static_cast<uint32_t>(w.tensors.size());
  w.tensors.push_back({"buffer", 64, TensorKind::kParameter, 0, static_cast<uint32_t>(w.kernels.size() - 1),
                       /*persistent=*/true, /*pinned_dram=*/true});
  w.Finalize();
  PlacementEnv env(w, FifthOfPeak(w, MigrationMode::kSync));
  const PlacementPlan plan = PlayGreedy(env, HeatScores).summary.plan;
  size_t migrating = 0;
  for (uint32_t t = 0; t < w.tensors.size(); ++t) migrating += !MigrationsOf(plan, t).empty();
  ASSERT_GT(migrating, 0u);  // the premise: tensors that change tiers, to be put in one

  for (bool pooled : {false, true}) {
    SCOPED_TRACE(pooled ? "from a pool" : "from every tensor");
    std::vector<uint32_t> pool;
    if (pooled) {
      for (uint32_t t = 0; pool.size() < 5; t += 3) pool.push_back(t);
      pool.push_back(pinned);  // six in the pool, five a kick may move
    }
    std::mt19937_64 rng(7), again(7);
    std::vector<uint8_t> moved;
    const PlacementPlan kicked = KickedPlan(w, plan, 6, pool, rng, &moved);
    EXPECT_TRUE(kicked == KickedPlan(w, plan, 6, pool, again));
    ASSERT_EQ(moved.size(), w.tensors.size());
    int drawn = 0;
    for (uint32_t t = 0; t < w.tensors.size(); ++t) {
      SCOPED_TRACE("tensor " + std::to_string(t));
      if (!moved[t]) {
        EXPECT_EQ(kicked.initial_tiers[t], plan.initial_tiers[t]);
        EXPECT_EQ(MigrationsOf(kicked, t), MigrationsOf(plan, t));
        continue;
      }
      ++drawn;
      EXPECT_FALSE(w.tensors[t].pinned_dram);
      if (pooled) {
        EXPECT_EQ(t % 3, 0u);
      }
      EXPECT_TRUE(MigrationsOf(kicked, t).empty());
      const bool dram_all_life = plan.initial_tiers[t] == Tier::kDram && MigrationsOf(plan, t).empty();
      EXPECT_EQ(kicked.initial_tiers[t], dram_all_life ? Tier::kSlow : Tier::kDram);
    }
    EXPECT_EQ(drawn, pooled ? 5 : 6);
    EXPECT_NO_THROW(kicked.Validate(w));
  }
}

// Kicks keep only faster plans: the search with them is never slower than
// the same search without, its plan is valid and priced as returned, and
// on some graph a kick leads somewhere the search's own moves did not.
TEST(PlanKicks, TheSearchKeepsAKickOnlyWhereItIsFaster) {
  int faster = 0;
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync})
    for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike, SyntheticShape::kVggLike}) {
      SCOPED_TRACE(std::string(SyntheticShapeName(shape)) + " " + MigrationModeName(mode));
      const Workload w = Synthetic(shape);
      const EnvConfig c = FifthOfPeak(w, mode);
      PlacementEnv env(w, c);
      PlanSearchOptions o = SmallSearch();
      o.max_kicks = 0;
      const PlanSearchResult without = SearchPlan(env, HeatScores, o);
      o.max_kicks = 6;
      const PlanSearchResult with = SearchPlan(env, HeatScores, o);
      EXPECT_EQ(without.kicks, 0);
      EXPECT_EQ(with.kicks, 6);
      EXPECT_LE(with.kick_improvements, with.kicks);
      EXPECT_LE(with.best.cost.total_ns, without.best.cost.total_ns);
      EXPECT_EQ(with.kick_improvements > 0, with.best.cost.total_ns < without.best.cost.total_ns);
      EXPECT_FALSE(with.best.cost.oom);
      EXPECT_LE(with.best.cost.dram_peak_bytes, c.dram_limit_bytes);
      EXPECT_DOUBLE_EQ(EvaluatePlan(w, with.best.plan).total_ns, with.best.cost.total_ns);
      EXPECT_DOUBLE_EQ(with.greedy.cost.total_ns, without.greedy.cost.total_ns);
      faster += with.kick_improvements > 0;
    }
  EXPECT_GE(faster, 1);  // the premise: a kick leaves a local optimum
}

}  // namespace
}  // namespace tensortier
