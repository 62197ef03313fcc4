// AutoTM's ILP as CBC sees it: for each workload, formulation and way of
// writing the DRAM limit (policies/autotm.h, MemoryRows), the program's size,
// the solve's time, status and gap, the plan on the cost model, and what the
// solve added to the resident memory of its (forked) process. Both ways state
// the same constraint, so at a proven optimum they give plans of the same
// cost; they differ in what CBC must hold and how fast its LPs go.
// docs/results/learning.md has the figures of one run.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "envs/cost_model.h"
#include "envs/plannable_workload.h"
#include "envs/workload_spec.h"
#include "policies/autotm.h"

namespace tensortier {
namespace {

struct Row {
  std::string workload, mode, formulation, memory_rows;
  int variables = 0, integer_variables = 0, constraints = 0;
  int64_t nonzeros = 0;
  std::string status;
  bool start_kept = false;
  double gap = 0, seconds = 0, percent_of_all_dram = 0;
  uint64_t peak_added_bytes = 0;
};

int Main(int argc, char** argv) {
  CLI::App app{"AutoTM's ILP: program size, solve time and solver memory, DRAM rows per kernel against a running sum"};
  std::vector<std::string> workloads = {"synthetic:resnet:12"};
  double dram_fraction = 0.2;
  double time_limit_seconds = 60;
  double mip_gap = 0.01;
  std::vector<std::string> modes = {"sync"};
  std::vector<std::string> memory_rows = {"per-kernel", "running-sum", "auto"};
  std::string csv_path;
  app.add_option("--workloads", workloads, "Workload specs (synthetic:SHAPE:LAYERS) or profiled .ttwl files");
  app.add_option("--dram-fraction", dram_fraction, "DRAM limit as a fraction of each workload's peak live bytes")
      ->check(CLI::Range(1e-6, 1.0));
  app.add_option("--time-limit", time_limit_seconds, "Seconds per solve")->check(CLI::PositiveNumber);
  app.add_option("--mip-gap", mip_gap, "Relative gap at which CBC stops")->check(CLI::Range(0.0, 1.0));
  app.add_option("--modes", modes, "sync (AutoTM-sync) and/or async (AutoTM-async: the asynchronous formulation)")
      ->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--memory-rows", memory_rows,
                 "per-kernel, running-sum and/or auto (the default: per-kernel up to a million nonzeros)")
      ->check(CLI::IsMember({"per-kernel", "running-sum", "auto"}));
  app.add_option("--csv", csv_path, "Also write the rows as CSV here");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  std::printf("| workload | mode | DRAM rows | variables (integer) | rows | nonzeros | status | gap | s | vs all-DRAM | solver memory |\n");
  std::printf("|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n");
  std::fflush(stdout);
  for (const std::string& spec : workloads) {
    Workload original;
    try {
      original = LoadWorkloadSpec(spec);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_ilp: workload %s: %s\n", spec.c_str(), e.what());
      return 2;
    }
    const PlannableWorkload plannable(original);
    const Workload& w = plannable.workload();
    const uint64_t limit = PlannableDramBytes(
        original, static_cast<uint64_t>(dram_fraction * static_cast<double>(original.peak_live_bytes())));
    const double all_dram_ns = EvaluatePlan(w, PlacementPlan::Uniform(w, Tier::kDram, 0)).total_ns;
    for (const std::string& mode : modes)
      for (const std::string& rows_name : memory_rows) {
        AutoTmIlpOptions o;
        o.mode = mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync;
        o.formulation = mode == "async" ? AutoTmFormulation::kAsynchronous : AutoTmFormulation::kSynchronous;
        o.memory_rows = rows_name == "per-kernel"    ? MemoryRows::kPerKernel
                        : rows_name == "running-sum" ? MemoryRows::kRunningSum
                                                     : MemoryRows::kAuto;
        o.dram_limit_bytes = limit;
        o.time_limit_seconds = time_limit_seconds;
        o.mip_gap = mip_gap;
        Row r;
        r.workload = w.name;
        r.mode = mode;
        r.formulation = AutoTmFormulationName(o.formulation);
        r.memory_rows = rows_name;
        try {
          const AutoTmIlpResult s = SolveAutoTmIlp(w, o);
          r.variables = s.variables;
          r.integer_variables = s.integer_variables;
          r.constraints = s.constraints;
          r.nonzeros = s.nonzeros;
          r.status = s.mip.status;
          r.start_kept = s.start_kept;
          if (o.memory_rows == MemoryRows::kAuto) r.memory_rows = std::string("auto: ") + MemoryRowsName(s.memory_rows);
          r.gap = s.mip.gap;
          r.seconds = s.mip.seconds;
          r.peak_added_bytes = s.mip.peak_added_bytes;
          const CostReport cost = EvaluatePlan(w, s.plan);
          r.percent_of_all_dram = cost.oom ? 0.0 : 100.0 * all_dram_ns / cost.total_ns;
        } catch (const std::exception& e) {
          r.status = std::string("failed: ") + e.what();
        }
        std::printf("| %s | %s | %s | %d (%d) | %d | %lld | %s%s | %.2f%% | %.1f | %.2f%% | %.0f MiB |\n",
                    r.workload.c_str(), r.mode.c_str(), r.memory_rows.c_str(), r.variables, r.integer_variables,
                    r.constraints, static_cast<long long>(r.nonzeros), r.status.c_str(),
                    r.start_kept ? " (its synchronous start kept)" : "", 100 * r.gap, r.seconds,
                    r.percent_of_all_dram, static_cast<double>(r.peak_added_bytes) / (1 << 20));
        std::fflush(stdout);
        rows.push_back(r);
      }
  }
  if (!csv_path.empty()) {
    std::ofstream out(csv_path);
    out << "workload,mode,formulation,memory_rows,variables,integer_variables,constraints,nonzeros,status,start_kept,gap,"
           "seconds,percent_of_all_dram,solver_peak_added_bytes\n";
    for (const Row& r : rows)
      out << r.workload << ',' << r.mode << ',' << r.formulation << ',' << r.memory_rows << ',' << r.variables << ','
          << r.integer_variables << ',' << r.constraints << ',' << r.nonzeros << ',' << r.status << ',' << r.start_kept << ',' << r.gap << ','
          << r.seconds << ',' << r.percent_of_all_dram << ',' << r.peak_added_bytes << '\n';
    if (!out) {
      std::fprintf(stderr, "bench_ilp: cannot write %s\n", csv_path.c_str());
      return 4;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) { return tensortier::Main(argc, argv); }
