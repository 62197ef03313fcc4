// Tiers of memory behind one small interface, with memkind underneath.
//
//   auto dram = MakeDramTier();
//   auto slow = MakeSlowTier("emulated:optane-dcpmm");   // or from --slow-tier
//   void* p = slow->Allocate(1 << 20);  ...  slow->Free(p, 1 << 20);
//   LogInfo("tier").kv("backend", slow->backend());      // "emulated:optane-dcpmm"
//
// `--slow-tier` strings:
//   auto            dax-kmem when memkind reports it available, else emulated:optane-dcpmm
//   dax-kmem        MEMKIND_DAX_KMEM: PM or CXL memory exposed as a CPU-less NUMA node
//   pmem:DIR        memkind_create_pmem: a file-backed heap in DIR (an fsdax mount, or any
//                   directory, tmpfs included: then it is DRAM under a file, useful for tests)
//   emulated:NAME   memory from DRAM plus the timing model NAME (device_profile.h); the
//                   executor adds the model's extra time to kernels and paces copies with it
// Allocations are 64-byte aligned (what LibTorch expects). Every tier counts
// its bytes in use, their peak, allocations, frees and refused requests; all
// counters are thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tiers/device_profile.h"

namespace tensortier {

struct TierStats {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t refused = 0;  // over capacity or the backend failed
  uint64_t retained_bytes = 0;  // freed large blocks kept for reuse (not in bytes_in_use)
  uint64_t retained_reuses = 0;
};

class MemoryTier {
 public:
  static constexpr size_t kAlignment = 64;

  virtual ~MemoryTier() = default;
  MemoryTier(const MemoryTier&) = delete;
  MemoryTier& operator=(const MemoryTier&) = delete;

  // nullptr when the request would exceed capacity_bytes() or the backend
  // has no memory left; never throws for that. `bytes` must be > 0;
  // `alignment` a power of two >= kAlignment (reserved regions ask for whole
  // pages so that their page accounting matches the hardware's pages).
  void* Allocate(size_t bytes, size_t alignment = kAlignment);
  // `bytes` must be what was passed to Allocate.
  void Free(void* ptr, size_t bytes);

  // Freed blocks of at least kRetainMinBytes are kept, up to
  // retain_limit_bytes in all, and handed out again for a request of the
  // same size and alignment. memkind gives large freed extents back to the
  // OS, so every new one costs a page fault per 4 KiB on first touch: a
  // 16 MiB migration copy into a fresh block ran at ~20% of memcpy
  // (docs/results/executor.md). Training repeats the same sizes every
  // iteration, so exact sizes hit. Retained bytes are not in bytes_in_use
  // and not charged against capacity; they are released when the backend
  // refuses a request, on ReleaseRetained, and with the tier.
  static constexpr size_t kRetainMinBytes = 1 << 20;
  void set_retain_limit_bytes(uint64_t bytes);  // 0 = retain nothing
  uint64_t retain_limit_bytes() const;
  void ReleaseRetained();

  // "dram" or "slow": the role of the tier.
  const std::string& name() const { return name_; }
  // What is underneath, e.g. "memkind:default", "dax-kmem", "pmem:/mnt/pm",
  // "emulated:optane-dcpmm". Every report should carry it.
  virtual std::string backend() const = 0;
  // 0 = no limit of our own (the backend's still applies).
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  // The device model when this tier is emulated, else nullptr.
  virtual const DeviceProfile* emulation() const { return nullptr; }
  bool emulated() const { return emulation() != nullptr; }

  TierStats stats() const;
  uint64_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  // Peak := current bytes in use (start of a measured window).
  void ResetPeak();

 protected:
  MemoryTier(std::string name, uint64_t capacity_bytes)
      : name_(std::move(name)), capacity_bytes_(capacity_bytes) {}
  virtual void* DoAllocate(size_t bytes, size_t alignment) = 0;
  virtual void DoFree(void* ptr) = 0;

 private:
  std::string name_;
  uint64_t capacity_bytes_;
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> frees_{0};
  std::atomic<uint64_t> refused_{0};
  mutable std::mutex retain_mu_;
  std::unordered_multimap<uint64_t, void*> retained_;  // key: bytes * 64 + log2(alignment)
  uint64_t retained_bytes_ = 0, retained_reuses_ = 0;
  uint64_t retain_limit_bytes_ = 512ull << 20;
};

// The parsed form of a --slow-tier string.
struct SlowTierSpec {
  enum class Kind { kAuto, kDaxKmem, kPmem, kEmulated };
  Kind kind = Kind::kAuto;
  std::string argument;  // DIR for pmem, profile name for emulated
};
// Throws std::invalid_argument with a message naming the accepted forms.
SlowTierSpec ParseSlowTierSpec(const std::string& spec);
// The accepted forms, for --help texts.
std::string SlowTierSpecHelp();
// Whether memkind can allocate from MEMKIND_DAX_KMEM on this host.
bool DaxKmemAvailable();

// DRAM through memkind's MEMKIND_DEFAULT.
std::unique_ptr<MemoryTier> MakeDramTier(uint64_t capacity_bytes = 0);
// The slow tier a --slow-tier string names ("auto" resolved). Throws
// std::invalid_argument for malformed strings or unknown profiles, and
// std::runtime_error when the named backend is unavailable here (e.g.
// dax-kmem without a KMEM node, pmem:DIR on a missing directory).
std::unique_ptr<MemoryTier> MakeSlowTier(const std::string& spec, uint64_t capacity_bytes = 0);

}  // namespace tensortier
