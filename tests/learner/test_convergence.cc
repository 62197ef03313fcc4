// The convergence rule: a plateau of trained evaluations that does not fall
// short of the best before it.
#include <gtest/gtest.h>

#include "learner/convergence.h"

namespace tensortier {
namespace {

TEST(LearnerConvergence, WindowZeroNeverStops) {
  EXPECT_FALSE(Converged({1, 1, 1, 1}, {1, 1, 1, 1}, 0, 0.5));
}

TEST(LearnerConvergence, APlateauAfterTrainingConverges) {
  // window 3 needs 4 trained evaluations: one before the window.
  EXPECT_FALSE(Converged({-5, -5, -5}, {1, 2, 3}, 3, 0.01));
  EXPECT_TRUE(Converged({-5, -5, -5, -5}, {1, 2, 3, 4}, 3, 0.01));
}

TEST(LearnerConvergence, EvaluationsBeforeTheFirstUpdateDoNotCount) {
  EXPECT_FALSE(Converged({-5, -5, -5, -5}, {0, 0, 3, 4}, 3, 0.01));
  EXPECT_TRUE(Converged({-9, -5, -5, -5, -5}, {0, 1, 2, 3, 4}, 3, 0.01));
}

TEST(LearnerConvergence, AWindowThatStillMovesDoesNotConverge) {
  // tolerance 0.01 * max(1, |best| = 10) = 0.1
  EXPECT_FALSE(Converged({-10.02, -10.5, -10.3, -10.0}, {1, 2, 3, 4}, 3, 0.01));
  EXPECT_TRUE(Converged({-10.02, -10.05, -10.0, -10.08}, {1, 2, 3, 4}, 3, 0.01));
}

TEST(LearnerConvergence, AWindowThatJumpsAboveTheBestBeforeDoesNotConverge) {
  // Flat window, but it beats the earlier best by more than the tolerance: still improving.
  EXPECT_FALSE(Converged({-20, -10, -10, -10}, {1, 2, 3, 4}, 3, 0.01));
  // A flat window below the earlier best is a plateau (training got no better).
  EXPECT_TRUE(Converged({-5, -10, -10, -10}, {1, 2, 3, 4}, 3, 0.01));
}

}  // namespace
}  // namespace tensortier
