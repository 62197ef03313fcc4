// What a migration costs on this host, measured on the executor's own copy
// path (a copy into a block the destination tier kept), so that
// the cost model prices copies as the executor pays them. On an emulated
// tier the copy is paced at the device's speed but can never be faster
// than the host's memcpy; on real PM or CXL memory it is what it is.
#pragma once

#include <cstdint>

namespace tensortier {

class MemoryTier;
struct DeviceProfile;

struct CopyCost {
  double bytes_per_second = 0;  // marginal bandwidth of a large copy
  double setup_ns = 0;          // fixed cost per copy: allocation, latency, bookkeeping
  double Ns(uint64_t bytes) const { return setup_ns + static_cast<double>(bytes) * 1e9 / bytes_per_second; }
};

// Times copies of two sizes from `from` to `to` (the lower quartile of
// `rounds`, UndisturbedTime in common/stats.h) and fits setup + bytes / bandwidth. `pace` is the emulated device of the
// slow tier (nullptr: no pacing); `to_slow` says which way the copy goes
// for it. The destination is a block already faulted in, as the executor's
// copies land in blocks the tier kept from the iteration before, whatever
// ran on the tiers before. Throws std::runtime_error when a tier cannot allocate.
CopyCost MeasureCopyCost(MemoryTier& from, MemoryTier& to, const DeviceProfile* pace, bool to_slow, int rounds = 5);

}  // namespace tensortier
