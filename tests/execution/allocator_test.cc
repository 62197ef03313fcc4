#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <cstring>

#include "allocator/tiered_allocator.h"
#include "tests/execution/tiers_fixture.h"

namespace tensortier {
namespace {

using testing::LimitDram;
using TieredAllocatorTest = testing::TiersFixture;

TEST_F(TieredAllocatorTest, InstallsAndRestoresThePreviousAllocator) {
  c10::Allocator* before = c10::GetCPUAllocator();
  {
    TieredAllocator a(dram, slow);
    a.Install();
    EXPECT_EQ(c10::GetCPUAllocator(), &a);
    at::Tensor t = at::ones({256});
    EXPECT_NE(TieredAllocator::RecordOf(t.storage()), nullptr);
    EXPECT_EQ(dram->bytes_in_use(), 1024u);
  }
  EXPECT_EQ(c10::GetCPUAllocator(), before);
  EXPECT_EQ(dram->bytes_in_use(), 0u);  // the tensor died after the allocator: still freed correctly
}

TEST_F(TieredAllocatorTest, StorageMayOutliveTheAllocator) {
  at::Tensor keep;
  {
    TieredAllocator a(dram, slow);
    a.Install();
    keep = at::full({1000}, 3.0f);
  }
  EXPECT_EQ(keep.sum().item<float>(), 3000.0f);
  EXPECT_EQ(dram->bytes_in_use(), 4000u);
  keep.reset();
  EXPECT_EQ(dram->bytes_in_use(), 0u);
}

TEST_F(TieredAllocatorTest, RoutesTheNthAllocationOfAnIteration) {
  TieredAllocator a(dram, slow);
  a.Install();
  IterationRouting r;
  r.first_tensor_id = 10;
  r.tiers = {Tier::kDram, Tier::kSlow, Tier::kSlow};
  r.sizes = {400, 800, 1200};
  a.BeginIteration(r);
  at::Tensor x = at::empty({100});
  at::Tensor empty = at::empty({0});  // zero-size: not numbered
  at::Tensor y = at::empty({200});
  at::Tensor z = at::empty({300});
  at::Tensor extra = at::empty({5});
  EXPECT_EQ(a.EndIteration(), 4u);
  auto* rx = TieredAllocator::RecordOf(x.storage());
  auto* ry = TieredAllocator::RecordOf(y.storage());
  auto* rz = TieredAllocator::RecordOf(z.storage());
  ASSERT_TRUE(rx && ry && rz);
  EXPECT_EQ(rx->tier, Tier::kDram);
  EXPECT_EQ(ry->tier, Tier::kSlow);
  EXPECT_EQ(rz->tier, Tier::kSlow);
  EXPECT_EQ(rx->tensor_id, 10);
  EXPECT_EQ(rz->tensor_id, 12);
  EXPECT_EQ(TieredAllocator::RecordOf(extra.storage())->tensor_id, -1);
  EXPECT_EQ(slow->bytes_in_use(), 2000u);
  AllocatorCounters c = a.counters();
  EXPECT_EQ(c.unplanned_allocations, 1u);
  EXPECT_EQ(c.zero_size_allocations, 1u);
  EXPECT_EQ(c.size_mismatches, 0u);
  y.fill_(2.0f);
  EXPECT_EQ(y.sum().item<float>(), 400.0f);
}

TEST_F(TieredAllocatorTest, ReportsSizeMismatches) {
  TieredAllocator a(dram, slow);
  a.Install();
  IterationRouting r;
  r.tiers = {Tier::kDram};
  r.sizes = {400};
  a.BeginIteration(r);
  at::Tensor x = at::empty({101});
  a.EndIteration();
  EXPECT_EQ(a.counters().size_mismatches, 1u);
  EXPECT_NE(a.first_mismatch().find("404 bytes"), std::string::npos) << a.first_mismatch();
}

TEST_F(TieredAllocatorTest, DramLimitSpillsToTheSlowTier) {
  TieredAllocator a(dram, slow);
  a.Install();
  LimitDram(a, 10000, DramOverflowPolicy::kSpillToSlow);
  at::Tensor x = at::empty({2000});  // 8000 bytes: fits
  at::Tensor y = at::empty({1000});  // 4000 more: over
  EXPECT_EQ(TieredAllocator::RecordOf(x.storage())->tier, Tier::kDram);
  EXPECT_EQ(TieredAllocator::RecordOf(y.storage())->tier, Tier::kSlow);
  AllocatorCounters c = a.counters();
  EXPECT_EQ(c.oom_events, 1u);
  EXPECT_EQ(c.spilled_allocations, 1u);
  EXPECT_EQ(c.spilled_bytes, 4000u);
  EXPECT_LE(dram->bytes_in_use(), 10000u);
}

TEST_F(TieredAllocatorTest, DramLimitFailsTheRequestWithoutCrashing) {
  TieredAllocator a(dram, slow);
  a.Install();
  LimitDram(a, 10000, DramOverflowPolicy::kFail);
  at::Tensor x = at::empty({2000});
  EXPECT_THROW(at::empty({1000}), DramOomError);
  EXPECT_THROW(x.matmul(at::ones({2000, 4})), std::exception);  // inside an operator
  AllocatorCounters c = a.counters();
  EXPECT_EQ(c.oom_events, 2u);
  EXPECT_EQ(c.failed_allocations, 2u);
  a.set_dram_limit(0);
  EXPECT_NO_THROW(at::empty({1000}));
}

TEST_F(TieredAllocatorTest, MovesAStorageBetweenTiersKeepingItsData) {
  TieredAllocator a(dram, slow);
  a.Install();
  at::Tensor x = at::arange(1000, at::kFloat);
  at::Tensor view = x.slice(0, 10, 20);  // shares the storage
  AllocationRecord* r = TieredAllocator::BindStorage(x.storage());
  ASSERT_NE(r, nullptr);
  const void* before = x.data_ptr();
  TieredAllocator::MoveTicket t;
  ASSERT_EQ(a.BeginMove(r, Tier::kSlow, &t), TieredAllocator::MoveStart::kStarted);
  EXPECT_EQ(slow->bytes_in_use(), 4000u);  // both copies held while the move is open
  EXPECT_EQ(dram->bytes_in_use(), 4000u);
  std::memcpy(t.dst, t.src, t.bytes);
  TieredAllocator::MarkCopied(t);
  ASSERT_TRUE(a.CompleteMove(t));
  EXPECT_NE(x.data_ptr(), before);
  EXPECT_EQ(r->tier, Tier::kSlow);
  EXPECT_EQ(TieredAllocator::RecordOf(x.storage()), r);
  EXPECT_EQ(dram->bytes_in_use(), 0u);
  EXPECT_EQ(slow->bytes_in_use(), 4000u);
  EXPECT_EQ(view[3].item<float>(), 13.0f);
  EXPECT_TRUE(at::equal(x, at::arange(1000, at::kFloat)));
  EXPECT_EQ(a.BeginMove(r, Tier::kSlow, &t), TieredAllocator::MoveStart::kSameTier);
  x.reset();
  view.reset();
  EXPECT_EQ(slow->bytes_in_use(), 0u);
}

TEST_F(TieredAllocatorTest, FreeDuringAnOpenMoveCancelsIt) {
  TieredAllocator a(dram, slow);
  a.Install();
  at::Tensor x = at::ones({1000});
  AllocationRecord* r = TieredAllocator::BindStorage(x.storage());
  TieredAllocator::MoveTicket t;
  ASSERT_EQ(a.BeginMove(r, Tier::kSlow, &t), TieredAllocator::MoveStart::kStarted);
  std::memcpy(t.dst, t.src, t.bytes);
  TieredAllocator::MarkCopied(t);
  x.reset();  // freed before the swap
  EXPECT_FALSE(a.CompleteMove(t));
  EXPECT_EQ(dram->bytes_in_use(), 0u);
  EXPECT_EQ(slow->bytes_in_use(), 0u);
}

TEST_F(TieredAllocatorTest, MoveIntoDramRespectsTheLimit) {
  TieredAllocator a(dram, slow);
  a.Install();
  a.set_dram_limit(6000);
  at::Tensor big = at::ones({1000});  // 4000 in DRAM
  IterationRouting r;
  r.tiers = {Tier::kSlow};
  a.BeginIteration(r);
  at::Tensor s = at::ones({1000});  // 4000 in slow
  a.EndIteration();
  AllocationRecord* rec = TieredAllocator::BindStorage(s.storage());
  TieredAllocator::MoveTicket t;
  EXPECT_EQ(a.BeginMove(rec, Tier::kDram, &t), TieredAllocator::MoveStart::kOutOfMemory);
}

}  // namespace
}  // namespace tensortier
