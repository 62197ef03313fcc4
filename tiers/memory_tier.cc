#include "tiers/memory_tier.h"

#include <memkind.h>
#include <sys/stat.h>

#include <cerrno>
#include <stdexcept>

namespace tensortier {

namespace {
uint64_t RetainKey(size_t bytes, size_t alignment) {
  uint64_t log2 = 0;
  while ((size_t{1} << log2) < alignment) ++log2;
  return static_cast<uint64_t>(bytes) * 64 + log2;
}
}  // namespace

void* MemoryTier::Allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) throw std::invalid_argument("MemoryTier::Allocate: zero bytes");
  if (alignment < kAlignment || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("MemoryTier::Allocate: alignment must be a power of two >= 64");
  if (capacity_bytes_ != 0) {
    // Reserve first so concurrent requests cannot overshoot the capacity.
    uint64_t cur = in_use_.load(std::memory_order_relaxed);
    do {
      if (cur + bytes > capacity_bytes_) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }
    } while (!in_use_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
  } else {
    in_use_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void* p = nullptr;
  if (bytes >= kRetainMinBytes) {
    std::lock_guard<std::mutex> lock(retain_mu_);
    // A block kept under a larger alignment serves a smaller one.
    for (size_t a = alignment; a <= 4096 && p == nullptr; a *= 2) {
      auto it = retained_.find(RetainKey(bytes, a));
      if (it == retained_.end()) continue;
      p = it->second;
      retained_.erase(it);
      retained_bytes_ -= bytes;
      ++retained_reuses_;
    }
  }
  if (p == nullptr) p = DoAllocate(bytes, alignment);
  if (p == nullptr && bytes >= kRetainMinBytes) {
    ReleaseRetained();  // the backend may be out of room because of them
    p = DoAllocate(bytes, alignment);
  }
  if (p == nullptr) {
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now = in_use_.load(std::memory_order_relaxed);
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void MemoryTier::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  bool kept = false;
  if (bytes >= kRetainMinBytes) {
    // The alignment is not passed to Free: a block is kept under the
    // largest alignment its address has (capped at a page), which is at
    // least what it was allocated with.
    size_t alignment = 4096;
    while (alignment > kAlignment && reinterpret_cast<uintptr_t>(ptr) % alignment != 0) alignment /= 2;
    std::lock_guard<std::mutex> lock(retain_mu_);
    if (retained_bytes_ + bytes <= retain_limit_bytes_) {
      retained_.emplace(RetainKey(bytes, alignment), ptr);
      retained_bytes_ += bytes;
      kept = true;
    }
  }
  if (!kept) DoFree(ptr);
  in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  frees_.fetch_add(1, std::memory_order_relaxed);
}

void MemoryTier::set_retain_limit_bytes(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(retain_mu_);
    retain_limit_bytes_ = bytes;
  }
  ReleaseRetained();
}

uint64_t MemoryTier::retain_limit_bytes() const {
  std::lock_guard<std::mutex> lock(retain_mu_);
  return retain_limit_bytes_;
}

void MemoryTier::ReleaseRetained() {
  std::unordered_multimap<uint64_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(retain_mu_);
    blocks.swap(retained_);
    retained_bytes_ = 0;
  }
  for (auto& [key, p] : blocks) DoFree(p);
}

TierStats MemoryTier::stats() const {
  TierStats s;
  s.bytes_in_use = in_use_.load(std::memory_order_relaxed);
  s.peak_bytes = peak_.load(std::memory_order_relaxed);
  s.allocations = allocations_.load(std::memory_order_relaxed);
  s.frees = frees_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(retain_mu_);
  s.retained_bytes = retained_bytes_;
  s.retained_reuses = retained_reuses_;
  return s;
}

void MemoryTier::ResetPeak() { peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

namespace {

std::string MemkindError(int err) {
  char buf[MEMKIND_ERROR_MESSAGE_SIZE];
  memkind_error_message(err, buf, sizeof buf);
  return buf;
}

// A tier that allocates from one memkind kind.
class MemkindTier : public MemoryTier {
 public:
  MemkindTier(std::string name, uint64_t capacity, memkind_t kind, std::string backend,
              bool owns_kind, const DeviceProfile* emulation = nullptr)
      : MemoryTier(std::move(name), capacity),
        kind_(kind),
        backend_(std::move(backend)),
        owns_kind_(owns_kind),
        emulation_(emulation) {}
  ~MemkindTier() override {
    ReleaseRetained();  // DoFree is ours: not callable from ~MemoryTier
    // Blocks still out would dangle; a pmem kind's file is removed by memkind.
    if (owns_kind_ && bytes_in_use() == 0) memkind_destroy_kind(kind_);
  }
  std::string backend() const override { return backend_; }
  const DeviceProfile* emulation() const override { return emulation_; }

 protected:
  void* DoAllocate(size_t bytes, size_t alignment) override {
    void* p = nullptr;
    if (memkind_posix_memalign(kind_, &p, alignment, bytes) != 0) return nullptr;
    return p;
  }
  void DoFree(void* ptr) override { memkind_free(kind_, ptr); }

 private:
  memkind_t kind_;
  std::string backend_;
  bool owns_kind_;
  const DeviceProfile* emulation_;
};

[[noreturn]] void BadSpec(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("bad --slow-tier '" + spec + "': " + why + ". Accepted: " + SlowTierSpecHelp());
}

}  // namespace

std::string SlowTierSpecHelp() {
  std::string profiles;
  for (const std::string& n : DeviceProfileNames()) profiles += (profiles.empty() ? "" : "|") + n;
  return "auto | dax-kmem | pmem:DIR | emulated:PROFILE (PROFILE one of " + profiles + ")";
}

SlowTierSpec ParseSlowTierSpec(const std::string& spec) {
  SlowTierSpec s;
  if (spec == "auto") {
    s.kind = SlowTierSpec::Kind::kAuto;
  } else if (spec == "dax-kmem") {
    s.kind = SlowTierSpec::Kind::kDaxKmem;
  } else if (spec.rfind("pmem:", 0) == 0) {
    s.kind = SlowTierSpec::Kind::kPmem;
    s.argument = spec.substr(5);
    if (s.argument.empty()) BadSpec(spec, "pmem needs a directory, e.g. pmem:/mnt/pmem0");
  } else if (spec.rfind("emulated:", 0) == 0) {
    s.kind = SlowTierSpec::Kind::kEmulated;
    s.argument = spec.substr(9);
    if (s.argument.empty()) BadSpec(spec, "emulated needs a profile, e.g. emulated:optane-dcpmm");
    try {
      FindDeviceProfile(s.argument);
    } catch (const std::invalid_argument& e) {
      BadSpec(spec, e.what());
    }
  } else if (spec == "emulated") {
    BadSpec(spec, "emulated needs a profile, e.g. emulated:optane-dcpmm");
  } else {
    BadSpec(spec, "unknown form");
  }
  return s;
}

bool DaxKmemAvailable() { return memkind_check_available(MEMKIND_DAX_KMEM) == MEMKIND_SUCCESS; }

std::unique_ptr<MemoryTier> MakeDramTier(uint64_t capacity_bytes) {
  return std::make_unique<MemkindTier>("dram", capacity_bytes, MEMKIND_DEFAULT, "memkind:default",
                                       /*owns_kind=*/false);
}

std::unique_ptr<MemoryTier> MakeSlowTier(const std::string& spec, uint64_t capacity_bytes) {
  SlowTierSpec s = ParseSlowTierSpec(spec);
  if (s.kind == SlowTierSpec::Kind::kAuto) {
    if (DaxKmemAvailable()) {
      s.kind = SlowTierSpec::Kind::kDaxKmem;
    } else {
      s.kind = SlowTierSpec::Kind::kEmulated;
      s.argument = "optane-dcpmm";
    }
  }
  switch (s.kind) {
    case SlowTierSpec::Kind::kDaxKmem:
      if (!DaxKmemAvailable())
        throw std::runtime_error(
            "--slow-tier dax-kmem: memkind reports MEMKIND_DAX_KMEM unavailable (no PM/CXL memory "
            "exposed as a NUMA node); use pmem:DIR or emulated:PROFILE");
      return std::make_unique<MemkindTier>("slow", capacity_bytes, MEMKIND_DAX_KMEM, "dax-kmem", false);
    case SlowTierSpec::Kind::kPmem: {
      struct stat st;
      if (stat(s.argument.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error("--slow-tier pmem:" + s.argument + ": not a directory");
      memkind_t kind = nullptr;
      // 0 = bounded by the file system only; memkind wants at least 16 MiB otherwise.
      size_t max_size = capacity_bytes == 0 ? 0 : std::max<uint64_t>(capacity_bytes, MEMKIND_PMEM_MIN_SIZE);
      int err = memkind_create_pmem(s.argument.c_str(), max_size, &kind);
      if (err != MEMKIND_SUCCESS)
        throw std::runtime_error("--slow-tier pmem:" + s.argument + ": memkind_create_pmem failed: " +
                                 MemkindError(err));
      return std::make_unique<MemkindTier>("slow", capacity_bytes, kind, "pmem:" + s.argument, true);
    }
    case SlowTierSpec::Kind::kEmulated: {
      const DeviceProfile& p = FindDeviceProfile(s.argument);
      return std::make_unique<MemkindTier>("slow", capacity_bytes, MEMKIND_DEFAULT, "emulated:" + p.name,
                                           false, &p);
    }
    case SlowTierSpec::Kind::kAuto:
      break;
  }
  throw std::logic_error("MakeSlowTier: unreachable");
}

}  // namespace tensortier
