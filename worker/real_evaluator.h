// Scores plans by running real LibTorch training iterations of the task's
// model on real memory tiers (executor/): DRAM and the slow tier chosen by
// --slow-tier. The reward is normalised by the all-DRAM and all-slow
// runtimes this worker measured itself for the workload.
#pragma once

#include <memory>
#include <string>

#include "worker/plan_evaluator.h"

namespace tensortier {

struct RealEvaluatorOptions {
  std::string slow_tier = "auto";  // see tiers/memory_tier.h
  uint32_t measure_every = 1;      // real iterations every N-th episode, the cost model between
  int warmup_iterations = 1;
  int repeats = 3;                 // measured iterations; the median is the runtime
  int threads = 1;                 // LibTorch intra-op threads while measuring
};

class RealIterationEvaluator : public PlanEvaluator {
 public:
  explicit RealIterationEvaluator(RealEvaluatorOptions options);
  ~RealIterationEvaluator() override;

  std::string backend() const override;
  // Rebuilds the workload's model, profiles it and refuses the task when
  // this host's graph differs from the learner's (another LibTorch, other
  // options); then measures the all-DRAM and all-slow runtimes.
  void Prepare(const Workload& w, const EnvConfig& env) override;
  PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) override;
  bool NextMeasureIsReal() const override;
  void SkipMeasure() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortier
