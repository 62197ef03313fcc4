// What the allocator tests set up: the two tiers a TieredAllocator serves
// from, its DRAM limit, and the check that a test freed all it allocated.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "allocator/tiered_allocator.h"

namespace tensortier::testing {

// DRAM and an emulated Optane tier, fresh for each test.
struct TiersFixture : ::testing::Test {
  std::shared_ptr<MemoryTier> dram = MakeDramTier();
  std::shared_ptr<MemoryTier> slow = MakeSlowTier("emulated:optane-dcpmm");
};

// DRAM limited to `limit_bytes`; requests beyond it go as `policy` says.
inline void LimitDram(TieredAllocator& a, uint64_t limit_bytes, DramOverflowPolicy policy) {
  a.set_dram_limit(limit_bytes);
  a.set_overflow_policy(policy);
}

// Every block the test allocated has been freed: neither tier is charged.
inline void ExpectNothingCharged(const TieredAllocator& a) {
  EXPECT_EQ(a.usage(Tier::kDram).charged_bytes, 0u);
  EXPECT_EQ(a.usage(Tier::kSlow).charged_bytes, 0u);
}

}  // namespace tensortier::testing
