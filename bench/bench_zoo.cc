// Per zoo model at a small size: kernels, tensors and peak memory (DeepTM
// Table I style), iteration time all-DRAM against all-slow, and the
// profiler's overhead (a traced iteration against a plain one), measured in
// the same run. Prints a table and writes CSV to --csv FILE.
//
//   build/bench/bench_zoo [--models resnet18,vgg16] [--batch 2] [--image-size 32] [--csv out.csv]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "executor/executor.h"

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Zoo table: size, iteration time per tier, profiler overhead"};
  std::string models, csv_path, slow_tier = "emulated:optane-dcpmm";
  int64_t batch = 2, image = 32;
  app.add_option("--models", models, "Comma-separated zoo names (default: all)");
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--image-size", image, "Image size")->capture_default_str();
  app.add_option("--slow-tier", slow_tier, "Slow tier")->capture_default_str();
  app.add_option("--csv", csv_path, "Also write the table as CSV");
  CLI11_PARSE(app, argc, argv);

  std::ostringstream csv;
  csv << "model,kernels,tensors,peak_bytes,dram_ms,slow_ms,slow_over_dram,traced_ms,profiler_overhead,backend\n";
  std::printf("%-14s %8s %8s %10s %10s %10s %8s %10s %9s\n", "model", "kernels", "tensors", "peak_MiB", "dram_ms",
              "slow_ms", "slow/dram", "traced_ms", "overhead");
  for (const std::string& name : ZooModelNames()) {
    if (!models.empty() && ("," + models + ",").find("," + name + ",") == std::string::npos) continue;
    RunnerOptions o;
    o.model.name = name;
    o.model.batch_size = batch;
    o.model.image_size = image;
    o.slow_tier = slow_tier;
    o.threads = 1;
    RealWorkloadRunner runner(o);
    const ProfileReport& p = runner.Profile();
    const double overhead = p.capture_iteration_ns / p.iteration_dram_ns - 1.0;
    std::printf("%-14s %8zu %8zu %10.1f %10.1f %10.1f %8.2fx %10.1f %8.1f%%\n", name.c_str(),
                p.workload.num_kernels(), p.workload.num_tensors(), p.workload.peak_live_bytes() / 1048576.0,
                p.iteration_dram_ns / 1e6, p.iteration_slow_ns / 1e6, p.iteration_slow_ns / p.iteration_dram_ns,
                p.capture_iteration_ns / 1e6, 100 * overhead);
    std::fflush(stdout);
    csv << name << ',' << p.workload.num_kernels() << ',' << p.workload.num_tensors() << ','
        << p.workload.peak_live_bytes() << ',' << p.iteration_dram_ns / 1e6 << ',' << p.iteration_slow_ns / 1e6 << ','
        << p.iteration_slow_ns / p.iteration_dram_ns << ',' << p.capture_iteration_ns / 1e6 << ',' << overhead << ','
        << p.backend << '\n';
  }
  if (!csv_path.empty()) std::ofstream(csv_path) << csv.str();
  return 0;
}
