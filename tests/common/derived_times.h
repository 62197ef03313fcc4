// Tests that profile a real model and then compare plans need the same MDP
// every run, but profiled kernel times and copy prices are measured and move
// with machine load (and with them ILP plans and trained networks). These
// derive them from the graph instead; the graph itself is deterministic.
#pragma once

#include "envs/workload.h"

namespace tensortier::testing {

// Kernel k takes 1 us plus 0.05 ns per byte it accesses in DRAM, and each
// access costs 0.3 ns per byte more in the slow tier (Optane-like ratios);
// copies cost 2 us plus the device's published bandwidths.
inline Workload WithTimesFromSizes(Workload w) {
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    double bytes = 0;
    for (uint32_t ai : w.accesses_of_kernel(k)) {
      Access& a = w.accesses[ai];
      const double accessed = static_cast<double>(w.tensors[a.tensor].size_bytes) * (a.reads + a.writes);
      a.slow_penalty_ns = 0.3 * accessed;
      bytes += accessed;
    }
    w.kernels[k].dram_time_ns = 1000 + 0.05 * bytes;
  }
  w.device.dram_to_slow_bytes_per_second = 2.3e9;
  w.device.slow_to_dram_bytes_per_second = 6.6e9;
  w.device.dram_to_slow_copy_setup_ns = 2000;
  w.device.slow_to_dram_copy_setup_ns = 2000;
  w.Finalize();
  return w;
}

}  // namespace tensortier::testing
