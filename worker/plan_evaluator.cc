#include "worker/plan_evaluator.h"

#include "envs/cost_model.h"

namespace tensortier {

MemoryCounters CountersFromCost(const CostReport& cost) {
  MemoryCounters c;
  c.dram_peak_bytes = cost.dram_peak_bytes;
  c.slow_peak_bytes = cost.slow_peak_bytes;
  c.bytes_to_slow = cost.bytes_to_slow;
  c.bytes_to_dram = cost.bytes_to_dram;
  c.migrations_to_slow = cost.migrations_to_slow;
  c.migrations_to_dram = cost.migrations_to_dram;
  c.oom_events = cost.oom ? 1 : 0;
  return c;
}

PlanMeasurement CostModelEvaluator::Measure(const Workload& w, const PlacementPlan& plan) {
  CostReport cost = EvaluatePlan(w, plan);
  PlanMeasurement m;
  m.backend = backend();
  m.runtime_ns = cost.total_ns;
  m.min_runtime_ns = MinCostNs(w);
  m.max_runtime_ns = MaxCostNs(w);
  m.counters = CountersFromCost(cost);
  m.oom = cost.oom;
  return m;
}

}  // namespace tensortier
