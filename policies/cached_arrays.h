// CachedArrays (IPDPS 2024) policies, replayed on the static graph: the
// application's hints (will_read / will_write before a kernel, archive /
// retire after it) are derived from the graph and drive a simulated data
// manager with an LRU DRAM cache of variable-size objects; the DRAM
// residency it produces becomes the plan.
//
//  - CA:L   new objects are allocated in DRAM (evicting LRU objects, archived
//           first, to make room); a slow object a kernel writes is moved in
//           (will_write); reads are served from the slow tier; dead objects are
//           not retired, so they linger in DRAM, evictable like live ones (a
//           wasted writeback), until the collection between iterations.
//  - CA:LM  + retire: an object is freed right after its last use.
//  - CA:LMP + prefetch on will_read as well.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/policy.h"

namespace tensortier {

enum class CachedArraysVariant : uint8_t { kL = 0, kLM = 1, kLMP = 2 };
const char* CachedArraysVariantName(CachedArraysVariant v);

enum class CaHintKind : uint8_t { kWillRead, kWillWrite, kArchive, kRetire };

struct CaHint {
  uint32_t tensor = 0;
  CaHintKind kind = CaHintKind::kWillRead;
};

struct CaKernelHints {
  std::vector<CaHint> before;  // will_read / will_write, for the kernel's tensors
  std::vector<CaHint> after;   // archive (used again, not next kernel) / retire (dead)
};

// The hints an annotated training loop would issue, one entry per kernel.
// Retire hints only with `retire` (the M optimisation).
std::vector<CaKernelHints> DeriveCachedArraysHints(const Workload& w, bool retire);

class CachedArraysPolicy : public PlacementPolicy {
 public:
  explicit CachedArraysPolicy(CachedArraysVariant variant) : variant_(variant) {}
  std::string name() const override;

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;

 private:
  CachedArraysVariant variant_;
};

}  // namespace tensortier
