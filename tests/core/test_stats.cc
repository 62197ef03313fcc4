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

TEST(Stats, MedianConfidenceIntervalFromOrderStatistics) {
  // 5 samples: only [min, max] has any useful confidence, 1 - 2/32.
  MedianInterval i = MedianConfidenceInterval({5, 1, 4, 2, 3});
  EXPECT_EQ(i.low, 1);
  EXPECT_EQ(i.high, 5);
  EXPECT_DOUBLE_EQ(i.confidence, 0.9375);
  EXPECT_DOUBLE_EQ(MedianConfidenceInterval({3, 1, 2}).confidence, 0.75);
  // 10 samples: the 2nd and 9th cover the median with 1 - 2 * 11/1024 >= 95%;
  // the 3rd and 8th only with 1 - 2 * 56/1024.
  std::vector<double> ten;
  for (int x = 10; x >= 1; --x) ten.push_back(x);
  i = MedianConfidenceInterval(ten, 0.95);
  EXPECT_EQ(i.low, 2);
  EXPECT_EQ(i.high, 9);
  EXPECT_DOUBLE_EQ(i.confidence, 1 - 22.0 / 1024);
  i = MedianConfidenceInterval(ten, 0.85);
  EXPECT_EQ(i.low, 3);
  EXPECT_EQ(i.high, 8);
  // One sample says nothing about the spread.
  i = MedianConfidenceInterval({7});
  EXPECT_EQ(i.low, 7);
  EXPECT_EQ(i.high, 7);
  EXPECT_EQ(i.confidence, 0);
  EXPECT_EQ(MedianConfidenceInterval({}).confidence, 0);
}

}  // namespace
}  // namespace tensortier
