// DeepTM's aggregation: the reserved regions, the allocator's classes and
// group moves, and bit-identity of real training under every switch combination.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>

#include "executor/executor.h"
#include "executor/migration_plans.h"
#include "allocator/page_region.h"
#include "allocator/tiered_allocator.h"
#include "tests/execution/real_training.h"
#include "tests/execution/tiers_fixture.h"

namespace tensortier {
namespace {

using testing::ExpectNothingCharged;
using testing::ExpectSame;
using testing::LimitDram;
using testing::SmallRunner;

TEST(PageRegion, AdjacentBlocksPageCountsAndCoalescing) {
  std::shared_ptr<MemoryTier> dram = MakeDramTier();
  {
    PageRegion region(dram.get(), 64 << 10);
    char* a = static_cast<char*>(region.Reserve(100));
    char* b = static_cast<char*>(region.Reserve(3000));
    char* c = static_cast<char*>(region.Reserve(6000));
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % PageRegion::kPageBytes, 0u);  // chunks are page aligned
    EXPECT_EQ(b, a + PageRegion::Footprint(100));
    EXPECT_EQ(c, b + PageRegion::Footprint(3000));
    EXPECT_EQ(region.reserved_bytes(), 64u << 10);
    EXPECT_EQ(dram->bytes_in_use(), 64u << 10);  // the tier sees the whole chunk
    EXPECT_EQ(region.NewPagesOf(a, 100), 1u);
    EXPECT_EQ(region.Commit(a, 100), 1u);
    EXPECT_EQ(region.Commit(b, 3000), 0u);  // same page as a
    EXPECT_EQ(region.Commit(c, 6000), 2u);  // starts in page 0, ends in page 2
    EXPECT_EQ(region.pages_in_use(), 3u);
    EXPECT_EQ(region.Release(b, 3000), 0u);  // a and c still on page 0
    EXPECT_EQ(region.Release(a, 100), 0u);   // c starts on page 0
    EXPECT_EQ(region.Release(c, 6000), 3u);
    EXPECT_EQ(region.pages_in_use(), 0u);
    // Coalesced: the whole chunk is one extent again.
    char* big = static_cast<char*>(region.Reserve(64 << 10));
    EXPECT_EQ(big, a);
    region.Unreserve(big, 64 << 10);
    char* huge = static_cast<char*>(region.Reserve(100 << 10));  // larger than a chunk: a chunk of its own
    ASSERT_NE(huge, nullptr);
    EXPECT_EQ(region.chunks(), 2u);
    region.Unreserve(huge, 100 << 10);
    EXPECT_EQ(region.Trim(), (64u << 10) + (100u << 10));
    EXPECT_EQ(region.reserved_bytes(), 0u);
  }
  EXPECT_EQ(dram->bytes_in_use(), 0u);
}

using Aggregation = testing::TiersFixture;

// Allocates `n` float tensors of `elems` each under routing to `tier`/`cls`.
std::vector<at::Tensor> Allocate(TieredAllocator& a, int n, int64_t elems, Tier tier, BlockClass cls) {
  IterationRouting r;
  r.tiers.assign(n, tier);
  r.classes.assign(n, cls);
  a.BeginIteration(r);
  std::vector<at::Tensor> v;
  for (int i = 0; i < n; ++i) v.push_back(at::full({elems}, static_cast<float>(i + 1)));
  a.EndIteration();
  return v;
}

// A started move's copy, done here instead of by the executor's migration
// thread: claim it, copy the bytes, mark it copied.
void CopyAsAMigrationThreadWould(TieredAllocator::MoveTicket& t) {
  ASSERT_TRUE(TieredAllocator::ClaimCopy(t));
  std::memcpy(t.dst, t.src, t.bytes);
  TieredAllocator::MarkCopied(t);
}

TEST_F(Aggregation, SmallTensorsSharePagesAndAreChargedTheirBytes) {
  TieredAllocator a(dram, slow);
  a.Install();
  std::vector<at::Tensor> v = Allocate(a, 16, 64, Tier::kDram, BlockClass::kSmall);  // 256 bytes each
  for (size_t i = 1; i < v.size(); ++i) {
    AllocationRecord* prev = TieredAllocator::RecordOf(v[i - 1].storage());
    AllocationRecord* r = TieredAllocator::RecordOf(v[i].storage());
    ASSERT_TRUE(prev && r);
    EXPECT_EQ(r->block_class, BlockClass::kSmall);
    EXPECT_EQ(static_cast<char*>(r->ptr), static_cast<char*>(prev->ptr) + 256);
  }
  TierUsage u = a.usage(Tier::kDram);
  EXPECT_EQ(u.charged_bytes, 16u * 256);
  EXPECT_EQ(u.region_pages_in_use, 1u);
  EXPECT_EQ(u.pages_in_use, 1u);  // own blocks would be 16 pages
  EXPECT_GE(u.region_reserved_bytes, 256u << 10);
  EXPECT_EQ(a.counters().region_allocations, 16u);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i].sum().item<float>(), 64.0f * (i + 1));
  v.clear();
  u = a.usage(Tier::kDram);
  EXPECT_EQ(u.charged_bytes, 0u);
  EXPECT_EQ(u.pages_in_use, 0u);
  EXPECT_GT(u.region_reserved_bytes, 0u);  // reserved until trimmed
  a.TrimRegions();
  EXPECT_EQ(a.usage(Tier::kDram).region_reserved_bytes, 0u);
  EXPECT_EQ(dram->bytes_in_use(), 0u);
}

TEST_F(Aggregation, DramLimitChargesRequestedBytesNotReservedRegions) {
  TieredAllocator a(dram, slow);
  a.Install();
  LimitDram(a, 3000, DramOverflowPolicy::kSpillToSlow);
  std::vector<at::Tensor> v = Allocate(a, 16, 64, Tier::kDram, BlockClass::kSmall);  // 4096 bytes in all
  size_t in_dram = 0, in_slow_region = 0;
  for (const at::Tensor& t : v) {
    AllocationRecord* r = TieredAllocator::RecordOf(t.storage());
    in_dram += r->tier == Tier::kDram;
    in_slow_region += r->tier == Tier::kSlow && r->block_class == BlockClass::kSmall;
  }
  EXPECT_EQ(in_dram, 11u);  // 11 x 256 <= 3000 < 12 x 256
  EXPECT_EQ(in_slow_region, 5u);  // spilled into the slow tier's small region
  EXPECT_EQ(a.counters().spilled_allocations, 5u);
  EXPECT_LE(a.usage(Tier::kDram).charged_peak_bytes, 3000u);
  EXPECT_GT(a.usage(Tier::kDram).region_reserved_bytes, 3000u);  // not charged
}

TEST_F(Aggregation, FailPolicyRefusesRegionBlocksBeyondTheLimit) {
  TieredAllocator a(dram, slow);
  a.Install();
  LimitDram(a, 1000, DramOverflowPolicy::kFail);
  IterationRouting r;
  r.tiers.assign(4, Tier::kDram);
  r.classes.assign(4, BlockClass::kSmall);
  a.BeginIteration(r);
  std::vector<at::Tensor> v;
  for (int i = 0; i < 3; ++i) v.push_back(at::empty({64}));  // 768 bytes
  EXPECT_THROW(at::empty({64}), DramOomError);             // 1024 > 1000
  a.EndIteration();
  EXPECT_EQ(a.counters().failed_allocations, 1u);
  EXPECT_EQ(a.usage(Tier::kDram).charged_bytes, 768u);
  // A group move into DRAM is checked for all its members at once.
  a.set_dram_limit(0);
  std::vector<at::Tensor> s = Allocate(a, 2, 64, Tier::kSlow, BlockClass::kSmall);
  a.set_dram_limit(1000);
  TieredAllocator::MoveTicket t;
  EXPECT_EQ(a.BeginGroupMove({TieredAllocator::BindStorage(s[0].storage()), TieredAllocator::BindStorage(s[1].storage())},
                             Tier::kDram, &t),
            TieredAllocator::MoveStart::kOutOfMemory);  // 768 + 512 > 1000
  EXPECT_EQ(a.usage(Tier::kDram).charged_bytes, 768u);
}

TEST_F(Aggregation, GroupMoveIsOneCopyAndKeepsNeighboursAdjacent) {
  TieredAllocator a(dram, slow);
  a.Install();
  std::vector<at::Tensor> v = Allocate(a, 4, 300, Tier::kDram, BlockClass::kSmall);  // 1200 bytes, footprint 1216
  std::vector<AllocationRecord*> rs;
  for (const at::Tensor& t : v) rs.push_back(TieredAllocator::BindStorage(t.storage()));
  TieredAllocator::MoveTicket t;
  // Not adjacent (a gap): refused without reserving anything.
  EXPECT_EQ(a.BeginGroupMove({rs[0], rs[2]}, Tier::kSlow, &t), TieredAllocator::MoveStart::kNotAdjacent);
  EXPECT_EQ(a.usage(Tier::kSlow).charged_bytes, 0u);
  ASSERT_EQ(a.BeginGroupMove({rs[1], rs[2], rs[3]}, Tier::kSlow, &t), TieredAllocator::MoveStart::kStarted);
  EXPECT_EQ(t.members, 3u);
  EXPECT_EQ(t.bytes, 2u * 1216 + 1200);
  EXPECT_EQ(t.src, rs[1]->ptr);
  EXPECT_EQ(a.usage(Tier::kSlow).charged_bytes, 3u * 1200);  // both copies held while open
  EXPECT_EQ(a.usage(Tier::kDram).charged_bytes, 4u * 1200);
  ASSERT_NO_FATAL_FAILURE(CopyAsAMigrationThreadWould(t));
  std::vector<uint8_t> moved;
  EXPECT_EQ(a.CompleteMove(t, &moved), 3u);
  EXPECT_EQ(moved, (std::vector<uint8_t>{1, 1, 1}));
  EXPECT_EQ(rs[0]->tier, Tier::kDram);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(rs[i]->tier, Tier::kSlow);
    EXPECT_EQ(rs[i]->block_class, BlockClass::kSmall);
    EXPECT_EQ(v[i].data_ptr(), rs[i]->ptr);
  }
  EXPECT_EQ(static_cast<char*>(rs[2]->ptr), static_cast<char*>(rs[1]->ptr) + 1216);
  EXPECT_EQ(static_cast<char*>(rs[3]->ptr), static_cast<char*>(rs[2]->ptr) + 1216);
  EXPECT_EQ(a.usage(Tier::kDram).charged_bytes, 1200u);
  EXPECT_EQ(a.usage(Tier::kSlow).charged_bytes, 3600u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(at::equal(v[i], at::full({300}, static_cast<float>(i + 1)))) << i;
  // And back, as one copy again.
  ASSERT_EQ(a.BeginGroupMove({rs[1], rs[2], rs[3]}, Tier::kDram, &t), TieredAllocator::MoveStart::kStarted);
  ASSERT_NO_FATAL_FAILURE(CopyAsAMigrationThreadWould(t));
  EXPECT_EQ(a.CompleteMove(t), 3u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(at::equal(v[i], at::full({300}, static_cast<float>(i + 1)))) << i;
  v.clear();
  ExpectNothingCharged(a);
}

TEST_F(Aggregation, FreeingAMemberOfAnOpenGroupMoveIsSafe) {
  TieredAllocator a(dram, slow);
  a.Install();
  std::vector<at::Tensor> v = Allocate(a, 3, 1024, Tier::kSlow, BlockClass::kLongLived);
  std::vector<AllocationRecord*> rs;
  for (const at::Tensor& t : v) rs.push_back(TieredAllocator::BindStorage(t.storage()));
  TieredAllocator::MoveTicket t;
  ASSERT_EQ(a.BeginGroupMove(rs, Tier::kDram, &t), TieredAllocator::MoveStart::kStarted);
  v[1].reset();  // dies while its copy is open: its blocks wait for CompleteMove
  at::Tensor reuse = Allocate(a, 1, 1024, Tier::kDram, BlockClass::kLongLived)[0];
  const char* d = static_cast<const char*>(t.dst);
  EXPECT_FALSE(reuse.data_ptr() >= static_cast<const void*>(d) && reuse.data_ptr() < static_cast<const void*>(d + t.bytes));
  ASSERT_NO_FATAL_FAILURE(CopyAsAMigrationThreadWould(t));
  std::vector<uint8_t> moved;
  EXPECT_EQ(a.CompleteMove(t, &moved), 2u);
  EXPECT_EQ(moved, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_TRUE(at::equal(v[0], at::full({1024}, 1.0f)));
  EXPECT_TRUE(at::equal(v[2], at::full({1024}, 3.0f)));
  EXPECT_EQ(a.usage(Tier::kSlow).charged_bytes, 0u);
  EXPECT_EQ(a.usage(Tier::kDram).charged_bytes, 3u * 4096);
  // Every member freed before the copy starts: the copy is waived.
  std::vector<at::Tensor> w = Allocate(a, 2, 1024, Tier::kSlow, BlockClass::kLongLived);  // the slow region is empty again
  std::vector<AllocationRecord*> ws = {TieredAllocator::BindStorage(w[0].storage()),
                                       TieredAllocator::BindStorage(w[1].storage())};
  ASSERT_EQ(a.BeginGroupMove(ws, Tier::kDram, &t), TieredAllocator::MoveStart::kStarted);
  w.clear();
  EXPECT_FALSE(TieredAllocator::ClaimCopy(t));
  EXPECT_EQ(a.CompleteMove(t), 0u);
  v.clear();
  reuse.reset();
  ExpectNothingCharged(a);
}

TEST_F(Aggregation, PlaceContiguouslyLaysOutInOrderOnce) {
  TieredAllocator a(dram, slow);
  a.Install();
  std::vector<at::Tensor> v;
  for (int i = 0; i < 5; ++i) v.push_back(at::full({1000 + 10 * i}, static_cast<float>(i)));  // own blocks
  std::vector<AllocationRecord*> rs;
  for (int i : {3, 0, 4, 1, 2}) rs.push_back(TieredAllocator::BindStorage(v[i].storage()));
  int64_t copied = a.PlaceContiguously(rs, Tier::kSlow, BlockClass::kLongLived);
  EXPECT_EQ(copied, 4120 + 4000 + 4160 + 4040 + 4080);
  for (size_t i = 1; i < rs.size(); ++i)
    EXPECT_EQ(static_cast<char*>(rs[i]->ptr), static_cast<char*>(rs[i - 1]->ptr) + PageRegion::Footprint(rs[i - 1]->bytes));
  for (AllocationRecord* r : rs) EXPECT_EQ(r->tier, Tier::kSlow);
  EXPECT_EQ(a.PlaceContiguously(rs, Tier::kSlow, BlockClass::kLongLived), 0);  // already there
  // One of them taken out (as a plan's move does) and its room taken by
  // another tensor meanwhile: only it moves back, not the whole range.
  std::vector<void*> before;
  for (AllocationRecord* r : rs) before.push_back(r->ptr);
  ASSERT_EQ(a.Place(rs[2], Tier::kDram, BlockClass::kLongLived), TieredAllocator::MoveStart::kStarted);
  at::Tensor squatter = at::full({1040}, 9.0f);
  ASSERT_EQ(a.Place(TieredAllocator::BindStorage(squatter.storage()), Tier::kSlow, BlockClass::kLongLived),
            TieredAllocator::MoveStart::kStarted);
  EXPECT_EQ(squatter.storage().data(), before[2]);  // first fit: the room rs[2] left
  EXPECT_EQ(a.PlaceContiguously(rs, Tier::kSlow, BlockClass::kLongLived), static_cast<int64_t>(rs[2]->bytes));
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i]->tier, Tier::kSlow);
    if (i != 2) {
      EXPECT_EQ(rs[i]->ptr, before[i]);
    }
  }
  EXPECT_NE(rs[2]->ptr, before[2]);
  EXPECT_EQ(rs[2]->block_class, BlockClass::kLongLived);
  EXPECT_TRUE(at::equal(squatter, at::full({1040}, 9.0f)));
  squatter = at::Tensor();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(at::equal(v[i], at::full({1000 + 10 * i}, static_cast<float>(i))));
  // Under a DRAM limit that cannot hold them: refused, nothing moved.
  a.set_dram_limit(10000);
  EXPECT_EQ(a.PlaceContiguously(rs, Tier::kDram, BlockClass::kLongLived), -1);
  EXPECT_EQ(rs[0]->tier, Tier::kSlow);
  EXPECT_EQ(a.Place(rs[0], Tier::kDram, BlockClass::kOwn), TieredAllocator::MoveStart::kStarted);
  EXPECT_EQ(rs[0]->block_class, BlockClass::kOwn);
  EXPECT_TRUE(at::equal(v[3], at::full({1030}, 3.0f)));
}

// ---- real training: bit-identical under every switch combination.

TEST(AggregationExecution, BitIdenticalUnderEverySwitchCombination) {
  RunnerOptions o = SmallRunner("resnet18");
  o.emulate_slow_timing = false;  // correctness only (emulated timing with aggregation: runner_test.cc)
  RealWorkloadRunner runner(o);
  runner.set_aggregation(AggregationOptions::AllOff());
  const ProfileReport& prof = runner.Profile();
  ASSERT_TRUE(prof.deterministic) << prof.graph_difference;
  const Workload& w = prof.workload;
  const TrainingSnapshot ref = runner.RunFresh(PlacementPlan::Uniform(w, Tier::kDram, 0), 2);
  ASSERT_EQ(ref.losses.size(), 2u);
  for (int bits = 0; bits < 8; ++bits) {
    AggregationOptions agg;
    agg.batch_small_tensors = bits & 1;
    agg.adjoin_long_lived = bits & 2;
    agg.contiguous_migration = bits & 4;
    runner.set_aggregation(agg);
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      const std::string what = agg.Describe() + " " + MigrationModeName(mode);
      ExecutionReport rep;
      TrainingSnapshot got = runner.RunFresh(PrefetchEvictPlan(w, mode), 2, &rep);
      ASSERT_TRUE(rep.ok) << what << ": " << rep.failure;
      ExpectSame(ref, got, what);
      const IterationCounters& c = rep.counters.back();
      EXPECT_TRUE(c.graph_matches) << what << ": " << c.graph_difference;
      EXPECT_EQ(c.migrations_refused, 0u) << what;
      const uint64_t moved = c.migrations_to_slow + c.migrations_to_dram;
      EXPECT_GT(moved, 100u) << what;
      EXPECT_EQ(rep.aggregation, agg.Describe());
      EXPECT_EQ(c.region_allocations > 0, agg.batch_small_tensors || agg.adjoin_long_lived) << what;
      if (agg.contiguous_migration && (agg.batch_small_tensors || agg.adjoin_long_lived)) {
        EXPECT_GT(c.grouped_migrations, 0u) << what;
      } else {
        EXPECT_EQ(c.grouped_migrations, 0u) << what;
      }
      // Counters stay right: every tensor dynamic to the step is gone at its end.
      EXPECT_EQ(c.allocations, c.frees) << what;
    }
  }
}

TEST(AggregationExecution, DramLimitHoldsWithRegions) {
  RunnerOptions o = SmallRunner("resnet18");
  RealWorkloadRunner runner(o);
  const Workload& w = runner.Profile().workload;
  const uint64_t limit = w.peak_live_bytes() / 3;
  PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kDram, limit);
  ExecutionReport r = runner.Execute(plan, 1, 1);
  ASSERT_TRUE(r.ok) << r.failure;
  const IterationCounters& c = r.counters[0];
  EXPECT_GT(c.spilled_allocations, 0u);
  EXPECT_LE(c.dram_peak_bytes, limit);
  EXPECT_GT(c.dram_region_reserved_bytes, 0u);
  EXPECT_GT(c.region_allocations, 0u);
  EXPECT_GT(c.dram_pages_peak, 0u);
}

}  // namespace
}  // namespace tensortier
