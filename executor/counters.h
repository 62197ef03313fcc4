// Per-iteration memory and host counters (issue 3, item 6).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tensortier {

// Hardware counters through perf_event_open, for the calling thread. Where
// the host does not allow them (perf_event_paranoid, containers, no PMU)
// `available` is false and `unavailable_reason` says why: never report those
// as zeros.
struct HardwareCounters {
  bool available = false;
  std::string unavailable_reason;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  uint64_t llc_misses = 0;
};

class HardwareCounterSet {
 public:
  HardwareCounterSet();  // opens the counters (or records why not)
  ~HardwareCounterSet();
  HardwareCounterSet(const HardwareCounterSet&) = delete;
  HardwareCounterSet& operator=(const HardwareCounterSet&) = delete;
  void Start();
  HardwareCounters Stop();

 private:
  int fds_[3] = {-1, -1, -1};
  std::string reason_;
};

struct IterationCounters {
  // Bytes charged per tier (requested bytes of live blocks, what the DRAM
  // limit checks): peak during the iteration and in use at its end.
  uint64_t dram_peak_bytes = 0, dram_end_bytes = 0;
  uint64_t slow_peak_bytes = 0, slow_end_bytes = 0;
  // Page-level footprint (4 KiB pages; a page shared by batched tensors
  // counts once, an own block ceil(bytes / 4 KiB)): peak during the iteration.
  uint64_t dram_pages_peak = 0, slow_pages_peak = 0;
  // Reserved regions at the end of the iteration (docs/aggregation.md): not
  // charged against the DRAM limit.
  uint64_t dram_region_reserved_bytes = 0, slow_region_reserved_bytes = 0;
  uint64_t region_allocations = 0;    // allocations of the iteration placed in a reserved region
  uint64_t dram_limit_bytes = 0;      // 0 = none
  int64_t dram_headroom_bytes = -1;   // limit - peak; -1 without a limit
  // Migrations executed at kernel boundaries, per direction.
  uint64_t migrations_to_slow = 0, bytes_to_slow = 0;
  uint64_t migrations_to_dram = 0, bytes_to_dram = 0;
  uint64_t migrations_skipped = 0;    // tensor not live, storage unknown or already there
  uint64_t migrations_refused = 0;    // destination full (DRAM limit or slow capacity)
  uint64_t migration_oom_events = 0;  // of those, moves into DRAM beyond the limit (the tensor stays slow)
  // Copies made for them: a contiguous migration moves several tensors with one copy.
  uint64_t migration_copies = 0, migration_copy_bytes = 0;
  uint64_t grouped_migrations = 0;    // tensors moved by copies of more than one tensor
  double migration_device_ns = 0;     // emulated tiers: what the device model charges for those copies (their pace)
  // Placing persistent tensors at their initial tier before the iteration (not timed).
  uint64_t setup_moves = 0, setup_bytes = 0;
  // Allocator.
  uint64_t allocations = 0, frees = 0;
  uint64_t oom_events = 0, spilled_allocations = 0, spilled_bytes = 0, failed_allocations = 0;
  uint64_t allocator_time_ns = 0;
  // Time.
  double iteration_ns = 0;
  // The iteration as an otherwise idle core would take it: the training
  // thread's CPU time, with the time it spent in emulated waits and paced
  // copies replaced by what they were meant to last, plus what it waited
  // for the copy thread had that thread run undisturbed from each copy's
  // issue (copies one after another). Other processes stretch iteration_ns (the
  // computing part, not the emulated device's waits) but hardly this.
  // Meaningful with one intra-op thread (the others' work is not in it).
  double undisturbed_iteration_ns = 0;
  double emulated_delay_ns = 0;       // added to kernels for slow-tier accesses (emulated tiers)
  uint64_t slow_access_streams = 0;   // slow-tier access streams charged a device latency (emulated tiers)
  uint64_t emulated_waits = 0;        // waits that paid emulated_delay_ns (owed per kernel, paid before copies and at the end)
  double migration_copy_ns = 0;       // time spent copying (sync: exposed; async: on the copy thread)
  double exposed_migration_ns = 0;    // sync copies + waits for async copies, on the undisturbed clock
  uint64_t async_write_stalls = 0;    // kernels that waited for a copy of a tensor they write
  uint64_t async_copies_inline = 0;   // async copies the main thread did itself (copy thread not started yet)
  // Host.
  int64_t minor_faults = 0, major_faults = 0;  // getrusage(RUSAGE_SELF) deltas
  HardwareCounters hardware;
  // Graph checks.
  bool graph_matches = true;
  std::string graph_difference;
  // The iteration's first skipped or refused move, "" if none: which
  // tensor, where to and why (what a user needs to find the cause).
  std::string first_unfollowed_move;
};

}  // namespace tensortier
