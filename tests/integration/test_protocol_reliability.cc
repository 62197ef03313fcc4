// The protocol fields the learner's reliability and caching rest on survive
// a round trip, and frames without them (older peers) decode to defaults.
#include <gtest/gtest.h>

#include "protocol/codec.h"

namespace tensortier {
namespace {

template <typename M>
M RoundTrip(const M& m) {
  const std::string frame = EncodeMessage(m);
  DecodeResult r = DecodeMessage(frame.data(), frame.size());
  EXPECT_TRUE(std::holds_alternative<Message>(r));
  return std::get<M>(std::get<Message>(r));
}

TEST(ProtocolReliability, IncarnationAcksAndPrioritiesRoundTrip) {
  RegisterMsg reg{"h", 7, "w", {}, "dax-kmem"};
  reg.incarnation = 0xfeedfacecafebeefull;
  EXPECT_EQ(RoundTrip(reg).incarnation, reg.incarnation);
  EXPECT_EQ(RoundTrip(RegisterMsg{}).incarnation, 0u);

  HeartbeatMsg hb{3, 9, {4, 9, 1ull << 40}};
  HeartbeatMsg back = RoundTrip(hb);
  EXPECT_EQ(back.episodes_done, 9u);
  EXPECT_EQ(back.acked_episodes, hb.acked_episodes);
  EXPECT_TRUE(RoundTrip(HeartbeatMsg{3, 9, {}}).acked_episodes.empty());

  TransitionBatchMsg batch;
  batch.transitions.resize(2);
  batch.priorities = {0.25f, 8.0f};
  EXPECT_EQ(RoundTrip(batch).priorities, batch.priorities);
  batch.priorities.clear();
  EXPECT_TRUE(RoundTrip(batch).priorities.empty());
}

TEST(ProtocolReliability, MeasurementCacheAndReportFieldsRoundTrip) {
  MeasurementCacheMsg m;
  m.workload_signature = 11;
  m.dram_limit_bytes = 1 << 20;
  CachedMeasurement e;
  e.plan_hash = 99;
  e.backend = "emulated:optane-dcpmm";
  e.runtime_ns = 1.5e6;
  e.min_runtime_ns = 1e6;
  e.max_runtime_ns = 3e6;
  e.oom = false;
  e.counters.measured = true;
  e.counters.repeats = 3;
  m.entries = {e, e};
  m.entries[1].plan_hash = 100;
  m.entries[1].oom = true;
  MeasurementCacheMsg back = RoundTrip(m);
  EXPECT_EQ(back.workload_signature, 11u);
  EXPECT_EQ(back.dram_limit_bytes, 1u << 20);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].backend, e.backend);
  EXPECT_DOUBLE_EQ(back.entries[0].runtime_ns, 1.5e6);
  EXPECT_DOUBLE_EQ(back.entries[0].max_runtime_ns, 3e6);
  EXPECT_TRUE(back.entries[0].counters.measured);
  EXPECT_EQ(back.entries[0].counters.repeats, 3u);
  EXPECT_EQ(back.entries[1].plan_hash, 100u);
  EXPECT_TRUE(back.entries[1].oom);
  EXPECT_STREQ(MessageName(Message{m}), "measurements");

  EpisodeReportMsg report;
  report.measurement_cached = true;
  report.min_runtime_ns = 2;
  report.max_runtime_ns = 5;
  EpisodeReportMsg r = RoundTrip(report);
  EXPECT_TRUE(r.measurement_cached);
  EXPECT_DOUBLE_EQ(r.min_runtime_ns, 2);
  EXPECT_DOUBLE_EQ(r.max_runtime_ns, 5);
}

}  // namespace
}  // namespace tensortier
