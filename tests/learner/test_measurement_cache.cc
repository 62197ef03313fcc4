// The measurement cache on its own: what a report's measurement is to the
// cache (not real, a hit, new, redundant), what goes out to workers, and
// its checkpoint section.
#include <gtest/gtest.h>

#include "learner/measurement_cache.h"

namespace tensortier {
namespace {

using Seen = MeasurementCache::Seen;

EpisodeReportMsg Measured(uint64_t plan_seed, const std::string& backend, double runtime_ns) {
  EpisodeReportMsg r;
  r.counters.measured = true;
  r.backend = backend;
  r.runtime_ns = runtime_ns;
  r.min_runtime_ns = runtime_ns / 2;
  r.max_runtime_ns = runtime_ns * 2;
  r.plan.initial_tiers.assign(3, Tier::kDram);
  r.plan.initial_tiers[plan_seed % 3] = Tier::kSlow;
  return r;
}

TEST(LearnerMeasurementCache, NewMeasurementsGoOutOnceAndRepeatsAreCounted) {
  MeasurementCache cache(0xabc, 4096);
  EXPECT_TRUE(cache.empty());
  EpisodeReportMsg modelled;
  EXPECT_EQ(cache.Record(modelled).seen, Seen::kNotMeasured);

  MeasurementCache::Outcome first = cache.Record(Measured(0, "memkind", 1000));
  ASSERT_EQ(first.seen, Seen::kNew);
  EXPECT_EQ(first.entry.workload_signature, 0xabcu);
  EXPECT_EQ(first.entry.dram_limit_bytes, 4096u);
  ASSERT_EQ(first.entry.entries.size(), 1u);
  EXPECT_EQ(first.entry.entries[0].runtime_ns, 1000);
  EXPECT_EQ(first.entry.entries[0].min_runtime_ns, 500);  // the measuring worker's reference runtimes
  EXPECT_EQ(first.entry.entries[0].backend, "memkind");

  EXPECT_EQ(cache.Record(Measured(0, "memkind", 1100)).seen, Seen::kRedundant);
  EXPECT_EQ(cache.Record(Measured(0, "cxl", 1200)).seen, Seen::kNew);      // another backend
  EXPECT_EQ(cache.Record(Measured(1, "memkind", 1300)).seen, Seen::kNew);  // another plan
  EpisodeReportMsg hit = Measured(0, "memkind", 1000);
  hit.measurement_cached = true;
  EXPECT_EQ(cache.Record(hit).seen, Seen::kHit);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.All().entries.size(), 3u);
}

TEST(LearnerMeasurementCache, ACheckpointKeepsEveryEntry) {
  MeasurementCache before(1, 2);
  before.Record(Measured(0, "memkind", 1000));
  before.Record(Measured(1, "memkind", 2000));
  ByteWriter w;
  before.Save(w);
  MeasurementCache after(1, 2);
  ByteReader r(w.bytes());
  after.Load(r);
  EXPECT_TRUE(r.done());
  EXPECT_EQ(after.size(), 2u);
  EXPECT_EQ(after.Record(Measured(1, "memkind", 2000)).seen, Seen::kRedundant);
}

TEST(LearnerMeasurementCache, ASectionThatDoesNotDecodeIsRefused) {
  ByteWriter w;
  w.String("not a frame");
  MeasurementCache cache(1, 2);
  ByteReader r(w.bytes());
  EXPECT_THROW(cache.Load(r), CheckpointError);
}

}  // namespace
}  // namespace tensortier
