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
  double runtime_ns = 0;
  // The all-DRAM and all-slow runtimes the reward is normalised against,
  // measured the same way as runtime_ns.
  double min_runtime_ns = 0;
  double max_runtime_ns = 0;
  MemoryCounters counters;
  bool oom = false;
};

class PlanEvaluator {
 public:
  virtual ~PlanEvaluator() = default;
  // Names what produced the numbers: "cost-model", "emulated:optane-dcpmm", ...
  virtual std::string backend() const = 0;
  // True when Measure() returns the cost model's own numbers, so the
  // episode's reward needs no rescoring.
  virtual bool is_cost_model() const { return false; }
  // Called once per task, before any Measure().
  virtual void Prepare(const Workload& w, const EnvConfig& env) {}
  virtual PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) = 0;
};

class CostModelEvaluator : public PlanEvaluator {
 public:
  std::string backend() const override { return "cost-model"; }
  bool is_cost_model() const override { return true; }
  PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) override;
};

MemoryCounters CountersFromCost(const CostReport& cost);

}  // namespace tensortier
