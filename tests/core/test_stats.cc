// The order statistics profiles and benches rest on.
#include "common/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace tensortier {
namespace {

TEST(Stats, QuantileInterpolatesBetweenOrderStatistics) {
  EXPECT_EQ(Quantile({}, 0.5), 0);
  EXPECT_EQ(Quantile({7}, 0.25), 7);
  const std::vector<double> v = {40, 10, 30, 20, 50};  // order does not matter
  EXPECT_EQ(Quantile(v, 0), 10);
  EXPECT_EQ(Quantile(v, 1), 50);
  EXPECT_EQ(Quantile(v, 0.5), Median(v));
  EXPECT_DOUBLE_EQ(Quantile(v, 0.25), 20);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.125), 15);
  EXPECT_EQ(Quantile(v, -1), 10);
  EXPECT_EQ(Quantile(v, 2), 50);
}

// Interference only adds time: with most samples disturbed the median moves,
// the undisturbed estimate does not; a single glitch reading far too fast
// does not move it either (the minimum would follow it).
TEST(Stats, UndisturbedTimeIgnoresPreemptedSamplesAndOneTooFastReading) {
  std::vector<double> samples;
  for (int i = 0; i < 5; ++i) samples.push_back(100 + i);      // undisturbed: 100..104
  for (int i = 0; i < 10; ++i) samples.push_back(190 + 3 * i); // preempted: about twice as long
  EXPECT_GT(Median(samples), 180);
  EXPECT_GE(UndisturbedTime(samples), 100);
  EXPECT_LE(UndisturbedTime(samples), 104);

  samples.push_back(1);  // a clock glitch
  EXPECT_GE(UndisturbedTime(samples), 100);
  EXPECT_LE(UndisturbedTime(samples), 104);

  const std::vector<double> quiet = {100, 101, 99, 100, 102, 98};
  EXPECT_NEAR(UndisturbedTime(quiet), Median(quiet), 1.5);
}

}  // namespace
}  // namespace tensortier
