// How a worker scores the plan an episode produced. The cost model is the
// cheap, exact-by-definition evaluator; evaluators that run real training
// iterations on tiered memory plug in here and report measured runtimes.
#pragma once

#include <memory>
#include <string>

#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "protocol/messages.h"

namespace tensortier {

struct PlanMeasurement {
  std::string backend;  // what produced runtime_ns: "cost-model", "emulated:optane-dcpmm", ...
  double runtime_ns = 0;
  // The all-DRAM and all-slow runtimes the reward is normalised against,
  // measured the same way as runtime_ns.
  double min_runtime_ns = 0;
  double max_runtime_ns = 0;
  MemoryCounters counters;  // counters.measured: runtime_ns comes from real iterations
  bool oom = false;
};

class PlanEvaluator {
 public:
  virtual ~PlanEvaluator() = default;
  // Names what produces the numbers: "cost-model", "emulated:optane-dcpmm", ...
  virtual std::string backend() const = 0;
  // Called once per task, before any Measure(); throws if the task cannot
  // be evaluated here (the worker then refuses the task).
  virtual void Prepare(const Workload& w, const EnvConfig& env) {}
  virtual PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) = 0;
  // Whether the next Measure() would execute the plan for real: only then
  // may a measurement from the learner's cache (same backend) stand in.
  virtual bool NextMeasureIsReal() const { return false; }
  // The worker took a cached measurement instead of calling Measure():
  // advance whatever schedule decides which episodes run for real.
  virtual void SkipMeasure() {}
};

class CostModelEvaluator : public PlanEvaluator {
 public:
  std::string backend() const override { return "cost-model"; }
  PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) override;
};

MemoryCounters CountersFromCost(const CostReport& cost);

// What makes two workloads' signatures (Workload::Signature) differ, for a
// worker that refuses a task: both signatures, then the first count, tensor
// or access that differs ("" when the signatures agree).
std::string DescribeWorkloadDifference(const Workload& here, const Workload& task);

}  // namespace tensortier
