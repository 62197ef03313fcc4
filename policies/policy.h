// One interface for every baseline placement policy: a policy turns a
// workload and a DRAM limit into a PlacementPlan. The learned agents and the
// benchmark compare against these through MakePolicy(name).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

struct PolicyContext {
  uint64_t dram_limit_bytes = 0;  // 0 = no limit
  MigrationMode mode = MigrationMode::kSync;
  uint64_t seed = 1;              // for policies that draw random numbers
  // AutoTM: per-solve wall-clock limit, relative MIP gap at which CBC stops
  // (AutoTM ran Gurobi to 1%), and how many solves the fragmentation loop
  // may take before it gives up and repairs the plan.
  double solver_time_limit_seconds = 60;
  double mip_gap = 0.01;
  int max_solves = 6;
  // Sentinel: the longest migration interval length searched, in kernels
  // (0 = up to the number of kernels), and a cap on test-and-trial runs.
  int sentinel_max_mil = 128;
  int sentinel_max_trials = 64;
  bool sentinel_as_published = false;  // only the paper's eager eviction, no SentinelVariant trials
};

// How an optimisation-based policy reached its plan.
struct SolverStats {
  std::string status;         // "optimal", "gap", "time-limit", "infeasible", ...
  double objective_ns = 0;    // the model's predicted iteration time
  double bound_ns = 0;        // best lower bound the solver proved
  double mip_gap = 0;         // (objective - bound) / objective
  // bound_ns caps every plan of the formulation on the cost model: its
  // objective is the cost model's time in this mode, and the program solved
  // is the one asked (no later solve tightened it).
  bool bound_caps_cost_model = false;
  int solves = 0;             // ILP solves, fragmentation loop included
  int64_t nodes = 0;          // branch-and-bound nodes, summed over solves
  int variables = 0;          // of the last solve
  int integer_variables = 0;
  int constraints = 0;
  int64_t nonzeros = 0;
  double solve_seconds = 0;   // inside the solver, summed over solves
  uint64_t peak_added_bytes = 0;  // the most one solve added to its process's resident memory
};

struct PolicyResult {
  PlacementPlan plan;
  double decision_seconds = 0;        // wall time of the whole decision
  std::optional<SolverStats> solver;  // set by solver-based policies
  // Policy-specific numbers worth reporting (Sentinel's MIL, trials,
  // repairs of an over-limit plan, CachedArrays evictions, ...).
  std::map<std::string, double> stats;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string name() const = 0;
  // The plan and how it was made. Timed here; plan.produced_by is name().
  PolicyResult Decide(const Workload& w, const PolicyContext& ctx) const;
  // The plan alone.
  virtual PlacementPlan Plan(const Workload& w, const PolicyContext& ctx) const {
    return Decide(w, ctx).plan;
  }

 protected:
  virtual PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const = 0;
};

// A policy with no settings of its own (all-dram, first-touch, sentinel...):
// its name and its decision are all there is to it, so one class serves them
// all instead of a subclass each.
class StatelessPolicy : public PlacementPolicy {
 public:
  using DecideFn = PolicyResult (*)(const Workload& w, const PolicyContext& ctx);
  StatelessPolicy(std::string name, DecideFn decide) : name_(std::move(name)), decide_(decide) {}
  std::string name() const override { return name_; }

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override { return decide_(w, ctx); }

 private:
  std::string name_;
  DecideFn decide_;
};

// Names MakePolicy accepts, in the order reports list them.
const std::vector<std::string>& PolicyNames();
// Throws std::invalid_argument listing the valid names.
std::unique_ptr<PlacementPolicy> MakePolicy(const std::string& name);

}  // namespace tensortier
