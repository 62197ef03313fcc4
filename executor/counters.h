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
  // Bytes per tier: peak during the iteration and in use at its end.
  uint64_t dram_peak_bytes = 0, dram_end_bytes = 0;
  uint64_t slow_peak_bytes = 0, slow_end_bytes = 0;
  uint64_t dram_limit_bytes = 0;      // 0 = none
  int64_t dram_headroom_bytes = -1;   // limit - peak; -1 without a limit
  // Migrations executed at kernel boundaries, per direction.
  uint64_t migrations_to_slow = 0, bytes_to_slow = 0;
  uint64_t migrations_to_dram = 0, bytes_to_dram = 0;
  uint64_t migrations_skipped = 0;    // tensor not live, storage unknown or already there
  uint64_t migrations_refused = 0;    // destination full (DRAM limit or slow capacity)
  uint64_t migration_oom_events = 0;  // of those, moves into DRAM beyond the limit (the tensor stays slow)
  // Placing persistent tensors at their initial tier before the iteration (not timed).
  uint64_t setup_moves = 0, setup_bytes = 0;
  // Allocator.
  uint64_t allocations = 0, frees = 0;
  uint64_t oom_events = 0, spilled_allocations = 0, spilled_bytes = 0, failed_allocations = 0;
  uint64_t allocator_time_ns = 0;
  // Time.
  double iteration_ns = 0;
  double emulated_delay_ns = 0;       // added to kernels for slow-tier accesses (emulated tiers)
  double migration_copy_ns = 0;       // time spent copying (sync: exposed; async: on the copy thread)
  double exposed_migration_ns = 0;    // sync copies + waits for async copies
  uint64_t async_write_stalls = 0;    // kernels that waited for a copy of a tensor they write
  uint64_t async_copies_inline = 0;   // async copies the main thread did itself (copy thread not started yet)
  // Host.
  int64_t minor_faults = 0, major_faults = 0;  // getrusage(RUSAGE_SELF) deltas
  HardwareCounters hardware;
  // Graph checks.
  bool graph_matches = true;
  std::string graph_difference;
};

}  // namespace tensortier
