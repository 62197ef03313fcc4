#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <cstring>
#include <stdexcept>

#include "executor/copy_calibration.h"
#include "tiers/device_profile.h"
#include "tiers/memory_tier.h"

namespace tensortier {
namespace {

TEST(Tiers, ParsesSpecs) {
  EXPECT_EQ(ParseSlowTierSpec("auto").kind, SlowTierSpec::Kind::kAuto);
  EXPECT_EQ(ParseSlowTierSpec("dax-kmem").kind, SlowTierSpec::Kind::kDaxKmem);
  SlowTierSpec p = ParseSlowTierSpec("pmem:/mnt/pm0");
  EXPECT_EQ(p.kind, SlowTierSpec::Kind::kPmem);
  EXPECT_EQ(p.argument, "/mnt/pm0");
  SlowTierSpec e = ParseSlowTierSpec("emulated:cxl");
  EXPECT_EQ(e.kind, SlowTierSpec::Kind::kEmulated);
  EXPECT_EQ(e.argument, "cxl");
}

TEST(Tiers, RejectsBadSpecsWithClearMessages) {
  for (const char* bad : {"", "pmem", "pmem:", "emulated", "emulated:", "emulated:nvme", "optane", "dax"}) {
    try {
      ParseSlowTierSpec(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--slow-tier"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("emulated:PROFILE"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(MakeSlowTier("emulated:nope"), std::invalid_argument);
  EXPECT_THROW(MakeSlowTier("pmem:/definitely/not/here"), std::runtime_error);
}

TEST(Tiers, LargeFreedBlocksAreReusedWithoutCountingAsInUse) {
  auto dram = MakeDramTier(8 << 20);
  void* a = dram->Allocate(4 << 20);
  ASSERT_NE(a, nullptr);
  std::memset(a, 7, 4 << 20);
  dram->Free(a, 4 << 20);
  EXPECT_EQ(dram->bytes_in_use(), 0u);
  EXPECT_EQ(dram->stats().retained_bytes, 4u << 20);
  void* b = dram->Allocate(4 << 20);  // same size: the same (warm) block
  EXPECT_EQ(b, a);
  EXPECT_EQ(dram->stats().retained_reuses, 1u);
  EXPECT_EQ(dram->stats().retained_bytes, 0u);
  void* c = dram->Allocate(3 << 20);  // another size: a new block; capacity counts live bytes only
  ASSERT_NE(c, nullptr);
  dram->Free(b, 4 << 20);
  dram->Free(c, 3 << 20);
  EXPECT_EQ(dram->stats().retained_bytes, 7u << 20);
  void* small = dram->Allocate(1000);  // below kRetainMinBytes: never kept
  dram->Free(small, 1000);
  EXPECT_EQ(dram->stats().retained_bytes, 7u << 20);
  dram->set_retain_limit_bytes(0);
  EXPECT_EQ(dram->stats().retained_bytes, 0u);
  void* d = dram->Allocate(4 << 20);
  dram->Free(d, 4 << 20);
  EXPECT_EQ(dram->stats().retained_bytes, 0u);
}

TEST(Tiers, DramAccountsBytesAndPeak) {
  auto dram = MakeDramTier();
  EXPECT_EQ(dram->backend(), "memkind:default");
  EXPECT_FALSE(dram->emulated());
  void* a = dram->Allocate(1000);
  void* b = dram->Allocate(3000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % MemoryTier::kAlignment, 0u);
  std::memset(a, 1, 1000);
  EXPECT_EQ(dram->bytes_in_use(), 4000u);
  dram->Free(a, 1000);
  EXPECT_EQ(dram->bytes_in_use(), 3000u);
  EXPECT_EQ(dram->peak_bytes(), 4000u);
  dram->ResetPeak();
  EXPECT_EQ(dram->peak_bytes(), 3000u);
  dram->Free(b, 3000);
  TierStats s = dram->stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.frees, 2u);
  EXPECT_EQ(s.bytes_in_use, 0u);
}

TEST(Tiers, CapacityIsEnforced) {
  auto t = MakeSlowTier("emulated:optane-dcpmm", 1 << 20);
  void* a = t->Allocate(700 << 10);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(t->Allocate(400 << 10), nullptr);
  EXPECT_EQ(t->stats().refused, 1u);
  t->Free(a, 700 << 10);
  void* b = t->Allocate(400 << 10);
  EXPECT_NE(b, nullptr);
  t->Free(b, 400 << 10);
}

TEST(Tiers, EmulatedNamesBackendAndProfile) {
  auto t = MakeSlowTier("emulated:optane-dcpmm");
  EXPECT_EQ(t->backend(), "emulated:optane-dcpmm");
  ASSERT_TRUE(t->emulated());
  EXPECT_EQ(t->emulation()->name, "optane-dcpmm");
  auto c = MakeSlowTier("emulated:cxl");
  EXPECT_EQ(c->backend(), "emulated:cxl");
}

TEST(Tiers, AutoPicksDaxKmemOrEmulatedOptane) {
  auto t = MakeSlowTier("auto");
  if (DaxKmemAvailable()) {
    EXPECT_EQ(t->backend(), "dax-kmem");
  } else {
    EXPECT_EQ(t->backend(), "emulated:optane-dcpmm");
    EXPECT_THROW(MakeSlowTier("dax-kmem"), std::runtime_error);
  }
}

TEST(Tiers, PmemOnAnyDirectory) {
  char dir[] = "/tmp/tt_pmem_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    auto t = MakeSlowTier(std::string("pmem:") + dir, 64 << 20);
    EXPECT_EQ(t->backend(), std::string("pmem:") + dir);
    EXPECT_FALSE(t->emulated());
    void* p = t->Allocate(8 << 20);
    ASSERT_NE(p, nullptr);
    std::memset(p, 7, 8 << 20);
    EXPECT_EQ(static_cast<unsigned char*>(p)[12345], 7);
    EXPECT_EQ(t->Allocate(60 << 20), nullptr);  // over our capacity
    t->Free(p, 8 << 20);
  }
  rmdir(dir);
}

TEST(DeviceProfiles, ExtraTimeGrowsWithBytesAndAccesses) {
  const DeviceProfile& p = FindDeviceProfile("optane-dcpmm");
  EXPECT_GT(p.ExtraAccessNs(1 << 20, 1, 0), p.ExtraAccessNs(4096, 1, 0));
  EXPECT_GT(p.ExtraAccessNs(1 << 20, 0, 1), p.ExtraAccessNs(1 << 20, 1, 0));  // writes are slower
  EXPECT_DOUBLE_EQ(p.ExtraAccessNs(1 << 20, 2, 0), 2 * p.ExtraAccessNs(1 << 20, 1, 0));
  EXPECT_EQ(p.ExtraAccessNs(1 << 20, 0, 0), 0);
  // 1 GB at 2.3 GB/s.
  EXPECT_NEAR(p.CopyToDeviceNs(1000000000ull), 1e9 / 2.3, 1e6);
  EXPECT_THROW(FindDeviceProfile("nvme"), std::invalid_argument);
  const DeviceProfile& c = FindDeviceProfile("cxl");
  EXPECT_LT(c.ExtraAccessNs(1 << 20, 1, 1), p.ExtraAccessNs(1 << 20, 1, 1));
}

}  // namespace
}  // namespace tensortier

namespace tensortier {
namespace {

// The profiler prices copies as the executor pays them: on an emulated
// device never faster than the device (pacing), and a fit that the cost
// model can use.
TEST(CopyCalibration, EmulatedCopiesAreNoFasterThanTheDevice) {
  auto dram = MakeDramTier();
  auto slow = MakeSlowTier("emulated:optane-dcpmm");
  const DeviceProfile& dev = *slow->emulation();
  const CopyCost to_slow = MeasureCopyCost(*dram, *slow, &dev, true, 3);
  const CopyCost to_dram = MeasureCopyCost(*slow, *dram, &dev, false, 3);
  for (const CopyCost& c : {to_slow, to_dram}) {
    EXPECT_GT(c.bytes_per_second, 0);
    EXPECT_GE(c.setup_ns, 0);
    EXPECT_GT(c.Ns(2 << 20), c.Ns(1 << 20));
  }
  // 16 MiB cannot go faster than the paced time (small slack for the fit).
  EXPECT_GE(to_slow.Ns(16 << 20), 0.95 * dev.CopyToDeviceNs(16 << 20));
  EXPECT_GE(to_dram.Ns(16 << 20), 0.95 * dev.CopyFromDeviceNs(16 << 20));
  // Every byte is accounted back: nothing leaked in either tier.
  EXPECT_EQ(dram->stats().bytes_in_use, 0u);
  EXPECT_EQ(slow->stats().bytes_in_use, 0u);
}

// A large model's profile leaves the tiers' pools of retained blocks full, so
// a calibration that reuses nothing pays a page fault per 4 KiB of every
// destination: 16 MiB into DRAM read 0.39 GB/s on VGG19's profile against
// the device's 6.6. The executor's own copies land in kept blocks.
TEST(CopyCalibration, PricesAKeptDestinationWhateverRanOnTheTiersBefore) {
  auto dram = MakeDramTier();
  auto slow = MakeSlowTier("emulated:optane-dcpmm");
  const DeviceProfile& dev = *slow->emulation();
  constexpr size_t kFill = 12 << 20;
  dram->set_retain_limit_bytes(24 << 20);  // room for the 16 MiB block, but not beside kFill
  void* fill = dram->Allocate(kFill);
  ASSERT_NE(fill, nullptr);
  dram->Free(fill, kFill);  // kept: the pool is now full for a 16 MiB block
  ASSERT_EQ(dram->stats().retained_bytes, kFill);
  const CopyCost to_dram = MeasureCopyCost(*slow, *dram, &dev, false, 5);
  // Fresh pages cost about 17 times the device's time here; a kept block
  // costs the paced time, or memcpy's where that is slower.
  EXPECT_LT(to_dram.Ns(16 << 20), 4 * dev.CopyFromDeviceNs(16 << 20))
      << to_dram.bytes_per_second / 1e9 << " GB/s + " << to_dram.setup_ns << " ns";
  EXPECT_EQ(dram->retain_limit_bytes(), 24u << 20);  // the caller's setting stays
}

// Copies are priced on the undisturbed clock, as a measured iteration counts
// them, so a profile taken beside busy processes prices them as a quiet one
// does (issue #16, item 2). Beside two busy loops on this project's 2-core
// machine, wall-clock prices of copies into DRAM were 26-30% higher. Here
// more spinning threads than cores keep the calibrating thread waiting for
// a core.
TEST(CopyCalibration, ThePriceDoesNotHoldTimeTheThreadWasKeptOffACore) {
  auto dram = MakeDramTier();
  auto slow = MakeSlowTier("emulated:optane-dcpmm");
  const DeviceProfile& dev = *slow->emulation();
  constexpr int kRounds = 7;
  const CopyCost quiet_to_dram = MeasureCopyCost(*slow, *dram, &dev, false, kRounds);
  const CopyCost quiet_to_slow = MeasureCopyCost(*dram, *slow, &dev, true, kRounds);
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cores + 1; ++i)
    spinners.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  const CopyCost busy_to_dram = MeasureCopyCost(*slow, *dram, &dev, false, kRounds);
  const CopyCost busy_to_slow = MeasureCopyCost(*dram, *slow, &dev, true, kRounds);
  stop = true;
  for (std::thread& t : spinners) t.join();
  constexpr size_t kBytes = 16 << 20;
  EXPECT_LE(busy_to_dram.Ns(kBytes), 1.1 * quiet_to_dram.Ns(kBytes));
  EXPECT_LE(busy_to_slow.Ns(kBytes), 1.1 * quiet_to_slow.Ns(kBytes));
  EXPECT_GE(busy_to_dram.Ns(kBytes), 0.95 * dev.CopyFromDeviceNs(kBytes));
  EXPECT_GE(busy_to_slow.Ns(kBytes), 0.95 * dev.CopyToDeviceNs(kBytes));
}

}  // namespace
}  // namespace tensortier
