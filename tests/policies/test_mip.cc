// MipModel (policies/mip.h): CBC solves in a forked child, and a child that
// dies is a solve with no solution, not the end of the caller.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "envs/cost_model.h"
#include "policies/autotm.h"
#include "policies/mip.h"
#include "tests/policies/policy_test_util.h"

namespace tensortier {
namespace {

// max 5a + 4b + 3c  s.t.  2a + 3b + c <= 5,  4a + b + 2c <= 11,  3a + 4b + 2c <= 8;
// a, b, c in {0, 1, 2, ...} (Chvatal's example: optimum a = 2, c = 1, 13).
MipModel SmallProgram() {
  MipModel m;
  const int a = m.AddVariable(0, 10, -5, true), b = m.AddVariable(0, 10, -4, true), c = m.AddVariable(0, 10, -3, true);
  m.AddRow({{a, 2}, {b, 3}, {c, 1}}, 'L', 5);
  m.AddRow({{a, 4}, {b, 1}, {c, 2}}, 'L', 11);
  m.AddRow({{a, 3}, {b, 4}, {c, 2}}, 'L', 8);
  return m;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(Mip, SolvesInAChildProcessAsInThisOne) {
  MipOptions o;
  o.relative_gap = 0;
  o.time_limit_seconds = 30;
  const MipSolution child = SmallProgram().Solve(o);
  ASSERT_EQ(child.status, "optimal");
  ASSERT_TRUE(child.has_solution);
  ASSERT_EQ(child.values.size(), 3u);
  EXPECT_NEAR(child.objective, -13, 1e-6);
  EXPECT_NEAR(child.values[0], 2, 1e-6);
  EXPECT_NEAR(child.values[1], 0, 1e-6);
  EXPECT_NEAR(child.values[2], 1, 1e-6);
  ScopedEnv in_process("TENSORTIER_CBC_IN_PROCESS", "1");
  const MipSolution here = SmallProgram().Solve(o);
  EXPECT_EQ(here.status, child.status);
  EXPECT_EQ(here.values, child.values);
  EXPECT_DOUBLE_EQ(here.objective, child.objective);
  EXPECT_DOUBLE_EQ(here.bound, child.bound);
  EXPECT_EQ(here.nodes, child.nodes);
}

TEST(Mip, ASolverThatDiesIsASolveWithoutASolution) {
  ScopedEnv die("TENSORTIER_CBC_DIE_FOR_TEST", "1");
  MipOptions o;
  o.time_limit_seconds = 30;
  const MipSolution s = SmallProgram().Solve(o);
  EXPECT_EQ(s.status, "crashed");
  EXPECT_FALSE(s.has_solution);
  EXPECT_TRUE(s.values.empty());
  // The policies above it see a solve that found nothing. AutoTM returns
  // its own first-touch start's plan, which fits, in both formulations...
  const Workload w = testing::Synthetic(SyntheticShape::kVggLike, 3, 2);
  AutoTmIlpOptions ilp;
  ilp.dram_limit_bytes = testing::Fraction(w, 0.3);
  ilp.time_limit_seconds = 10;
  for (AutoTmFormulation f : {AutoTmFormulation::kSynchronous, AutoTmFormulation::kAsynchronous}) {
    ilp.formulation = f;
    ilp.mode = f == AutoTmFormulation::kAsynchronous ? MigrationMode::kAsync : MigrationMode::kSync;
    const AutoTmIlpResult r = SolveAutoTmIlp(w, ilp);
    EXPECT_TRUE(r.start_kept);
    EXPECT_EQ(r.mip.status, "crashed");
    EXPECT_TRUE(r.plan.migrations.empty());
    const CostReport c = EvaluatePlan(w, r.plan);
    EXPECT_FALSE(c.oom);
    EXPECT_DOUBLE_EQ(r.predicted_ns, c.total_ns);
    // A plan no solve produced proves nothing: the gap says so, not 0
    // (which bench would read as a proven optimum).
    EXPECT_DOUBLE_EQ(r.mip.gap, 1.0);
  }
  // ...and says it found nothing when the start was the caller's.
  ilp.formulation = AutoTmFormulation::kSynchronous;
  ilp.mode = MigrationMode::kSync;
  ilp.start_tier = [](uint32_t, int32_t, int32_t) -> std::optional<Tier> { return Tier::kSlow; };
  EXPECT_THROW(SolveAutoTmIlp(w, ilp), std::runtime_error);
}

// CBC crashed in its preprocessing's postProcess on the guided ILP's window
// solves: a crash with preprocessing on is solved again without it, in the
// same time limit, and the solution is the second solve's.
TEST(Mip, ASolveThatCrashesInThePreprocessingIsSolvedAgainWithoutIt) {
  MipOptions o;
  o.relative_gap = 0;
  o.time_limit_seconds = 30;
  {
    ScopedEnv die("TENSORTIER_CBC_DIE_FOR_TEST", "segv-preprocess");
    const MipSolution s = SmallProgram().Solve(o);
    EXPECT_TRUE(s.retried_without_preprocess);
    ASSERT_EQ(s.status, "optimal");
    ASSERT_EQ(s.values.size(), 3u);
    EXPECT_NEAR(s.objective, -13, 1e-6);
    EXPECT_NEAR(s.values[0], 2, 1e-6);
    EXPECT_NEAR(s.values[2], 1, 1e-6);
    // Without preprocessing from the start nothing crashes and nothing is retried.
    MipOptions plain = o;
    plain.preprocess = false;
    const MipSolution p = SmallProgram().Solve(plain);
    EXPECT_FALSE(p.retried_without_preprocess);
    EXPECT_EQ(p.status, "optimal");
  }
  {
    // A crash the retry meets again is a solve without a solution, once retried.
    ScopedEnv die("TENSORTIER_CBC_DIE_FOR_TEST", "segv");
    const MipSolution s = SmallProgram().Solve(o);
    EXPECT_TRUE(s.retried_without_preprocess);
    EXPECT_EQ(s.status, "crashed");
    EXPECT_FALSE(s.has_solution);
  }
  {
    // A killed child (the OOM killer) is not retried.
    ScopedEnv die("TENSORTIER_CBC_DIE_FOR_TEST", "1");
    const MipSolution s = SmallProgram().Solve(o);
    EXPECT_FALSE(s.retried_without_preprocess);
    EXPECT_EQ(s.status, "crashed");
  }
  // And a solve that does not crash is solved once.
  EXPECT_FALSE(SmallProgram().Solve(o).retried_without_preprocess);
}

}  // namespace
}  // namespace tensortier
