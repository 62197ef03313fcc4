#include "envs/describe.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "envs/cost_model.h"

namespace tensortier {

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

std::string DescribeWorkload(const Workload& w) {
  std::ostringstream os;
  os << "workload        " << w.name << "\n"
     << "source          " << w.source << "\n"
     << "signature       " << std::hex << w.Signature() << std::dec << "\n"
     << "batch size      " << w.batch_size << "\n"
     << "kernels         " << w.num_kernels() << "\n"
     << "tensors         " << w.num_tensors() << "\n"
     << "accesses        " << w.accesses.size() << "\n"
     << "peak live       " << FormatBytes(static_cast<double>(w.peak_live_bytes())) << "\n"
     << "time all-DRAM   " << MinCostNs(w) / 1e6 << " ms\n"
     << "time all-slow   " << MaxCostNs(w) / 1e6 << " ms (" << MaxCostNs(w) / std::max(MinCostNs(w), 1.0)
     << "x)\n"
     << "device          " << w.device.name << ": to slow " << w.device.dram_to_slow_bytes_per_second / 1e9
     << " GB/s + " << w.device.dram_to_slow_copy_setup_ns / 1e3 << " us per copy, to DRAM "
     << w.device.slow_to_dram_bytes_per_second / 1e9 << " GB/s + " << w.device.slow_to_dram_copy_setup_ns / 1e3
     << " us per copy; " << 100 * w.device.async_copy_exposure
     << "% of an asynchronous copy's overlapped time still paid\n";
  if (!w.profile.empty())
    os << "profiled        kernels: " << w.profile.kernel_timing << "; copies: " << w.profile.copy_timing
       << "; load average " << w.profile.load_average_start << " -> " << w.profile.load_average_end << " on "
       << w.profile.online_cpus << " CPUs; wall iteration " << w.profile.dram_iteration_wall_ns / 1e6
       << " ms all-DRAM, " << w.profile.slow_iteration_wall_ns / 1e6 << " ms all-slow\n";
  std::map<std::string, std::pair<size_t, uint64_t>> kinds;
  size_t small = 0;
  for (const Tensor& t : w.tensors) {
    auto& k = kinds[TensorKindName(t.kind)];
    ++k.first;
    k.second += t.size_bytes;
    small += t.size_bytes < 4096;
  }
  os << "tensors by kind\n";
  for (const auto& [name, k] : kinds)
    os << "  " << name << std::string(std::max<size_t>(1, 16 - name.size()), ' ') << k.first << " tensors, "
       << FormatBytes(static_cast<double>(k.second)) << "\n";
  os << "under one page  " << small << " tensors\n";
  return os.str();
}

std::string DescribePlan(const PlacementPlan& plan) {
  size_t slow = std::count(plan.initial_tiers.begin(), plan.initial_tiers.end(), Tier::kSlow);
  size_t to_slow = 0;
  for (const Migration& m : plan.migrations) to_slow += m.to == Tier::kSlow;
  std::ostringstream os;
  os << "plan            " << plan.produced_by << "\n"
     << "hash            " << std::hex << plan.Hash() << "\n"
     << "for workload    " << plan.workload_signature << std::dec << "\n"
     << "DRAM limit      " << FormatBytes(static_cast<double>(plan.dram_limit_bytes)) << "\n"
     << "mode            " << MigrationModeName(plan.mode) << "\n"
     << "tensors         " << plan.initial_tiers.size() << " (" << plan.initial_tiers.size() - slow
     << " start in DRAM, " << slow << " in the slow tier)\n"
     << "migrations      " << plan.migrations.size() << " (" << to_slow << " to slow, "
     << plan.migrations.size() - to_slow << " to DRAM)\n";
  return os.str();
}

}  // namespace tensortier
