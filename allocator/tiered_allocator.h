// A LibTorch CPU allocator over two memory tiers.
//
// Installed with c10::SetCPUAllocator, it receives every CPU tensor storage
// allocation of the process. Outside an iteration everything goes to DRAM.
// Inside one (BeginIteration .. EndIteration) the n-th non-empty allocation
// is tensor `first_tensor_id + n` of the workload and goes to the tier the
// routing table names, after its size is checked against the profile. A DRAM
// request that would take DRAM beyond the limit is an OOM event: counted,
// then either spilled to the slow tier or refused with DramOomError (thrown
// out of the allocation, through the operator, to whoever runs the step;
// nothing crashes, and the episode is reported as failed).
//
// Each storage's block has an AllocationRecord (found from the storage's data
// pointer in a hash map: RecordOf), so the profiler and executor can go from
// any at::Tensor to its record, and the executor can move a storage to the other tier
// (BeginMove / CompleteMove: allocate, copy, swap the StorageImpl's DataPtr).
// Records keep the allocator's shared state alive, so storages may outlive
// the allocator object safely.
//
// Aggregation (docs/aggregation.md): a block is either its own allocation
// from the tier or lives in one of the tier's reserved regions (PageRegion):
// the small-tensor region (batching) or the long-lived region (adjoining).
// The routing table names the class of each allocation; moves keep the
// class, and tensors adjacent in a region can move as one copy
// (BeginGroupMove). The DRAM limit charges each block its requested bytes,
// whatever its class, so that a limit means the same under every switch and
// in the cost model; region space reserved but not in use is not charged
// (it is reported: TierUsage::region_reserved_bytes). Page-level footprints
// are reported beside (TierUsage::pages_in_use).
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/workload.h"
#include "allocator/aggregation.h"
#include "allocator/overflow_policy.h"
#include "allocator/page_region.h"
#include "tiers/memory_tier.h"

namespace tensortier {


class DramOomError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AllocatorCore;
struct MoveState;

struct AllocationRecord {
  void* ptr = nullptr;
  size_t bytes = 0;
  Tier tier = Tier::kDram;
  int64_t tensor_id = -1;  // workload tensor index; -1 outside a plan
  uint64_t sequence = 0;   // global allocation number since the allocator was made
  int64_t alloc_kernel_hint = -1;  // free for the profiler to use
  BlockClass block_class = BlockClass::kOwn;
  PageRegion* region = nullptr;  // the region holding the block (nullptr for kOwn)
  c10::weak_intrusive_ptr<c10::StorageImpl> storage{c10::weak_intrusive_ptr<c10::StorageImpl>::reclaim(nullptr)};
  std::shared_ptr<MoveState> move;  // in-flight move, if any
  std::shared_ptr<AllocatorCore> core;
};

// Notified of every allocation and free (on the allocating/freeing thread,
// with no allocator lock held).
class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;
  virtual void OnAllocate(const AllocationRecord& r) = 0;
  virtual void OnFree(const AllocationRecord& r) = 0;
};

struct AllocatorCounters {
  uint64_t allocations = 0;          // non-empty allocations
  uint64_t frees = 0;
  uint64_t zero_size_allocations = 0;
  uint64_t oom_events = 0;           // DRAM requests beyond the limit
  uint64_t spilled_allocations = 0;  // OOM events resolved by the slow tier
  uint64_t spilled_bytes = 0;
  uint64_t failed_allocations = 0;   // refused (DramOomError or both tiers full)
  uint64_t unplanned_allocations = 0;  // in an iteration, beyond the routing table
  uint64_t size_mismatches = 0;        // in an iteration, size differs from the profile
  uint64_t allocator_time_ns = 0;      // time spent in allocate and free
  uint64_t region_allocations = 0;     // of `allocations`, blocks in a reserved region
  uint64_t region_fallbacks = 0;       // region asked for, the tier refused a chunk: own block instead
};

// What the allocator charges to a tier (see the top of this file).
struct TierUsage {
  uint64_t charged_bytes = 0;   // requested bytes of live blocks (what the DRAM limit checks)
  uint64_t charged_peak_bytes = 0;
  uint64_t pages_in_use = 0;    // own blocks: ceil(bytes / 4 KiB) each; regions: pages with a live block
  uint64_t pages_peak = 0;
  uint64_t region_reserved_bytes = 0;  // chunks the tier's regions hold, used or not
  uint64_t region_pages_in_use = 0;
};

// One iteration's routing: tier and expected size of the n-th allocation.
struct IterationRouting {
  uint32_t first_tensor_id = 0;
  std::vector<Tier> tiers;
  std::vector<uint64_t> sizes;  // empty = do not check
  std::vector<BlockClass> classes;  // empty = all kOwn
  // Allocations beyond the table: DRAM and numbered on (profiling), instead
  // of DRAM, unnumbered and counted as unplanned.
  bool open_ended = false;
};

class TieredAllocator final : public c10::Allocator {
 public:
  TieredAllocator(std::shared_ptr<MemoryTier> dram, std::shared_ptr<MemoryTier> slow);
  ~TieredAllocator() override;  // uninstalls itself if installed

  // c10::SetCPUAllocator(this); the previous allocator comes back on
  // Uninstall or destruction. Only one TieredAllocator may be installed.
  void Install();
  void Uninstall();
  bool installed() const { return installed_; }

  // c10::Allocator changed between LibTorch 1.13 and 2.x: 1.13 declares
  // allocate() const, 2.x (2.6 checked) non-const and adds copy_data() as a
  // pure virtual. Both forms are declared, without `override`, so that the
  // one the LibTorch in use declares is overridden and the other is a plain
  // member; a LibTorch with yet another signature leaves the class abstract
  // and fails to compile here.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winconsistent-missing-override"
#endif
  c10::DataPtr allocate(size_t n) const;
  c10::DataPtr allocate(size_t n);
  // Copies between two blocks of this allocator (LibTorch 2.x clone()).
  void copy_data(void* dest, const void* src, std::size_t count) const;
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
  // DataPtrs have context == data pointer (raw_allocate works); records are
  // found through a process-wide registry.
  c10::DeleterFnPtr raw_deleter() const override;

  // 0 = no limit.
  void set_dram_limit(uint64_t bytes);
  uint64_t dram_limit() const;
  void set_overflow_policy(DramOverflowPolicy p);
  void set_observer(AllocationObserver* observer);  // nullptr to clear

  void BeginIteration(IterationRouting routing);
  // Returns the number of non-empty allocations in the iteration.
  uint64_t EndIteration();
  bool in_iteration() const;
  // First size mismatch of the current/last iteration, "" if none.
  std::string first_mismatch() const;

  MemoryTier& tier(Tier t) const { return t == Tier::kDram ? *dram_ : *slow_; }
  AllocatorCounters counters() const;
  TierUsage usage(Tier t) const;
  // Charged and page peaks := current values (start of a measured window).
  void ResetPeaks();
  // Returns region chunks without blocks to their tiers; the bytes returned.
  uint64_t TrimRegions();
  // Records of every live allocation, by allocation sequence. Only
  // meaningful while no other thread allocates.
  std::vector<AllocationRecord*> LiveRecords() const;
  void ResetCounters();

  // The record behind a storage this allocator made, else nullptr.
  static AllocationRecord* RecordOf(const c10::StorageImpl& storage);
  static AllocationRecord* RecordOf(const c10::Storage& storage);
  // Remembers `storage` as the owner of its record (needed before a move).
  // Returns the record, or nullptr if the storage is not ours.
  static AllocationRecord* BindStorage(const c10::Storage& storage);

  // ---- moves: allocate in the other tier, copy (caller), swap.
  struct MoveTicket {
    std::shared_ptr<MoveState> state;
    void* src = nullptr;  // one contiguous range: the copy to make
    void* dst = nullptr;
    size_t bytes = 0;
    Tier to = Tier::kDram;
    size_t members = 0;   // tensors moved by this copy
  };
  enum class MoveStart { kStarted, kNoStorage, kSameTier, kBusy, kOutOfMemory, kNotAdjacent };
  // Reserves the destination (subject to the DRAM limit when moving to DRAM:
  // both copies count while the move is open, DeepTM eq. 7), in the block
  // class the tensor has. The caller claims the copy (ClaimCopy), copies
  // ticket.src -> ticket.dst (any thread), calls MarkCopied, then
  // CompleteMove at a kernel boundary.
  MoveStart BeginMove(AllocationRecord* record, Tier to, MoveTicket* ticket);
  // Contiguous migration: `records` (in address order) are adjacent blocks
  // of one region, all in the same tier; their destination is one range of
  // the same class's region in `to`, so the whole move is one copy.
  // kNotAdjacent when they are not; nothing is reserved on any failure.
  MoveStart BeginGroupMove(const std::vector<AllocationRecord*>& records, Tier to, MoveTicket* ticket);
  // Whoever copies first claims the copy (true once per ticket): a copy
  // thread, or the main thread when it needs the move finished and the copy
  // thread has not started it. If every tensor of the move is freed first,
  // the copy is waived.
  static bool ClaimCopy(const MoveTicket& ticket);
  static void MarkCopied(const MoveTicket& ticket);
  // Swaps the storages to the new buffers and frees the old ones. Returns
  // how many tensors moved (0 when all were freed meanwhile); `moved`, if
  // given, gets one flag per member in the order of BeginGroupMove. Waits
  // for the copy if it is not marked done. Must be called once for every
  // started move: a tensor freed while its move is open keeps both of its
  // blocks until then.
  size_t CompleteMove(const MoveTicket& ticket, std::vector<uint8_t>* moved = nullptr);

  // ---- placement outside iterations (untimed setup; copies synchronously).
  // Moves the tensor to tier `to`, class `cls`, if it is not there.
  MoveStart Place(AllocationRecord* record, Tier to, BlockClass cls);
  // Lays `records` out in this order, adjacent, in the `cls` region of tier
  // `to` (nothing moves when they already are). Once some of them are there,
  // only the others move, each to the first room in the region that fits it
  // (adjacency is not restored). Returns the bytes copied, or -1 when DRAM
  // cannot hold a second copy of them under the limit or the region cannot
  // grow (place them one by one then). cls must not be kOwn.
  int64_t PlaceContiguously(const std::vector<AllocationRecord*>& records, Tier to, BlockClass cls);

 private:
  std::shared_ptr<AllocatorCore> core_;
  std::shared_ptr<MemoryTier> dram_, slow_;
  c10::Allocator* previous_ = nullptr;
  bool installed_ = false;
};

}  // namespace tensortier
