// `tensortier bench`: every chosen policy on the same workload and DRAM
// budgets, scored by the cost model and, for workloads profiled from a real
// model, measured on real training iterations on this host's tiers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/plan_search.h"
#include "envs/workload.h"
#include "policies/guided_ilp.h"

namespace tensortier {

constexpr const char* kLookupPolicyPrefix = "lookup:";

struct BenchmarkOptions {
  // Baseline names (policies/policy.h), "dqn" and "sac" (the agent of a
  // checkpoint, rolled out greedily at each budget), "dqn+search" and
  // "sac+search" (that greedy plan improved by the plan-time search the
  // network guides, envs/plan_search.h; its time is decision time),
  // "dqn+ilp" and "sac+ilp" (AutoTM's ILP with the surest share of the
  // network's decisions fixed and its plan as the start,
  // policies/guided_ilp.h; the solve is decision time) and
  // "learned" (every agent the checkpoints give a workload, greedy and searched)
  // "dqn+ilp+measured" and "sac+ilp+measured" (that ILP's candidate plans,
  // GuidedIlpResult::candidates, measured on this host's real iterations at
  // plan time, `plan_time_rounds` rounds, the fastest kept; the measuring is
  // decision time, and the row's measured figure comes from the bench's own
  // rounds after it), "heat+ilp+measured" (the same with heat order in place of
  // a network: what the network adds to it),
  // and "lookup:FILE" (an exported lookup file applied as a host applies it,
  // hostrt/apply/plan_from_lookup.h: its plan table for the workload and budget when it has
  // one, else its generalised lookup rolled out over the workload's MDP; the
  // row's policy is "lookup:FILE (plan table)" or "lookup:FILE (generalised)").
  // RunBenchmark throws lookup::LookupError (hostrt/tensortier_lookup.hpp)
  // for a lookup file that is refused, or whose generalised lookup has
  // another build's observation size and that has no plan for the workload.
  std::vector<std::string> policies = {"all-slow", "first-touch", "sentinel", "autotm-sync", "deeptm-heuristic",
                                       "ca-lm", "learned"};
  std::vector<double> dram_fractions = {1.0, 0.6, 0.4, 0.2, 0.11};
  MigrationMode mode = MigrationMode::kSync;
  // Learner checkpoints for the learned policies "dqn" and "sac", as
  // "FILE" (every workload) or "WORKLOAD_NAME=FILE" (that workload: an agent
  // is trained per model, as DeepTM does). A checkpoint's kind (DQN or SAC)
  // comes from the file.
  std::vector<std::string> checkpoints;
  // The networks of the policies "dqn+portfolio" (the fastest of their
  // greedy plans on the workload and budget, by the cost model: a choice at
  // plan time whose episodes are decision time) and "dqn+portfolio+search"
  // (the plan-time search guided by the chosen network, from its episode):
  // agent checkpoint files, or directories of them (pretrain's
  // checkpoints/portfolio), agents/policy_portfolio.h.
  std::vector<std::string> portfolio;
  // "dqn+portfolio+search" searches from this many members' greedy plans in
  // turn, the fastest first, each guided by its own network, while the
  // search's time limit (search.max_seconds, for all of them) lasts, and
  // keeps the fastest result (8: every member of a default portfolio; 1: the
  // chosen member's alone).
  int portfolio_search_starts = 8;
  bool measure = true;                // real iterations when the workload names a model
  std::string slow_tier = "auto";
  // Measured runs come in rounds: each runs all-slow and every plan once
  // (warm-up, then `repeats` measured iterations), in an order that rotates
  // from round to round, each between two all-DRAM runs; a plan's figure is
  // the median of its per-round ratios to the mean of the all-DRAM runs
  // beside it (the host's speed drifts within a round).
  int rounds = 5;
  // Which time of an iteration the figures use: "undisturbed" (the training
  // thread's CPU time with the emulated device's waits and copies as meant,
  // IterationCounters::undisturbed_iteration_ns; other processes on the host
  // move it less than the wall clock, but still stretch its computing part:
  // caches refilled after each switch), "normalised" (the undisturbed time
  // with its computing part brought back to the profile's speed, by how much
  // slower the all-DRAM runs beside it were than the cost model's all-DRAM time:
  // NormalisedRoundNs; all-DRAM then reads the cost model's time in every
  // round) or "wall" (the wall clock, which load stretches in the computing
  // part only, so ratios move with it).
  // Default: normalised. Beside a busy loop on this project's 2-core machine,
  // default-scale MobileNetV2, async: quiet-to-busy shifts of -0.2 to +2.9
  // points against +1.5 to +8.4 undisturbed (docs/results/executor.md).
  std::string clock = "normalised";
  int warmup_iterations = 1;
  int repeats = 1;  // per plan and round
  double solver_time_limit_seconds = 60;
  // Relative gap at which every ILP (AutoTM's, the guided one's) stops:
  // AutoTM ran Gurobi to 1%. 0: on to a proven optimum or the time limit.
  double mip_gap = PolicyContext{}.mip_gap;
  // "+ilp+measured" policies: rounds of their candidate plans on real
  // iterations at plan time (each with all-DRAM, `repeats` iterations a plan).
  int plan_time_rounds = 5;
  uint64_t seed = 1;
  PlanSearchOptions search = PlanTimeSearch();  // of the "+search" policies
  GuidedIlpOptions guided_ilp;            // of the "+ilp" policies (its time limit: solver_time_limit_seconds)
  // The MDP a checkpoint's network and a generalised lookup are rolled out
  // in: the scope they were trained in (a network rolled out in another
  // scope is asked other questions).
  DecisionScope scope = EnvConfig{}.scope;
};

struct BenchmarkRow {
  std::string workload;
  std::string policy;
  double dram_fraction = 0;
  uint64_t dram_limit_bytes = 0;
  double decision_seconds = 0;        // the policy's decision (solve) time
  // What made a learned row's plan: "dqn+ilp", or "dqn+ilp+measured
  // (synchronous)" naming the candidate the plan-time measurement chose.
  std::string plan_source;
  double predicted_ns = 0;            // cost model
  double predicted_relative = 0;      // cost-model all-DRAM time / predicted_ns
  bool measured = false;
  std::string backend;                // what measured_ns comes from ("cost-model" when not measured)
  std::string measured_clock;         // BenchmarkOptions::clock of the measured_* times
  double measured_ns = 0;             // median over the rounds (each the median of its repeats)
  double measured_wall_ns = 0;        // the same by the wall clock
  double measured_spread = 0;         // (max - min) / median over the rounds
  double measured_relative = 0;       // median over the rounds of the all-DRAM time beside the plan's / the plan's
  uint32_t measured_rounds = 0;
  // A confidence interval of measured_relative (the median), and its
  // confidence: 93.75% with 5 rounds (MedianConfidenceInterval, common/stats.h).
  double measured_relative_low = 0, measured_relative_high = 0, measured_relative_confidence = 0;
  double measured_all_slow_relative = 0;  // the rounds' all-slow reference, as measured_relative
  // The rounds' all-DRAM and all-slow times themselves (medians, the clock of measured_ns).
  double measured_all_dram_ns = 0, measured_all_slow_ns = 0;
  // measured_relative > 1: no plan that uses the slow tier beats all-DRAM,
  // so this is noise or a measurement problem (also said in `note`).
  bool faster_than_all_dram = false;
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
  // Solver-based baselines (AutoTM, heat+ilp): how CBC ended ("optimal",
  // "gap", "time-limit", ...) and the relative gap it proved; empty otherwise.
  std::string solver_status;
  double solver_gap = 0;
  // AutoTM's rows: all-DRAM's time over the solver's proven bound, the most
  // any plan of its formulation can reach on the cost model (0: unknown, or
  // the synchronous formulation in async mode, whose objective is not the
  // cost model's there).
  double solver_bound_relative = 0;
};

using BenchmarkProgress = std::function<void(const BenchmarkRow&)>;

// A plan's measured iteration times against all-DRAM's, round by round
// (both vectors one entry per round): measured_relative and its interval.
struct RoundComparison {
  double relative = 0, low = 0, high = 0, confidence = 0;
  bool faster_than_all_dram = false;
};
RoundComparison CompareToAllDram(const std::vector<double>& plan_ns, const std::vector<double>& all_dram_ns);

// The normalised clock: a round's time with its computing part (the time
// less `non_compute_ns`, the emulated device's waits and the copies) scaled
// by `reference_ns` / `all_dram_ns`, the speed the profile measured over the
// speed of the all-DRAM runs beside it. Other processes slow the training
// thread's computing (on this project's 2-core machine a busy loop beside a
// bench stretched the all-DRAM iteration by 12%) and not the emulated
// device's time, so without it a plan that waits for the slow tier reads up
// to 6 points faster against all-DRAM beside a busy process than on a quiet
// host (docs/results/executor.md).
double NormalisedRoundNs(double undisturbed_ns, double non_compute_ns, double all_dram_ns, double reference_ns);

std::vector<BenchmarkRow> RunBenchmark(const Workload& w, const BenchmarkOptions& options,
                                       const BenchmarkProgress& progress = {});

// Given plans (named), measured as RunBenchmark measures a budget's plans:
// `options.rounds` rounds of all-slow and each plan between all-DRAM runs, on
// options.slow_tier with its clock, warm-up and repeats (options.policies and
// dram_fractions are not read). One row per plan, predicted and measured
// columns filled; a plan whose iterations failed has a note instead. Throws
// when the workload names no model, this host's profile of the model
// differs from `w`, or a reference run fails.
std::vector<BenchmarkRow> MeasurePlans(const Workload& w, const BenchmarkOptions& options,
                                       const std::vector<std::pair<std::string, PlacementPlan>>& plans);

// bench.csv, bench.json, bench.md (one table per workload: relative
// performance by policy and DRAM fraction, plus the least fraction that
// reaches 90% of all-DRAM) and one SVG plot per workload.
void WriteBenchmarkResults(const std::string& dir, const std::vector<BenchmarkRow>& rows);
std::string BenchmarkMarkdown(const std::vector<BenchmarkRow>& rows);
// The SVG plots alone, DIR/bench-WORKLOAD.svg (bench/bench_charts redraws
// them from a bench.json).
void WriteBenchmarkCharts(const std::string& dir, const std::vector<BenchmarkRow>& rows);

}  // namespace tensortier
