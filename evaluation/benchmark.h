// `tensortier bench`: every chosen policy on the same workload and DRAM
// budgets, scored by the cost model and, for workloads profiled from a real
// model, measured on real training iterations on this host's tiers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/plan_search.h"
#include "envs/workload.h"

namespace tensortier {

struct BenchmarkOptions {
  // Baseline names (policies/policy.h), "dqn" and "sac" (the agent of a
  // checkpoint, rolled out greedily at each budget), "dqn+search" and
  // "sac+search" (that greedy plan improved by the plan-time search the
  // network guides, envs/plan_search.h; its time is decision time) and
  // "learned" (every agent the checkpoints give a workload, greedy and searched).
  std::vector<std::string> policies = {"all-slow", "first-touch", "sentinel", "autotm-sync", "deeptm-heuristic",
                                       "ca-lm", "learned"};
  std::vector<double> dram_fractions = {1.0, 0.6, 0.4, 0.2, 0.11};
  MigrationMode mode = MigrationMode::kSync;
  // Learner checkpoints for the learned policies "dqn" and "sac", as
  // "FILE" (every workload) or "WORKLOAD_NAME=FILE" (that workload: an agent
  // is trained per model, as DeepTM does). A checkpoint's kind (DQN or SAC)
  // comes from the file.
  std::vector<std::string> checkpoints;
  bool measure = true;                // real iterations when the workload names a model
  std::string slow_tier = "auto";
  int warmup_iterations = 1;
  int repeats = 3;
  double solver_time_limit_seconds = 60;
  uint64_t seed = 1;
  PlanSearchOptions search{64, 16, 120};  // of the "+search" policies
};

struct BenchmarkRow {
  std::string workload;
  std::string policy;
  double dram_fraction = 0;
  uint64_t dram_limit_bytes = 0;
  double decision_seconds = 0;        // the policy's decision (solve) time
  double predicted_ns = 0;            // cost model
  double predicted_relative = 0;      // cost-model all-DRAM time / predicted_ns
  bool measured = false;
  std::string backend;                // what measured_ns comes from ("cost-model" when not measured)
  double measured_ns = 0;             // median of the repeats
  double measured_spread = 0;         // (max - min) / median
  double measured_relative = 0;       // measured all-DRAM time / measured_ns
  double prediction_error = 0;        // (predicted - measured) / measured, on the cost model's scale
  uint64_t bytes_migrated = 0;
  uint64_t dram_peak_bytes = 0;
  // Where the time goes, predicted against measured (medians of the repeats),
  // so that a prediction error can be traced to kernels or to copies.
  double predicted_exec_ns = 0;       // C_e: kernels incl. slow-tier penalties
  double predicted_migration_ns = 0;  // C_m: exposed copy time
  double measured_emulated_delay_ns = 0;     // slow-tier access time added to kernels (emulated tiers)
  double measured_exposed_migration_ns = 0;  // copies and waits for copies on the training thread
  uint64_t measured_bytes_migrated = 0;      // per iteration, persistent tensors' return included
  // Of measured_bytes_migrated: what the executor copied before the
  // iteration to lay persistent tensors out where the plan starts them
  // (returns, and re-laying a contiguous region a migration broke up). The
  // cost model prices the returns only, so on plans that migrate adjoined
  // persistent tensors this exceeds them (open, docs/results/executor.md).
  uint64_t measured_setup_bytes = 0;
  uint64_t migrations_refused = 0;           // per iteration: destination full
  uint64_t migrations_skipped = 0;           // per iteration: tensor not live or already there
  uint32_t oom_events = 0;
  double memory_cost_dollars = 0;     // DeepTM's prices: DRAM $23.81/GB, slow $7.85/GB
  std::string note;                   // why a row has no number (policy failed, ...)
};

using BenchmarkProgress = std::function<void(const BenchmarkRow&)>;

std::vector<BenchmarkRow> RunBenchmark(const Workload& w, const BenchmarkOptions& options,
                                       const BenchmarkProgress& progress = {});

// bench.csv, bench.json, bench.md (one table per workload: relative
// performance by policy and DRAM fraction, plus the least fraction that
// reaches 90% of all-DRAM) and one SVG plot per workload.
void WriteBenchmarkResults(const std::string& dir, const std::vector<BenchmarkRow>& rows);
std::string BenchmarkMarkdown(const std::vector<BenchmarkRow>& rows);
// The SVG plots alone, DIR/bench-WORKLOAD.svg (bench/bench_charts redraws
// them from a bench.json).
void WriteBenchmarkCharts(const std::string& dir, const std::vector<BenchmarkRow>& rows);

}  // namespace tensortier
