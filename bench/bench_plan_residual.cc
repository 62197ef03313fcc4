// Where a measured plan's time goes beyond the cost model (issue 16, item 4;
// docs/results/executor.md). For each plan on a zoo model: the cost model's
// prediction, and per measured iteration (medians over rotated rounds) the
// undisturbed time, the emulated device's waits, the exposed copy time and
// the residual = undisturbed - (all-DRAM's undisturbed + waits + exposed):
// what the executor costs that the cost model does not price. Beside it the
// counters that explain a residual: copies done inline by the training
// thread, write stalls, minor page faults, allocator time.
//
//   build/bench/bench_plan_residual [--model mobilenet_v2 | --torchscript FILE.pt] [--batch 2] [--image-size 32]
//       [--mode async] [--dram-fraction 0.2] [--policies first-touch,sentinel,autotm-sync]
//       [--rounds 5] [--repeats 3] [--csv out.csv]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "envs/cost_model.h"
#include "common/stats.h"
#include "executor/executor.h"
#include "policies/policy.h"

namespace {

struct Row {
  std::string name;
  tensortier::PlacementPlan plan;
  tensortier::CostReport predicted;
  std::vector<double> undisturbed, emulated, exposed, inline_copies, stalls, faults, allocator, copies;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Per plan: measured time beyond the cost model, and the counters that explain it"};
  std::string model = "mobilenet_v2", torchscript, mode = "async", slow_tier = "emulated:optane-dcpmm", csv_path;
  std::string policies = "first-touch,sentinel,autotm-sync";
  int64_t batch = 2, image = 32;
  double fraction = 0.2;
  int rounds = 5, repeats = 3;
  app.add_option("--model", model, "Zoo model")->capture_default_str();
  app.add_option("--torchscript", torchscript, "A TorchScript module (forward(x) on [B, 3, S, S]) in place of --model")
      ->check(CLI::ExistingFile);
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--image-size", image, "Image size")->capture_default_str();
  app.add_option("--slow-tier", slow_tier, "Slow tier")->capture_default_str();
  app.add_option("--mode", mode, "Migration mode")->check(CLI::IsMember({"sync", "async"}))->capture_default_str();
  app.add_option("--dram-fraction", fraction, "DRAM limit as a fraction of the peak live bytes")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  app.add_option("--policies", policies, "Comma-separated policies (all-DRAM is always measured)")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "Rotated rounds")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "Measured iterations per plan and round")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--csv", csv_path, "Also write the table as CSV");
  CLI11_PARSE(app, argc, argv);

  if (!torchscript.empty()) model = "torchscript";
  RunnerOptions o = ZooRunnerOptions(model, batch, image, slow_tier);
  o.model.torchscript_path = torchscript;
  o.threads = 1;  // the undisturbed clock holds all of the work only with one intra-op thread
  RealWorkloadRunner runner(o);
  const Workload& w = runner.Profile().workload;
  const uint64_t limit = static_cast<uint64_t>(fraction * static_cast<double>(w.peak_live_bytes()));
  PolicyContext ctx;
  ctx.dram_limit_bytes = limit;
  ctx.mode = mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync;

  std::vector<Row> rows;
  rows.push_back({"all-dram", PlacementPlan::Uniform(w, Tier::kDram, 0), {}, {}, {}, {}, {}, {}, {}, {}, {}});
  std::stringstream names(policies);
  for (std::string name; std::getline(names, name, ',');) {
    Row r;
    r.name = name;
    r.plan = MakePolicy(name)->Plan(w, ctx);
    rows.push_back(std::move(r));
  }
  for (Row& r : rows) r.predicted = EvaluatePlan(w, r.plan);
  std::printf("model %s batch %lld image %lld, %zu kernels, %s, DRAM %.2f x peak, backend %s, %d rounds x %d\n",
              model.c_str(), static_cast<long long>(batch), static_cast<long long>(image), w.num_kernels(),
              mode.c_str(), fraction, runner.backend().c_str(), rounds, repeats);
  std::fflush(stdout);
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < rows.size(); ++i) {
      Row& r = rows[(i + static_cast<size_t>(round)) % rows.size()];
      const ExecutionReport e = runner.Execute(r.plan, 1, repeats);
      if (!e.ok) {
        std::fprintf(stderr, "%s: %s\n", r.name.c_str(), e.failure.c_str());
        return 1;
      }
      for (const IterationCounters& c : e.counters) {
        r.undisturbed.push_back(c.undisturbed_iteration_ns);
        r.emulated.push_back(c.emulated_delay_ns);
        r.exposed.push_back(c.exposed_migration_ns);
        r.inline_copies.push_back(static_cast<double>(c.async_copies_inline));
        r.stalls.push_back(static_cast<double>(c.async_write_stalls));
        r.faults.push_back(static_cast<double>(c.minor_faults));
        r.allocator.push_back(static_cast<double>(c.allocator_time_ns));
        r.copies.push_back(static_cast<double>(c.migration_copies));
      }
    }
    std::fprintf(stderr, "round %d of %d\n", round + 1, rounds);
  }

  const double dram_ns = Median(rows[0].undisturbed);
  std::ostringstream csv;
  csv << "plan,predicted_ms,predicted_exec_ms,predicted_migration_ms,undisturbed_ms,emulated_ms,exposed_ms,"
         "residual_ms,copies,inline_copies,write_stalls,minor_faults,allocator_ms\n";
  std::printf("%-13s %8s %8s %8s | %8s %8s %8s %8s | %6s %6s %6s %7s %7s\n", "plan", "pred_ms", "p_exec", "p_mig",
              "undist", "emulated", "exposed", "residual", "copies", "inline", "stalls", "faults", "alloc");
  for (const Row& r : rows) {
    const double u = Median(r.undisturbed), em = Median(r.emulated), ex = Median(r.exposed);
    const double residual = u - (dram_ns + em + ex);
    std::printf("%-13s %8.1f %8.1f %8.1f | %8.1f %8.1f %8.1f %8.1f | %6.0f %6.0f %6.0f %7.0f %7.2f\n", r.name.c_str(),
                r.predicted.total_ns / 1e6, r.predicted.exec_ns / 1e6, r.predicted.migration_ns / 1e6, u / 1e6,
                em / 1e6, ex / 1e6, residual / 1e6, Median(r.copies), Median(r.inline_copies), Median(r.stalls),
                Median(r.faults), Median(r.allocator) / 1e6);
    csv << r.name << ',' << r.predicted.total_ns / 1e6 << ',' << r.predicted.exec_ns / 1e6 << ','
        << r.predicted.migration_ns / 1e6 << ',' << u / 1e6 << ',' << em / 1e6 << ',' << ex / 1e6 << ','
        << residual / 1e6 << ',' << Median(r.copies) << ',' << Median(r.inline_copies) << ',' << Median(r.stalls)
        << ',' << Median(r.faults) << ',' << Median(r.allocator) / 1e6 << '\n';
  }
  if (!csv_path.empty()) std::ofstream(csv_path) << csv.str();
  return 0;
}
