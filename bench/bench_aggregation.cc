// Ablation of DeepTM's aggregation (docs/aggregation.md): the same model
// under a migration-heavy plan (executor/migration_plans.h) with each switch
// turned off in turn, measured round-robin in the same run so that the
// ratios against the all-on configuration share the machine's noise.
//
//   build/bench/bench_aggregation [--model resnet18] [--batch 2] [--image-size 32]
//       [--mode sync|async] [--rounds 5] [--csv out.csv]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/stats.h"
#include "executor/executor.h"
#include "executor/migration_plans.h"

namespace {

struct Config {
  std::string name;
  tensortier::AggregationOptions options;
  std::vector<double> iteration_ns, copy_ns, delay_ns, device_ns;
  tensortier::IterationCounters last;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Aggregation ablation: batching, adjoining, contiguous migration on and off"};
  std::string model = "resnet18", slow_tier = "emulated:optane-dcpmm", mode = "sync", csv_path;
  int64_t batch = 2, image = 32;
  int rounds = 5;
  uint32_t gap = 2;
  app.add_option("--model", model, "Zoo model")->capture_default_str();
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--image-size", image, "Image size")->capture_default_str();
  app.add_option("--slow-tier", slow_tier, "Slow tier")->capture_default_str();
  app.add_option("--mode", mode, "Migration mode")->check(CLI::IsMember({"sync", "async"}))->capture_default_str();
  app.add_option("--rounds", rounds, "Measured iterations per configuration (round-robin)")->capture_default_str();
  app.add_option("--min-gap", gap, "Evict a tensor when its next access is this many kernels away")
      ->capture_default_str();
  app.add_option("--csv", csv_path, "Also write the table as CSV");
  CLI11_PARSE(app, argc, argv);

  RunnerOptions o = ZooRunnerOptions(model, batch, image, slow_tier);
  o.threads = 1;
  RealWorkloadRunner runner(o);
  const Workload& w = runner.Profile().workload;
  const PlacementPlan plan = PrefetchEvictPlan(w, mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync, gap);

  std::vector<Config> configs(5);
  configs[0].name = "all-on";
  configs[1].name = "no-batching";
  configs[1].options.batch_small_tensors = false;
  configs[2].name = "no-adjoining";
  configs[2].options.adjoin_long_lived = false;
  configs[3].name = "no-contiguous";
  configs[3].options.contiguous_migration = false;
  configs[4].name = "all-off";
  configs[4].options = AggregationOptions::AllOff();

  std::printf("model %s batch %lld image %lld, %zu kernels, %zu tensors, plan %s: %zu migrations, %s, backend %s\n",
              model.c_str(), static_cast<long long>(batch), static_cast<long long>(image), w.num_kernels(),
              w.num_tensors(), plan.produced_by.c_str(), plan.migrations.size(), mode.c_str(),
              runner.backend().c_str());
  std::fflush(stdout);
  for (int round = 0; round < rounds; ++round) {
    // Rotated order: no configuration always runs first (or after the same one).
    for (size_t i = 0; i < configs.size(); ++i) {
      Config& c = configs[(i + static_cast<size_t>(round)) % configs.size()];
      runner.set_aggregation(c.options);
      ExecutionReport r = runner.Execute(plan, 1, 1);  // warm-up: regions and retained blocks as in steady state
      if (!r.ok) {
        std::fprintf(stderr, "%s failed: %s\n", c.name.c_str(), r.failure.c_str());
        return 1;
      }
      c.iteration_ns.push_back(r.iteration_ns[0]);
      c.copy_ns.push_back(r.counters[0].migration_copy_ns);
      c.delay_ns.push_back(r.counters[0].emulated_delay_ns);
      c.device_ns.push_back(r.counters[0].emulated_delay_ns + r.counters[0].migration_device_ns);
      c.last = r.counters[0];
    }
  }

  const Config& base = configs[0];
  const double base_ms = Median(base.iteration_ns) / 1e6;
  std::ostringstream csv;
  csv << "config,iteration_ms,iteration_ratio,copy_ms,copy_ratio,copies,copies_ratio,copy_bytes,bytes_ratio,"
         "tensors_moved,grouped,dram_pages_peak,slow_pages_peak,pages_ratio,slow_streams,streams_ratio,"
         "emulated_delay_ms,device_model_ms,device_ratio,region_reserved_bytes\n";
  std::printf("%-14s %9s %6s %8s %6s %7s %6s %11s %6s %7s %7s %8s %6s %8s %6s %9s %9s %6s\n", "config", "iter_ms",
              "ratio", "copy_ms", "ratio", "copies", "ratio", "copy_bytes", "ratio", "moved", "grouped", "pages", "ratio",
              "streams", "ratio", "delay_ms", "device_ms", "ratio");
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const IterationCounters& bc = base.last;
  const double base_pages = static_cast<double>(bc.dram_pages_peak + bc.slow_pages_peak);
  for (const Config& c : configs) {
    const IterationCounters& k = c.last;
    const double ms = Median(c.iteration_ns) / 1e6;
    const double copy_ms = Median(c.copy_ns) / 1e6;
    const double pages = static_cast<double>(k.dram_pages_peak + k.slow_pages_peak);
    const uint64_t moved = k.migrations_to_slow + k.migrations_to_dram;
    std::printf("%-14s %9.1f %6.2f %8.1f %6.2f %7llu %6.2f %11llu %6.2f %7llu %7llu %8.0f %6.2f %8llu %6.2f %9.1f %9.1f %6.2f\n",
                c.name.c_str(), ms, ratio(ms, base_ms), copy_ms, ratio(copy_ms, Median(base.copy_ns) / 1e6),
                static_cast<unsigned long long>(k.migration_copies),
                ratio(static_cast<double>(k.migration_copies), static_cast<double>(bc.migration_copies)),
                static_cast<unsigned long long>(k.migration_copy_bytes),
                ratio(static_cast<double>(k.migration_copy_bytes), static_cast<double>(bc.migration_copy_bytes)),
                static_cast<unsigned long long>(moved), static_cast<unsigned long long>(k.grouped_migrations), pages,
                ratio(pages, base_pages), static_cast<unsigned long long>(k.slow_access_streams),
                ratio(static_cast<double>(k.slow_access_streams), static_cast<double>(bc.slow_access_streams)),
                Median(c.delay_ns) / 1e6, Median(c.device_ns) / 1e6,
                ratio(Median(c.device_ns), Median(base.device_ns)));
    csv << c.name << ',' << ms << ',' << ratio(ms, base_ms) << ',' << copy_ms << ','
        << ratio(copy_ms, Median(base.copy_ns) / 1e6) << ',' << k.migration_copies << ','
        << ratio(static_cast<double>(k.migration_copies), static_cast<double>(bc.migration_copies)) << ','
        << k.migration_copy_bytes << ','
        << ratio(static_cast<double>(k.migration_copy_bytes), static_cast<double>(bc.migration_copy_bytes)) << ','
        << moved << ',' << k.grouped_migrations << ',' << k.dram_pages_peak << ',' << k.slow_pages_peak << ','
        << ratio(pages, base_pages) << ',' << k.slow_access_streams << ','
        << ratio(static_cast<double>(k.slow_access_streams), static_cast<double>(bc.slow_access_streams)) << ','
        << Median(c.delay_ns) / 1e6 << ',' << Median(c.device_ns) / 1e6 << ','
        << ratio(Median(c.device_ns), Median(base.device_ns)) << ',' << k.dram_region_reserved_bytes + k.slow_region_reserved_bytes << '\n';
  }
  std::printf(
      "(medians of %d rounds, configurations rotated per round; ratios against all-on, measured in this run;\n"
      " copy_ms: time spent copying; device_ms: what the device model charges (kernel delays + copy pace),\n"
      " free of the machine's noise)\n",
      rounds);
  if (!csv_path.empty()) std::ofstream(csv_path) << csv.str();
  return 0;
}
