// The scoreboard on its own: plans ranked on the cost model (an OOM plan
// never counts, a plan that does not fit is refused), greedy evaluations
// with their best reward, convergence reported once, and its checkpoint
// sections.
#include <gtest/gtest.h>

#include <stdexcept>

#include "envs/cost_model.h"
#include "learner/scoreboard.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallEnv;
using testing::SmallWorkload;

TEST(LearnerScoreboard, TheFastestPlanThatFitsIsKept) {
  const Workload w = SmallWorkload();
  const uint64_t limit = SmallEnv(w).dram_limit_bytes;
  Scoreboard scores(w, 0, 0.01);
  EXPECT_FALSE(scores.has_best_plan());
  const PlacementPlan slow = PlacementPlan::Uniform(w, Tier::kSlow, limit);
  const PlacementPlan dram = PlacementPlan::Uniform(w, Tier::kDram, w.peak_live_bytes());
  const PlacementPlan dram_oom = PlacementPlan::Uniform(w, Tier::kDram, limit);  // does not fit a third of the peak
  ASSERT_TRUE(EvaluatePlan(w, dram_oom).oom);
  ASSERT_LT(EvaluatePlan(w, dram).total_ns, EvaluatePlan(w, slow).total_ns);

  EXPECT_EQ(scores.ConsiderPlan(dram_oom), Scoreboard::Plan::kOom);
  EXPECT_FALSE(scores.has_best_plan());
  EXPECT_EQ(scores.ConsiderPlan(slow), Scoreboard::Plan::kBest);
  EXPECT_EQ(scores.best_runtime_ns(), EvaluatePlan(w, slow).total_ns);
  EXPECT_EQ(scores.ConsiderPlan(dram), Scoreboard::Plan::kBest);
  EXPECT_EQ(scores.ConsiderPlan(slow), Scoreboard::Plan::kNotBest);
  EXPECT_EQ(scores.ConsiderPlan(dram), Scoreboard::Plan::kNotBest);  // a tie keeps the first
  EXPECT_EQ(scores.best_plan(), dram);

  PlacementPlan unfit = slow;
  unfit.initial_tiers.pop_back();
  EXPECT_THROW(scores.ConsiderPlan(unfit), std::invalid_argument);
}

TEST(LearnerScoreboard, EvaluationsKeepTheBestRewardAndReportConvergenceOnce) {
  Scoreboard scores(SmallWorkload(), /*window=*/2, /*tolerance=*/0.01);
  EXPECT_FALSE(scores.best_evaluation_reward().has_value());
  EXPECT_TRUE(scores.BookEvaluation(-9, 0).new_best);  // the first always is
  EXPECT_FALSE(scores.BookEvaluation(-12, 0).new_best);
  EXPECT_TRUE(scores.BookEvaluation(-5, 10).new_best);
  EXPECT_EQ(*scores.best_evaluation_reward(), -5);
  EXPECT_FALSE(scores.BookEvaluation(-5, 20).converged_now);  // two trained evaluations: no window before them
  const Scoreboard::Evaluation plateau = scores.BookEvaluation(-5, 30);
  EXPECT_TRUE(plateau.converged_now);
  EXPECT_TRUE(scores.converged());
  EXPECT_FALSE(scores.BookEvaluation(-5, 40).converged_now);  // once
  EXPECT_EQ(scores.evaluation_rewards().size(), 6u);
}

TEST(LearnerScoreboard, ACheckpointKeepsThePlanAndTheEvaluations) {
  const Workload w = SmallWorkload();
  Scoreboard before(w, 2, 0.01);
  before.ConsiderPlan(PlacementPlan::Uniform(w, Tier::kSlow, SmallEnv(w).dram_limit_bytes));
  before.BookEvaluation(-3, 1);
  before.BookEvaluation(-4, 2);
  testing::SectionMessage<schema::ScoreboardSection> section;
  before.Save(section.Init());
  Scoreboard after(w, 2, 0.01);
  after.Load(section.Read());
  EXPECT_TRUE(after.has_best_plan());
  EXPECT_EQ(after.best_plan(), before.best_plan());
  EXPECT_EQ(after.best_runtime_ns(), before.best_runtime_ns());
  EXPECT_EQ(after.evaluation_rewards(), before.evaluation_rewards());
  EXPECT_EQ(*after.best_evaluation_reward(), -3);
  // The restored window counts: one more plateau evaluation converges.
  EXPECT_FALSE(after.BookEvaluation(-3.5, 3).new_best);
  EXPECT_TRUE(after.BookEvaluation(-3.5, 4).converged_now);
}

}  // namespace
}  // namespace tensortier
