#include "worker/plan_evaluator.h"

#include <cinttypes>
#include <cstdio>

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

std::string DescribeWorkloadDifference(const Workload& here, const Workload& task) {
  if (here.Signature() == task.Signature()) return "";
  char signatures[96];
  std::snprintf(signatures, sizeof signatures, "signature %016" PRIx64 " here, %016" PRIx64 " in the task",
                here.Signature(), task.Signature());
  const std::string head = signatures;
  auto pair = [](const std::string& what, auto mine, auto theirs) {
    return what + " " + std::to_string(mine) + " here, " + std::to_string(theirs) + " in the task";
  };
  if (here.kernels.size() != task.kernels.size()) return head + "; " + pair("kernels:", here.kernels.size(), task.kernels.size());
  if (here.tensors.size() != task.tensors.size()) return head + "; " + pair("tensors:", here.tensors.size(), task.tensors.size());
  if (here.accesses.size() != task.accesses.size())
    return head + "; " + pair("accesses:", here.accesses.size(), task.accesses.size());
  for (size_t i = 0; i < here.tensors.size(); ++i) {
    const Tensor &a = here.tensors[i], &b = task.tensors[i];
    const std::string t = "; tensor " + std::to_string(i) + " '" + b.name + "'";
    if (a.size_bytes != b.size_bytes) return head + t + " " + pair("bytes:", a.size_bytes, b.size_bytes);
    if (a.kind != b.kind)
      return head + t + " kind: " + TensorKindName(a.kind) + " here, " + TensorKindName(b.kind) + " in the task";
    if (a.alloc_kernel != b.alloc_kernel) return head + t + " " + pair("allocated at kernel", a.alloc_kernel, b.alloc_kernel);
    if (a.free_kernel != b.free_kernel) return head + t + " " + pair("freed at kernel", a.free_kernel, b.free_kernel);
    if (a.persistent != b.persistent) return head + t + " " + pair("persistent", a.persistent, b.persistent);
  }
  for (size_t i = 0; i < here.accesses.size(); ++i) {
    const Access &a = here.accesses[i], &b = task.accesses[i];
    const std::string at = "; access " + std::to_string(i);
    if (a.kernel != b.kernel) return head + at + " " + pair("kernel", a.kernel, b.kernel);
    if (a.tensor != b.tensor) return head + at + " " + pair("tensor", a.tensor, b.tensor);
    if (a.reads != b.reads) return head + at + " " + pair("reads", a.reads, b.reads);
    if (a.writes != b.writes) return head + at + " " + pair("writes", a.writes, b.writes);
  }
  return head;
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
