// Per zoo model at a small size: kernels, tensors and peak memory (DeepTM
// Table I style), iteration time all-DRAM against all-slow (the profile's
// medians), and what profiling costs against an unprofiled iteration:
// interleaved rounds of a plain task.Step(), an executor iteration (kernel
// boundaries and storages observed, as in every measured run) and a capture
// (access counting + building the graph). Prints a table and writes CSV to
// --csv FILE.
//
//   build/bench/bench_zoo [--models resnet18,vgg16] [--batch 2] [--image-size 32] [--rounds 5] [--csv out.csv]
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
  int rounds = 5;
  app.add_option("--models", models, "Comma-separated zoo names (default: all)");
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--image-size", image, "Image size")->capture_default_str();
  app.add_option("--slow-tier", slow_tier, "Slow tier")->capture_default_str();
  app.add_option("--rounds", rounds, "Interleaved rounds for the profiler overhead")->capture_default_str();
  app.add_option("--csv", csv_path, "Also write the table as CSV");
  CLI11_PARSE(app, argc, argv);

  std::ostringstream csv;
  csv << "model,kernels,tensors,peak_bytes,dram_ms,slow_ms,slow_over_dram,plain_ms,executor_ms,capture_ms,"
         "executor_overhead,capture_overhead,plain_cpu_ms,executor_cpu_overhead,capture_cpu_overhead,backend\n";
  std::printf("%-13s %7s %7s %8s %9s %9s %9s %9s %9s %9s %8s %8s %9s %8s %8s\n", "model", "kernels", "tensors",
              "peak_MiB", "dram_ms", "slow_ms", "slow/dram", "plain_ms", "exec_ms", "capt_ms", "exec_ovh", "capt_ovh",
              "plain_cpu", "exec_cpu", "capt_cpu");
  for (const std::string& name : ZooModelNames()) {
    if (!models.empty() && ("," + models + ",").find("," + name + ",") == std::string::npos) continue;
    RunnerOptions o = ZooRunnerOptions(name, batch, image, slow_tier);
    o.threads = 1;
    RealWorkloadRunner runner(o);
    const ProfileReport& p = runner.Profile();
    const ProfilerOverhead ov = runner.MeasureProfilerOverhead(rounds);
    const double exec_ovh = ov.executor_step_ns / ov.plain_step_ns - 1.0;
    const double capt_ovh = ov.capture_step_ns / ov.plain_step_ns - 1.0;
    const double exec_cpu = ov.executor_step_cpu_ns / ov.plain_step_cpu_ns - 1.0;
    const double capt_cpu = ov.capture_step_cpu_ns / ov.plain_step_cpu_ns - 1.0;
    std::printf("%-13s %7zu %7zu %8.1f %9.1f %9.1f %8.2fx %9.1f %9.1f %9.1f %7.1f%% %7.1f%% %9.1f %7.1f%% %7.1f%%\n",
                name.c_str(),
                p.workload.num_kernels(), p.workload.num_tensors(), p.workload.peak_live_bytes() / 1048576.0,
                p.iteration_dram_ns / 1e6, p.iteration_slow_ns / 1e6, p.iteration_slow_ns / p.iteration_dram_ns,
                ov.plain_step_ns / 1e6, ov.executor_step_ns / 1e6, ov.capture_step_ns / 1e6, 100 * exec_ovh,
                100 * capt_ovh, ov.plain_step_cpu_ns / 1e6, 100 * exec_cpu, 100 * capt_cpu);
    std::fflush(stdout);
    csv << name << ',' << p.workload.num_kernels() << ',' << p.workload.num_tensors() << ','
        << p.workload.peak_live_bytes() << ',' << p.iteration_dram_ns / 1e6 << ',' << p.iteration_slow_ns / 1e6 << ','
        << p.iteration_slow_ns / p.iteration_dram_ns << ',' << ov.plain_step_ns / 1e6 << ','
        << ov.executor_step_ns / 1e6 << ',' << ov.capture_step_ns / 1e6 << ',' << exec_ovh << ',' << capt_ovh << ','
        << ov.plain_step_cpu_ns / 1e6 << ',' << exec_cpu << ',' << capt_cpu << ',' << p.backend << '\n';
  }
  if (!csv_path.empty()) std::ofstream(csv_path) << csv.str();
  return 0;
}
