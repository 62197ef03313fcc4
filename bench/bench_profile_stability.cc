// Do profiles move with the host's load? Profiles one model in pairs: once
// on the host as it is, once beside busy loops this bench starts itself
// (`sh -c 'while :; do :; done'`, one per --busy, stopped by their pids).
// Prints, per profile, what every consumer of a workload reads (the
// all-DRAM and all-slow totals, the copy prices) with the method and the load
// average the workload file records, and the share of kernel timing samples
// the thread was switched out in; then per quantity the largest difference
// between a busy profile and the quiet one of its pair, the busy profiles'
// median against the quiet ones', and the quiet ones among themselves. The wall-clock medians of whole
// iterations (what profiles used before, issue 16) are shown beside them.
// Prints; asserts nothing (the numbers depend on the machine).
//
//   build/bench/bench_profile_stability [--model resnet18] [--batch 16] [--image-size 128]
//       [--pairs 2] [--busy 1] [--rounds 5] [--copy-rounds 15] [--csv out.csv]
#include <CLI/CLI.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/stats.h"
#include "executor/copy_calibration.h"
#include "executor/executor.h"

extern char** environ;

namespace tensortier {
namespace {

class BusyLoops {
 public:
  explicit BusyLoops(int n) {
    for (int i = 0; i < n; ++i) {
      const char* argv[] = {"/bin/sh", "-c", "while :; do :; done", nullptr};
      pid_t pid = 0;
      if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0)
        throw std::runtime_error("cannot start a busy loop");
      pids_.push_back(pid);
    }
  }
  ~BusyLoops() {
    for (pid_t pid : pids_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }

 private:
  std::vector<pid_t> pids_;
};

struct Row {
  bool busy = false;
  double dram_ms = 0, slow_ms = 0;            // the workload's kernel sums
  double wall_dram_ms = 0, wall_slow_ms = 0;  // medians of whole iterations
  double to_slow_1m_us = 0, to_slow_16m_us = 0, to_dram_1m_us = 0, to_dram_16m_us = 0;
  double load_start = 0, load_end = 0;
  double switched = 0;  // fraction of kernel timing samples the thread was switched out in
  std::string method;
};

double CopyUs(double bytes_per_second, double setup_ns, double bytes) {
  return CopyCost{bytes_per_second, setup_ns}.Ns(static_cast<uint64_t>(bytes)) / 1e3;
}

Row Profile(const RunnerOptions& o, bool busy, int busy_loops) {
  std::unique_ptr<BusyLoops> loops;
  if (busy) loops = std::make_unique<BusyLoops>(busy_loops);
  RealWorkloadRunner runner(o);
  const ProfileReport& p = runner.Profile();
  const Workload& w = p.workload;
  Row r;
  r.busy = busy;
  r.switched = p.switched_kernel_fraction;
  r.dram_ms = w.total_dram_time_ns() / 1e6;
  r.slow_ms = w.total_slow_time_ns() / 1e6;
  r.wall_dram_ms = w.profile.dram_iteration_wall_ns / 1e6;
  r.wall_slow_ms = w.profile.slow_iteration_wall_ns / 1e6;
  const DeviceModel& d = w.device;
  r.to_slow_1m_us = CopyUs(d.dram_to_slow_bytes_per_second, d.dram_to_slow_copy_setup_ns, 1 << 20);
  r.to_slow_16m_us = CopyUs(d.dram_to_slow_bytes_per_second, d.dram_to_slow_copy_setup_ns, 16 << 20);
  r.to_dram_1m_us = CopyUs(d.slow_to_dram_bytes_per_second, d.slow_to_dram_copy_setup_ns, 1 << 20);
  r.to_dram_16m_us = CopyUs(d.slow_to_dram_bytes_per_second, d.slow_to_dram_copy_setup_ns, 16 << 20);
  r.load_start = w.profile.load_average_start;
  r.load_end = w.profile.load_average_end;
  r.method = w.profile.kernel_timing + "; copies " + w.profile.copy_timing;
  return r;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Profiles of one model on a quiet host and beside busy loops, side by side"};
  RunnerOptions o;
  o.model.name = "resnet18";
  o.model.batch_size = 16;
  o.model.image_size = 128;
  o.slow_tier = "emulated:optane-dcpmm";
  o.threads = 1;  // as `tensortier profile` and `bench` run it
  int pairs = 2, busy_loops = 1;
  std::string csv_path;
  app.add_option("--model", o.model.name, "Zoo model")->capture_default_str();
  app.add_option("--batch", o.model.batch_size, "Batch size")->capture_default_str();
  app.add_option("--image-size", o.model.image_size, "Image size")->capture_default_str();
  app.add_option("--slow-tier", o.slow_tier, "Slow tier")->capture_default_str();
  app.add_option("--threads", o.threads, "LibTorch intra-op threads (1: thread CPU time; else wall)")
      ->capture_default_str();
  app.add_option("--pairs", pairs, "Quiet/busy profile pairs")->capture_default_str();
  app.add_option("--busy", busy_loops, "Busy loops beside the busy profiles")->capture_default_str();
  app.add_option("--rounds", o.profile_timing_iterations, "Timing rounds per profile")->capture_default_str();
  app.add_option("--copy-rounds", o.copy_calibration_rounds, "Copy calibration rounds")->capture_default_str();
  app.add_option("--csv", csv_path, "Also write the profiles as CSV");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  for (int i = 0; i < pairs; ++i) {
    rows.push_back(Profile(o, false, busy_loops));
    rows.push_back(Profile(o, true, busy_loops));
  }
  std::printf("%s batch %lld, %lldpx, %s; method: %s\n\n", o.model.name.c_str(),
              static_cast<long long>(o.model.batch_size), static_cast<long long>(o.model.image_size),
              o.slow_tier.c_str(), rows.front().method.c_str());
  std::printf("%-6s %10s %10s %11s %11s %12s %12s %12s %12s %11s %9s\n", "load", "dram_ms", "slow_ms", "wall_dram",
              "wall_slow", "toslow1M_us", "toslow16M_us", "todram1M_us", "todram16M_us", "loadavg", "switched");
  std::ostringstream csv;
  csv << "busy,dram_ms,slow_ms,wall_dram_ms,wall_slow_ms,to_slow_1m_us,to_slow_16m_us,to_dram_1m_us,to_dram_16m_us,"
         "load_start,load_end,switched_fraction\n";
  for (const Row& r : rows) {
    std::printf("%-6s %10.1f %10.1f %11.1f %11.1f %12.1f %12.1f %12.1f %12.1f %5.2f-%5.2f %8.1f%%\n",
                r.busy ? "busy" : "quiet", r.dram_ms, r.slow_ms, r.wall_dram_ms, r.wall_slow_ms, r.to_slow_1m_us,
                r.to_slow_16m_us, r.to_dram_1m_us, r.to_dram_16m_us, r.load_start, r.load_end, 100 * r.switched);
    csv << (r.busy ? 1 : 0) << ',' << r.dram_ms << ',' << r.slow_ms << ',' << r.wall_dram_ms << ','
        << r.wall_slow_ms << ',' << r.to_slow_1m_us << ',' << r.to_slow_16m_us << ',' << r.to_dram_1m_us << ','
        << r.to_dram_16m_us << ',' << r.load_start << ',' << r.load_end << ',' << r.switched << '\n';
  }
  // Per pair, the busy profile against the quiet one taken just before it;
  // the quiet profiles among themselves show what the host's other users do
  // to profiles without any busy loop of ours.
  struct Quantity {
    const char* name;
    double Row::*field;
  };
  const Quantity quantities[] = {
      {"all-DRAM total", &Row::dram_ms},          {"all-slow total", &Row::slow_ms},
      {"copy to slow, 1 MiB", &Row::to_slow_1m_us}, {"copy to slow, 16 MiB", &Row::to_slow_16m_us},
      {"copy to DRAM, 1 MiB", &Row::to_dram_1m_us}, {"copy to DRAM, 16 MiB", &Row::to_dram_16m_us},
      {"wall all-DRAM (before)", &Row::wall_dram_ms}, {"wall all-slow (before)", &Row::wall_slow_ms},
  };
  std::printf("\n%-24s %16s %8s %16s %18s\n", "", "busy vs quiet,", "", "busy median vs", "quiet vs quiet,");
  std::printf("%-24s %16s %8s %16s %18s\n", "quantity", "worst pair", "<= 5%", "quiet median", "worst pair");
  for (const Quantity& q : quantities) {
    double worst_pair = 0, worst_quiet = 0;
    std::vector<double> busy, quiet;
    for (size_t i = 0; i + 1 < rows.size(); i += 2)
      worst_pair = std::max(worst_pair, std::fabs(rows[i + 1].*q.field / (rows[i].*q.field) - 1));
    for (const Row& r : rows) (r.busy ? busy : quiet).push_back(r.*q.field);
    for (double a : quiet)
      for (double b : quiet) worst_quiet = std::max(worst_quiet, std::fabs(a / b - 1));
    const double medians = Median(busy) / Median(quiet) - 1;
    std::printf("%-24s %15.1f%% %8s %+15.1f%% %17.1f%%\n", q.name, 100 * worst_pair, worst_pair <= 0.05 ? "yes" : "no",
                100 * medians, 100 * worst_quiet);
  }
  if (!csv_path.empty()) std::ofstream(csv_path) << csv.str();
  return 0;
}
