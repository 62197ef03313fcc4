// The uniform ring (ReplayBuffer) and the interface that uniform and
// prioritised replay share (replay/replay.h).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "replay/prioritized_replay.h"
#include "replay/replay_buffer.h"

namespace tensortier {
namespace {

Transition MakeTransition(float tag) {
  Transition t;
  t.observation.assign(4, tag);
  t.reward = tag;
  t.next_observation.assign(4, tag + 0.5f);
  return t;
}


TEST(ReplayBuffer, FillsThenOverwritesOldestFirst) {
  ReplayBuffer replay(3);
  EXPECT_EQ(replay.capacity(), 3u);
  EXPECT_EQ(replay.size(), 0u);
  for (int i = 0; i < 3; ++i) replay.Add(MakeTransition(static_cast<float>(i)));
  EXPECT_EQ(replay.size(), 3u);
  EXPECT_EQ(replay.next_slot(), 0u);
  replay.Add(MakeTransition(3));  // overwrites slot 0 (tag 0)
  replay.Add(MakeTransition(4));  // overwrites slot 1 (tag 1)
  EXPECT_EQ(replay.size(), 3u);
  EXPECT_EQ(replay.total_added(), 5u);
  EXPECT_EQ(replay.next_slot(), 2u);
  ASSERT_EQ(replay.items().size(), 3u);
  EXPECT_EQ(replay.items()[0].reward, 3.0f);
  EXPECT_EQ(replay.items()[1].reward, 4.0f);
  EXPECT_EQ(replay.items()[2].reward, 2.0f);
  for (int i = 5; i < 9; ++i) replay.Add(MakeTransition(static_cast<float>(i)));
  // Ring now holds tags 6, 7, 8 (at slots 0, 1, 2) and 8 went into slot 1.
  std::map<float, int> tags;
  for (const auto& t : replay.items()) ++tags[t.reward];
  EXPECT_EQ(tags, (std::map<float, int>{{6.0f, 1}, {7.0f, 1}, {8.0f, 1}}));
  EXPECT_EQ(replay.next_slot(), 0u);
  EXPECT_EQ(replay.total_added(), 9u);
  EXPECT_THROW(ReplayBuffer(0), std::invalid_argument);
}

TEST(ReplayBuffer, SamplesUniformlyWithReplacement) {
  ReplayBuffer replay(4);
  std::mt19937_64 rng(5);
  EXPECT_THROW(replay.Sample(1, rng), std::logic_error);
  for (int i = 0; i < 4; ++i) replay.Add(MakeTransition(static_cast<float>(i)));

  // More samples than items: replacement.
  auto small = replay.Sample(10, rng);
  EXPECT_EQ(small.size(), 10u);
  EXPECT_TRUE(replay.Sample(0, rng).empty());

  std::map<float, int> counts;
  const int n = 40000;
  for (const Transition* t : replay.Sample(n, rng)) {
    ASSERT_GE(t, &replay.items().front());
    ASSERT_LE(t, &replay.items().back());
    ++counts[t->reward];
  }
  ASSERT_EQ(counts.size(), 4u);
  for (const auto& [tag, count] : counts) EXPECT_NEAR(count, n / 4, n / 4 * 0.05) << tag;

  // Same seed, same batch.
  std::mt19937_64 a(9), b(9);
  EXPECT_EQ(replay.Sample(32, a), replay.Sample(32, b));
}

TEST(ReplayBuffer, RestoreResumesTheRing) {
  ReplayBuffer original(3);
  for (int i = 0; i < 5; ++i) original.Add(MakeTransition(static_cast<float>(i)));

  ReplayBuffer restored(3);
  restored.Restore(original.items(), original.next_slot(), original.total_added());
  EXPECT_EQ(restored.size(), 3u);
  EXPECT_EQ(restored.next_slot(), original.next_slot());
  EXPECT_EQ(restored.total_added(), 5u);
  original.Add(MakeTransition(5));
  restored.Add(MakeTransition(5));
  ASSERT_EQ(restored.items().size(), original.items().size());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(restored.items()[i].reward, original.items()[i].reward);

  // A partly filled buffer keeps growing from where it was.
  ReplayBuffer partial(4);
  std::vector<Transition> two = {MakeTransition(0), MakeTransition(1)};
  partial.Restore(two, 2, 2);
  partial.Add(MakeTransition(2));
  EXPECT_EQ(partial.size(), 3u);
  EXPECT_EQ(partial.items()[2].reward, 2.0f);

  ReplayBuffer bad(2);
  std::vector<Transition> three = {MakeTransition(0), MakeTransition(1), MakeTransition(2)};
  EXPECT_THROW(bad.Restore(three, 0, 3), std::invalid_argument);  // over capacity
  EXPECT_THROW(bad.Restore({MakeTransition(0)}, 0, 1), std::invalid_argument);  // wrong slot
  EXPECT_THROW(bad.Restore({MakeTransition(0)}, 5, 1), std::invalid_argument);  // out of range
  EXPECT_THROW(bad.Restore({MakeTransition(0)}, 1, 0), std::invalid_argument);  // count
  EXPECT_EQ(bad.size(), 0u);  // untouched after the failures
}

TEST(Replay, BothKindsSampleThroughTheInterfaceAsTheyDoDirectly) {
  ReplayBuffer uniform(8);
  PrioritizedReplayConfig pc;
  pc.capacity = 8;
  PrioritizedReplay prioritized(pc);
  for (int i = 0; i < 8; ++i) {
    uniform.Add(MakeTransition(static_cast<float>(i)));
    prioritized.Add(MakeTransition(static_cast<float>(i)), 1.0 + i);
  }
  EXPECT_FALSE(static_cast<const Replay&>(uniform).prioritized());
  EXPECT_TRUE(static_cast<const Replay&>(prioritized).prioritized());

  std::mt19937_64 a(3), b(3);
  ReplaySample s;
  s.weights = {1.0f};  // stale contents of a reused sample are replaced
  static_cast<const Replay&>(uniform).SampleInto(16, a, &s);
  EXPECT_EQ(s.transitions, uniform.Sample(16, b));
  EXPECT_TRUE(s.weights.empty());
  EXPECT_TRUE(s.keys.empty());

  std::mt19937_64 c(4), d(4);
  static_cast<const Replay&>(prioritized).SampleInto(16, c, &s);
  ReplaySample direct = prioritized.Sample(16, d);
  EXPECT_EQ(s.transitions, direct.transitions);
  EXPECT_EQ(s.keys, direct.keys);
  EXPECT_EQ(s.weights, direct.weights);
  EXPECT_EQ(s.probabilities, direct.probabilities);

  // Priorities through the interface: the prioritised replay takes them,
  // the uniform one has none to take.
  Replay& r = prioritized;
  EXPECT_EQ(r.UpdatePriorities({direct.keys[0]}, {0.25}), 1u);
  EXPECT_EQ(*prioritized.Priority(direct.keys[0]), 0.25);
  Replay& u = uniform;
  EXPECT_EQ(u.UpdatePriorities({0}, {0.25}), 0u);

  ReplayBuffer empty(2);
  EXPECT_THROW(static_cast<const Replay&>(empty).SampleInto(1, a, &s), std::logic_error);
}

}  // namespace
}  // namespace tensortier
