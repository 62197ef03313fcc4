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

// One migration of `bytes` as the executor does it: the destination is a
// fresh allocation (first-touch page faults included), the source is freed.
double TimeOneCopyNs(MemoryTier& from, MemoryTier& to, const DeviceProfile* pace, bool to_slow, size_t bytes) {
  void* src = from.Allocate(bytes);
  if (src == nullptr) throw std::runtime_error("copy calibration: the source tier cannot allocate");
  std::memset(src, 1, bytes);
  const double target_ns = pace == nullptr ? 0 : to_slow ? pace->CopyToDeviceNs(bytes) : pace->CopyFromDeviceNs(bytes);
  const double t0 = SteadyNowNs();
  void* dst = to.Allocate(bytes);
  if (dst == nullptr) {
    from.Free(src, bytes);
    throw std::runtime_error("copy calibration: the destination tier cannot allocate");
  }
  PacedCopy(dst, src, bytes, target_ns);
  from.Free(src, bytes);
  const double ns = SteadyNowNs() - t0;
  to.Free(dst, bytes);
  return ns;
}

}  // namespace

CopyCost MeasureCopyCost(MemoryTier& from, MemoryTier& to, const DeviceProfile* pace, bool to_slow, int rounds) {
  constexpr size_t kSmall = 64 << 10, kLarge = 16 << 20;
  // The executor's copies land in blocks the tier kept from the iteration
  // before (MemoryTier's retained blocks: the sizes repeat). A pool filled by
  // what ran before the calibration (a large model's profile) keeps nothing
  // more, so every round's destination was fresh and paid a page fault per
  // 4 KiB: VGG19 and ResNet-152 read 0.39 GB/s to DRAM, against 6.6 GB/s on
  // smaller models and in the executor's iterations.
  from.ReleaseRetained();
  to.ReleaseRetained();
  std::vector<double> small, large;
  for (int i = 0; i < std::max(1, rounds); ++i) {
    small.push_back(TimeOneCopyNs(from, to, pace, to_slow, kSmall));
    large.push_back(TimeOneCopyNs(from, to, pace, to_slow, kLarge));
  }
  // Copies are short next to a scheduler's time slice, so some of them run
  // undisturbed even beside a busy process: their time is the price.
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
