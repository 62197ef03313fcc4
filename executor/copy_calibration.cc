#include "executor/copy_calibration.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/stats.h"
#include "executor/plan_executor.h"
#include "tiers/device_profile.h"
#include "tiers/memory_tier.h"

namespace tensortier {
namespace {

// One migration of `bytes` into `dst`, a block already faulted in (see
// MeasureCopyCost). Neither the source's allocation nor its free is timed:
// with the pool full, as after a large model, the free hands 16 MiB back to
// memkind (about 0.9 ms here), which iterations whose blocks cycle do not pay.
double TimeOneCopyNs(MemoryTier& from, void* dst, const DeviceProfile* pace, bool to_slow, size_t bytes) {
  void* src = from.Allocate(bytes);
  if (src == nullptr) throw std::runtime_error("copy calibration: the source tier cannot allocate");
  std::memset(src, 1, bytes);
  const double target_ns = pace == nullptr ? 0 : to_slow ? pace->CopyToDeviceNs(bytes) : pace->CopyFromDeviceNs(bytes);
  // Priced on the undisturbed clock, as the executor counts a copy in a
  // measured iteration: the device's time or the memcpy's CPU time, whichever
  // is longer. The wall clock also holds the time other processes kept the
  // thread off a core: beside two busy loops on two cores, copies into DRAM
  // were priced 26-30% higher than on a quiet host.
  double undisturbed_ns = 0;
  PacedCopy(dst, src, bytes, target_ns, &undisturbed_ns);
  from.Free(src, bytes);
  return undisturbed_ns;
}

// A destination block for the rounds, faulted in before they start.
struct KeptBlock {
  MemoryTier& tier;
  size_t bytes;
  void* p;
  KeptBlock(MemoryTier& t, size_t n) : tier(t), bytes(n), p(t.Allocate(n)) {
    if (p == nullptr) throw std::runtime_error("copy calibration: the destination tier cannot allocate");
    std::memset(p, 0, n);
  }
  ~KeptBlock() { tier.Free(p, bytes); }
  KeptBlock(const KeptBlock&) = delete;
  KeptBlock& operator=(const KeptBlock&) = delete;
};

}  // namespace

CopyCost MeasureCopyCost(MemoryTier& from, MemoryTier& to, const DeviceProfile* pace, bool to_slow, int rounds) {
  constexpr size_t kSmall = 64 << 10, kLarge = 16 << 20;
  // The executor's copies land in blocks the tier kept from the iteration
  // before (MemoryTier's retained blocks: the sizes repeat). Not a fresh
  // block per round: after a large model's iterations the tier's pool of
  // kept blocks is full, a fresh block pays a page fault per 4 KiB,
  // and VGG19 and ResNet-152 read 0.39 GB/s to DRAM (6.6 GB/s on the other
  // models and in the executor's iterations). Emptying the pools instead
  // made the iterations that follow a profile fault until they refilled.
  const KeptBlock small_dst(to, kSmall), large_dst(to, kLarge);
  std::vector<double> small, large;
  for (int i = 0; i < std::max(1, rounds); ++i) {
    small.push_back(TimeOneCopyNs(from, small_dst.p, pace, to_slow, kSmall));
    large.push_back(TimeOneCopyNs(from, large_dst.p, pace, to_slow, kLarge));
  }
  // The lower quartile: a round whose memcpy was slowed (caches, page
  // reclaim) is not the price.
  const double t_small = UndisturbedTime(small), t_large = UndisturbedTime(large);
  CopyCost c;
  if (t_large > t_small) {
    c.bytes_per_second = static_cast<double>(kLarge - kSmall) * 1e9 / (t_large - t_small);
    c.setup_ns = std::max(0.0, t_small - static_cast<double>(kSmall) * 1e9 / c.bytes_per_second);
  } else {  // noise swamped the difference: all of it as bandwidth
    c.bytes_per_second = static_cast<double>(kLarge) * 1e9 / t_large;
  }
  return c;
}

}  // namespace tensortier
