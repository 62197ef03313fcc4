// Prioritised replay (sampling frequencies follow the priorities, updates
// take effect, importance weights, stale keys, restore) and the Reverb-style
// rate limiter's invariants.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "replay/prioritized_replay.h"
#include "replay/rate_limiter.h"

namespace tensortier {
namespace {

Transition Tagged(float tag) {
  Transition t;
  t.observation = {tag};
  t.reward = tag;
  t.next_observation = {tag};
  return t;
}

// Pearson's chi-square of observed counts against expected probabilities.
double ChiSquare(const std::vector<double>& counts, const std::vector<double>& probabilities) {
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = n * probabilities[i];
    if (e > 0) chi += (counts[i] - e) * (counts[i] - e) / e;
    else EXPECT_EQ(counts[i], 0.0) << "item " << i << " has probability 0";
  }
  return chi;
}

// Draws `draws` items in batches of 32 and counts them by tag.
std::vector<double> Frequencies(const PrioritizedReplay& replay, size_t items, int draws, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> counts(items, 0.0);
  for (int d = 0; d < draws; d += 32)
    for (const Transition* t : replay.Sample(32, rng).transitions) counts[static_cast<size_t>(t->reward)] += 1;
  return counts;
}

TEST(PrioritizedReplay, SamplingFrequenciesMatchPriorities) {
  const std::vector<double> priorities = {0.5, 1, 2, 4, 0, 3, 1, 8, 0.25, 6};
  for (double alpha : {1.0, 0.6}) {
    for (bool stratified : {true, false}) {
      PrioritizedReplayConfig c;
      c.capacity = 16;  // not a power of two's worth of items: empty leaves in the tree
      c.alpha = alpha;
      c.epsilon = 1e-3;
      c.stratified = stratified;
      PrioritizedReplay replay(c);
      for (size_t i = 0; i < priorities.size(); ++i) replay.Add(Tagged(static_cast<float>(i)), priorities[i]);
      std::vector<double> expected;
      double total = 0;
      for (double p : priorities) total += std::pow(p + c.epsilon, alpha);
      for (double p : priorities) expected.push_back(std::pow(p + c.epsilon, alpha) / total);
      for (size_t i = 0; i < priorities.size(); ++i) EXPECT_NEAR(*replay.Probability(i), expected[i], 1e-12);
      const int draws = 320000;
      std::vector<double> counts = Frequencies(replay, priorities.size(), draws, 17);
      // 9 degrees of freedom: P(chi2 > 27.9) = 0.001.
      EXPECT_LT(ChiSquare(counts, expected), 27.9) << "alpha " << alpha << " stratified " << stratified;
      // Priority 0 still has epsilon's mass, and nothing more.
      EXPECT_NEAR(counts[4] / draws, expected[4], 5 * std::sqrt(expected[4] / draws) + 1e-6);
    }
  }
}

TEST(PrioritizedReplay, ImportanceWeightsCorrectTheSamplingBias) {
  PrioritizedReplayConfig c;
  c.capacity = 8;
  c.alpha = 1.0;
  c.beta = 0.5;
  c.epsilon = 1e-6;
  PrioritizedReplay replay(c);
  const std::vector<double> priorities = {1, 2, 4, 8};
  for (size_t i = 0; i < priorities.size(); ++i) replay.Add(Tagged(static_cast<float>(i)), priorities[i]);
  std::mt19937_64 rng(1);
  ReplaySample s = replay.Sample(256, rng);
  const double n = static_cast<double>(replay.size());
  const double p_min = (1 + c.epsilon) / replay.total_mass();
  const double w_max = std::pow(n * p_min, -c.beta);
  for (size_t i = 0; i < s.keys.size(); ++i) {
    EXPECT_NEAR(s.probabilities[i], *replay.Probability(s.keys[i]), 1e-12);
    EXPECT_NEAR(s.weights[i], std::pow(n * s.probabilities[i], -c.beta) / w_max, 1e-6);
    EXPECT_LE(s.weights[i], 1.0f + 1e-6f);
    EXPECT_EQ(s.transitions[i]->reward, static_cast<float>(s.keys[i]));
  }
  // The weighted mean of a per-item value under prioritised sampling is the
  // uniform mean (beta = 1 removes the bias entirely).
  replay.set_beta(1.0);
  double weighted = 0, weights = 0;
  for (int round = 0; round < 200; ++round) {
    ReplaySample b = replay.Sample(64, rng);
    for (size_t i = 0; i < b.keys.size(); ++i) {
      weighted += b.weights[i] * b.transitions[i]->reward;
      weights += b.weights[i];
    }
  }
  EXPECT_NEAR(weighted / weights, 1.5, 0.05);  // uniform mean of tags 0..3
}

TEST(PrioritizedReplay, PriorityUpdatesTakeEffect) {
  PrioritizedReplayConfig c;
  c.capacity = 4;
  c.alpha = 1.0;
  c.epsilon = 1e-6;
  PrioritizedReplay replay(c);
  std::vector<uint64_t> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(replay.Add(Tagged(static_cast<float>(i)), 1.0));
  EXPECT_NEAR(*replay.Probability(keys[2]), 0.25, 1e-6);
  EXPECT_EQ(replay.UpdatePriorities({keys[2]}, {9.0}), 1u);
  EXPECT_DOUBLE_EQ(*replay.Priority(keys[2]), 9.0);
  EXPECT_NEAR(*replay.Probability(keys[2]), 0.75, 1e-6);
  std::vector<double> counts = Frequencies(replay, 4, 64000, 3);
  EXPECT_LT(ChiSquare(counts, {1.0 / 12, 1.0 / 12, 9.0 / 12, 1.0 / 12}), 16.3);  // 3 dof, p = 0.001
  // Back down to nearly nothing: it is (almost) never drawn.
  replay.UpdatePriorities({keys[2]}, {0.0});
  counts = Frequencies(replay, 4, 32000, 4);
  EXPECT_LE(counts[2], 2.0);
  // A new item without a priority gets the largest seen so far.
  EXPECT_DOUBLE_EQ(replay.max_priority(), 9.0);
  uint64_t k = replay.Add(Tagged(0));  // overwrites key 0's slot
  EXPECT_DOUBLE_EQ(*replay.Priority(k), 9.0);
  EXPECT_THROW(replay.UpdatePriorities({k}, {-1.0}), std::invalid_argument);
  EXPECT_THROW(replay.UpdatePriorities({k}, {NAN}), std::invalid_argument);
  EXPECT_THROW(replay.UpdatePriorities({k, k}, {1.0}), std::invalid_argument);
  EXPECT_THROW(replay.Add(Tagged(0), -2.0), std::invalid_argument);
}

TEST(PrioritizedReplay, UpdatesForOverwrittenItemsAreIgnored) {
  PrioritizedReplayConfig c;
  c.capacity = 4;
  PrioritizedReplay replay(c);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(replay.Add(Tagged(static_cast<float>(i)), 1.0), static_cast<uint64_t>(i));
  // Keys 0 and 1 were overwritten by 4 and 5.
  EXPECT_FALSE(replay.Priority(0).has_value());
  EXPECT_FALSE(replay.Priority(1).has_value());
  EXPECT_FALSE(replay.Priority(6).has_value());
  EXPECT_EQ(replay.UpdatePriorities({0, 1, 5}, {50.0, 50.0, 3.0}), 1u);
  EXPECT_DOUBLE_EQ(*replay.Priority(4), 1.0);
  EXPECT_DOUBLE_EQ(*replay.Priority(5), 3.0);
  // Sampled keys name the items they returned.
  std::mt19937_64 rng(2);
  ReplaySample s = replay.Sample(100, rng);
  for (size_t i = 0; i < s.keys.size(); ++i) {
    EXPECT_GE(s.keys[i], 2u);
    EXPECT_EQ(s.transitions[i]->reward, static_cast<float>(s.keys[i]));
  }
}

TEST(PrioritizedReplay, TreeStaysExactUnderManyUpdatesAndRestores) {
  PrioritizedReplayConfig c;
  c.capacity = 1000;
  c.alpha = 0.7;
  PrioritizedReplay replay(c);
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  for (int i = 0; i < 2500; ++i) replay.Add(Tagged(static_cast<float>(i)), u(rng));
  for (int round = 0; round < 200; ++round) {
    ReplaySample s = replay.Sample(64, rng);
    std::vector<double> p;
    for (size_t i = 0; i < s.keys.size(); ++i) p.push_back(u(rng));
    replay.UpdatePriorities(s.keys, p);
  }
  double mass = 0;
  for (double p : replay.priorities()) mass += std::pow(p + c.epsilon, c.alpha);
  EXPECT_NEAR(replay.total_mass(), mass, 1e-9 * mass);

  PrioritizedReplay copy(c);
  copy.Restore(replay.items(), replay.priorities(), replay.next_slot(), replay.total_added());
  EXPECT_EQ(copy.total_added(), replay.total_added());
  EXPECT_NEAR(copy.total_mass(), replay.total_mass(), 1e-9 * mass);
  for (uint64_t k = replay.total_added() - replay.size(); k < replay.total_added(); k += 37)
    EXPECT_NEAR(*copy.Probability(k), *replay.Probability(k), 1e-12);
  std::mt19937_64 a(5), b(5);
  EXPECT_EQ(copy.Sample(50, a).keys, replay.Sample(50, b).keys);
  // Inconsistent restores are refused.
  PrioritizedReplay bad(c);
  EXPECT_THROW(bad.Restore(replay.items(), {}, replay.next_slot(), replay.total_added()), std::invalid_argument);
  EXPECT_THROW(bad.Restore(replay.items(), replay.priorities(), 3, replay.total_added()), std::invalid_argument);
  EXPECT_THROW(PrioritizedReplay(PrioritizedReplayConfig{0}), std::invalid_argument);
  EXPECT_THROW(PrioritizedReplay(c).Sample(1, rng), std::logic_error);
}

// ---------------------------------------------------------------------------

// The three settings by name, where a braced RateLimiterConfig{4, 100, 64}
// would leave the reader to count fields.
RateLimiterConfig LimiterConfig(double samples_per_insert, uint64_t min_size_to_sample, double error_buffer) {
  return RateLimiterConfig{samples_per_insert, min_size_to_sample, error_buffer};
}

TEST(RateLimiter, NeverSamplesBelowMinSize) {
  RateLimiter limiter(LimiterConfig(4, 100, 64));
  for (int i = 0; i < 99; ++i) {
    EXPECT_FALSE(limiter.CanSample(1));
    ASSERT_TRUE(limiter.TryInsert(1));
  }
  EXPECT_FALSE(limiter.TrySample(1));
  EXPECT_EQ(limiter.counters().blocked_samples, 100u);
  EXPECT_EQ(limiter.counters().samples, 0u);
  ASSERT_TRUE(limiter.TryInsert(1));
  EXPECT_TRUE(limiter.TrySample(32));
  // Evictions that shrink the table below the minimum stop sampling again.
  limiter.OnDelete(1);
  EXPECT_FALSE(limiter.SampleAllowed(1));
  EXPECT_THROW(limiter.OnDelete(1000), std::logic_error);
}

TEST(RateLimiter, InvariantsHoldUnderRandomTraffic) {
  for (double spi : {0.5, 1.0, 8.0, 32.0}) {
    const RateLimiterConfig c = LimiterConfig(spi, 50, std::max(64.0, spi));
    RateLimiter limiter(c);
    std::mt19937_64 rng(static_cast<uint64_t>(spi * 10));
    std::bernoulli_distribution insert_side(0.5);
    uint64_t ok_inserts = 0, ok_samples = 0, refused_inserts = 0, refused_samples = 0;
    for (int step = 0; step < 20000; ++step) {
      if (insert_side(rng)) {
        if (limiter.TryInsert(1)) ++ok_inserts;
        else ++refused_inserts;
      } else {
        const uint64_t before = limiter.size();
        if (limiter.TrySample(16)) {
          ok_samples += 16;
          EXPECT_GE(before, c.min_size_to_sample);
        } else {
          ++refused_samples;
        }
      }
      const RateLimiterCounters k = limiter.counters();
      const double inserts = static_cast<double>(k.inserts), samples = static_cast<double>(k.samples);
      // Samples never run ahead of inserts * ratio by more than the buffer...
      ASSERT_LE(samples, inserts * spi + c.error_buffer);
      // ... nor, once sampling began, of the Reverb bound that counts from min size.
      if (samples > 0) {
        ASSERT_LE(samples, (inserts - c.min_size_to_sample) * spi + c.error_buffer + 1e-9);
      }
      // Inserts beyond min size never run ahead of samples by more than the buffer.
      if (k.inserts > c.min_size_to_sample) {
        ASSERT_LE(inserts * spi - samples, spi * c.min_size_to_sample + c.error_buffer + 1e-9);
      }
    }
    const RateLimiterCounters k = limiter.counters();
    EXPECT_EQ(k.inserts, ok_inserts);
    EXPECT_EQ(k.samples, ok_samples);
    EXPECT_EQ(k.blocked_inserts, refused_inserts);
    EXPECT_EQ(k.blocked_samples, refused_samples);
    EXPECT_GT(refused_inserts + refused_samples, 0u) << "the limiter never limited anything";
    // In the long run the ratio is the configured one.
    const double ratio = static_cast<double>(k.samples) / static_cast<double>(k.inserts - c.min_size_to_sample);
    EXPECT_NEAR(ratio, spi, (c.error_buffer + 16) / static_cast<double>(k.inserts - c.min_size_to_sample))
        << "spi " << spi;
  }
}

TEST(RateLimiter, BlockingCallsWaitForTheOtherSide) {
  RateLimiter limiter(LimiterConfig(2, 10, 8));
  std::atomic<int> inserted{0};
  std::thread producer([&] {
    for (int i = 0; i < 500; ++i) {
      if (!limiter.AwaitInsert(1, std::chrono::seconds(10))) return;
      ++inserted;
    }
  });
  int sampled = 0;
  while (sampled < 980) {  // (500 - 10) * 2
    ASSERT_TRUE(limiter.AwaitSample(4, std::chrono::seconds(10)));
    sampled += 4;
  }
  producer.join();
  EXPECT_EQ(inserted.load(), 500);
  EXPECT_EQ(limiter.counters().samples, 980u);
  // Nothing more can be sampled without inserts: a timeout, counted as blocked.
  const uint64_t blocked = limiter.counters().blocked_samples;
  EXPECT_FALSE(limiter.AwaitSample(64, std::chrono::milliseconds(20)));
  EXPECT_EQ(limiter.counters().blocked_samples, blocked + 1);
  // Close wakes a waiter.
  std::thread waiter([&] { EXPECT_FALSE(limiter.AwaitSample(1000, std::chrono::seconds(30))); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  limiter.Close();
  waiter.join();
  EXPECT_TRUE(limiter.closed());
}

TEST(RateLimiter, ValidatesConfigAndRestoresCounters) {
  RateLimiterConfig c;
  c.samples_per_insert = 8;
  c.error_buffer = 4;  // smaller than samples_per_insert: could deadlock
  EXPECT_THROW(RateLimiter{c}, std::invalid_argument);
  c.error_buffer = 8;
  c.samples_per_insert = 0;
  EXPECT_THROW(RateLimiter{c}, std::invalid_argument);
  c.samples_per_insert = 8;
  RateLimiter limiter(c);
  RateLimiterCounters k;
  k.inserts = 1000;
  k.samples = 6000;
  k.deletes = 10;
  k.blocked_samples = 3;
  limiter.Restore(k);
  EXPECT_EQ(limiter.size(), 990u);
  // Without a saved credit, the inserts beyond min size earn the current ratio.
  EXPECT_DOUBLE_EQ(limiter.credit(), (1000.0 - 256.0) * 8);
  EXPECT_DOUBLE_EQ(limiter.diff(), (1000.0 - 256.0) * 8 - 6000);
  EXPECT_EQ(limiter.counters().blocked_samples, 3u);
  limiter.Restore(k, 6100.0);
  EXPECT_DOUBLE_EQ(limiter.diff(), 100.0);
  EXPECT_THROW(limiter.Restore(k, -1.0), std::invalid_argument);
  k.deletes = 2000;
  EXPECT_THROW(limiter.Restore(k), std::invalid_argument);
  EXPECT_NE(limiter.ToJson().find("\"inserts\": 1000"), std::string::npos);
  // A new ratio is validated like the config.
  EXPECT_THROW(limiter.SetSamplesPerInsert(16, 8), std::invalid_argument);
  EXPECT_THROW(limiter.SetSamplesPerInsert(0, 8), std::invalid_argument);
  EXPECT_DOUBLE_EQ(limiter.config().samples_per_insert, 8);
}

// The learner changes the ratio as episode lengths change: each insert
// earns the ratio in force when it was made, the earned credit is never
// re-priced, and the bounds hold against that credit whatever the changes.
TEST(RateLimiter, RatioChangesApplyToLaterInsertsOnly) {
  RateLimiterConfig c = LimiterConfig(1, 10, 128);
  RateLimiter limiter(c);
  for (int i = 0; i < 110; ++i) ASSERT_TRUE(limiter.TryInsert(1));
  EXPECT_DOUBLE_EQ(limiter.credit(), 100.0);  // the first 10 earn nothing
  limiter.SetSamplesPerInsert(4, 128);
  ASSERT_TRUE(limiter.TrySample(100));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(limiter.TryInsert(1));
  EXPECT_DOUBLE_EQ(limiter.credit(), 140.0);
  EXPECT_DOUBLE_EQ(limiter.diff(), 40.0);
  // Inserts stop once they would put sampling more than the buffer behind.
  int more = 0;
  while (limiter.TryInsert(1)) ++more;
  EXPECT_EQ(more, 22);  // 40 + 22 * 4 = 128
  // After a lower ratio, one batch of samples makes room for more inserts.
  limiter.SetSamplesPerInsert(0.5, 128);
  EXPECT_FALSE(limiter.TryInsert(1));  // 128.5 > 128
  ASSERT_TRUE(limiter.TrySample(16));
  more = 0;
  while (limiter.TryInsert(1)) ++more;
  EXPECT_EQ(more, 32);  // 112 + 32 * 0.5 = 128

  // Random traffic with random ratio changes: the integrated bounds hold.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> ratio(0.05, 40.0);
  c.error_buffer = 64;
  RateLimiter random_limiter(c);
  double earned = 0;  // recomputed here from the ratio in force at each insert
  double spi = c.samples_per_insert;
  double buffer = c.error_buffer;
  uint64_t inserts = 0, samples = 0;
  for (int step = 0; step < 50000; ++step) {
    const int what = static_cast<int>(rng() % 100);
    if (what == 0) {
      spi = ratio(rng);
      buffer = std::max(64.0, spi + 17);
      random_limiter.SetSamplesPerInsert(spi, buffer);
    } else if (what < 50) {
      if (random_limiter.TryInsert(1)) {
        if (++inserts > c.min_size_to_sample) earned += spi;
      }
    } else if (random_limiter.TrySample(16)) {
      samples += 16;
    }
    ASSERT_NEAR(random_limiter.credit(), earned, 1e-6 * std::max(1.0, earned));
    ASSERT_LE(static_cast<double>(samples), earned + buffer + 1e-6);
    ASSERT_LE(earned - static_cast<double>(samples), buffer + 1e-6);
  }
  EXPECT_GT(samples, 10000u);
  // Neither side starves the other for long: the long-run ratio is the earned one.
  EXPECT_NEAR(static_cast<double>(samples), earned, 64 + 1e-6);
}

}  // namespace
}  // namespace tensortier
