// The measurement cache on its own: what a report's measurement is to the
// cache (not real, a hit, new, redundant), what goes out to workers, and
// its checkpoint section.
#include <gtest/gtest.h>

#include <cmath>

#include "learner/measurement_cache.h"
#include "tests/learner/learner_parts.h"

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
  testing::SectionMessage<schema::MeasurementCache> section;
  before.Save(section.Init());
  MeasurementCache after(1, 2);
  after.Load(section.Read());
  EXPECT_EQ(after.size(), 2u);
  ASSERT_EQ(after.All().entries.size(), 2u);
  EXPECT_EQ(after.All().entries[1].runtime_ns, 2000);
  EXPECT_EQ(after.All().entries[1].max_runtime_ns, 4000);
  EXPECT_EQ(after.Record(Measured(1, "memkind", 2000)).seen, Seen::kRedundant);
}

// Workers refuse a cache frame with a value that is not finite; a
// checkpoint must not bring one back.
TEST(LearnerMeasurementCache, ASectionWithARuntimeThatIsNotFiniteIsRefused) {
  MeasurementCache before(1, 2);
  before.Record(Measured(0, "memkind", std::nan("")));
  testing::SectionMessage<schema::MeasurementCache> section;
  before.Save(section.Init());
  MeasurementCache after(1, 2);
  try {
    after.Load(section.Read());
    ADD_FAILURE() << "a NaN runtime was loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("runtime_ns that is not finite"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tensortier
