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
#include "tiers/memory_tier.h"

namespace tensortier {

enum class DramOverflowPolicy : uint8_t {
  kSpillToSlow = 0,  // allocate the request in the slow tier instead
  kFail = 1,         // throw DramOomError; the episode fails
};

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
};

// One iteration's routing: tier and expected size of the n-th allocation.
struct IterationRouting {
  uint32_t first_tensor_id = 0;
  std::vector<Tier> tiers;
  std::vector<uint64_t> sizes;  // empty = do not check
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

  c10::DataPtr allocate(size_t n) const override;
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
    void* src = nullptr;
    void* dst = nullptr;
    size_t bytes = 0;
    Tier to = Tier::kDram;
  };
  enum class MoveStart { kStarted, kNoStorage, kSameTier, kBusy, kOutOfMemory };
  // Reserves the destination (subject to the DRAM limit when moving to DRAM:
  // both copies count while the move is open, DeepTM eq. 7). The caller
  // claims the copy (ClaimCopy), copies ticket.src -> ticket.dst (any
  // thread), calls MarkCopied, then
  // CompleteMove at a kernel boundary.
  MoveStart BeginMove(AllocationRecord* record, Tier to, MoveTicket* ticket);
  // Whoever copies first claims the copy (true once per ticket): a copy
  // thread, or the main thread when it needs the move finished and the copy
  // thread has not started it. A free of the tensor waives the copy.
  static bool ClaimCopy(const MoveTicket& ticket);
  static void MarkCopied(const MoveTicket& ticket);
  // Swaps the storage to the new buffer and frees the old one. Returns false
  // when the tensor was freed meanwhile (nothing to do then). Waits for the
  // copy if it is not marked done.
  bool CompleteMove(const MoveTicket& ticket);

 private:
  std::shared_ptr<AllocatorCore> core_;
  std::shared_ptr<MemoryTier> dram_, slow_;
  c10::Allocator* previous_ = nullptr;
  bool installed_ = false;
};

}  // namespace tensortier
