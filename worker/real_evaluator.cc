#include "worker/real_evaluator.h"

#include <stdexcept>

#include "common/log.h"
#include "envs/cost_model.h"
#include "executor/executor.h"
#include "tiers/memory_tier.h"

namespace tensortier {

struct RealIterationEvaluator::Impl {
  RealEvaluatorOptions options;
  std::string backend;
  std::unique_ptr<RealWorkloadRunner> runner;
  CostModelEvaluator cost_model;
  double all_dram_ns = 0;
  double all_slow_ns = 0;
  uint64_t episodes = 0;
};

RealIterationEvaluator::RealIterationEvaluator(RealEvaluatorOptions options) : impl_(new Impl) {
  if (options.measure_every == 0) throw std::invalid_argument("measure_every must be at least 1");
  if (options.repeats < 1) throw std::invalid_argument("repeats must be at least 1");
  impl_->options = std::move(options);
  impl_->backend = MakeSlowTier(impl_->options.slow_tier)->backend();  // resolves "auto", validates
}

RealIterationEvaluator::~RealIterationEvaluator() = default;

std::string RealIterationEvaluator::backend() const { return impl_->backend; }

void RealIterationEvaluator::Prepare(const Workload& w, const EnvConfig& env) {
  if (w.model.empty())
    throw std::invalid_argument("workload '" + w.name + "' names no model: it cannot run real iterations");
  RunnerOptions o;
  o.model = ModelOptionsFor(w.model);
  o.slow_tier = impl_->options.slow_tier;
  o.warmup_iterations = impl_->options.warmup_iterations;
  o.repeats = impl_->options.repeats;
  o.threads = impl_->options.threads;
  o.overflow_policy = DramOverflowPolicy::kSpillToSlow;
  impl_->runner.reset();  // one runner per process
  impl_->runner = std::make_unique<RealWorkloadRunner>(o);
  const ProfileReport& profile = impl_->runner->Profile();
  // The counts alone often agree ("(151 kernels, 192 tensors) differs from
  // (151 kernels, 192 tensors)"): say what does not.
  const std::string difference = DescribeWorkloadDifference(profile.workload, w);
  if (!difference.empty())
    throw std::runtime_error("this worker's profile of " + w.model.name + " differs from the task's workload (" +
                             difference + "): a corrupted workload file, or profile it on this kind of host");
  impl_->backend = impl_->runner->backend();
  ExecutionReport dram = impl_->runner->Execute(PlacementPlan::Uniform(w, Tier::kDram, 0));
  ExecutionReport slow = impl_->runner->Execute(PlacementPlan::Uniform(w, Tier::kSlow, env.dram_limit_bytes));
  if (!dram.ok || !slow.ok)
    throw std::runtime_error("reference iterations failed: " + (dram.ok ? slow.failure : dram.failure));
  impl_->all_dram_ns = dram.median_ns;
  impl_->all_slow_ns = slow.median_ns;
  impl_->episodes = 0;
  LogInfo("reference_runtimes").kv("model", w.model.name).kv("backend", impl_->backend)
      .kv("all_dram_ms", dram.median_ns / 1e6).kv("all_slow_ms", slow.median_ns / 1e6)
      .kv("spread", dram.spread);
}

bool RealIterationEvaluator::NextMeasureIsReal() const {
  return impl_->runner && impl_->episodes % impl_->options.measure_every == 0;
}

void RealIterationEvaluator::SkipMeasure() { ++impl_->episodes; }

PlanMeasurement RealIterationEvaluator::Measure(const Workload& w, const PlacementPlan& plan) {
  if (!impl_->runner) throw std::logic_error("RealIterationEvaluator::Measure before Prepare");
  if (impl_->episodes++ % impl_->options.measure_every != 0) return impl_->cost_model.Measure(w, plan);
  ExecutionReport r = impl_->runner->Execute(plan);
  PlanMeasurement m;
  m.backend = impl_->backend;
  m.min_runtime_ns = impl_->all_dram_ns;
  m.max_runtime_ns = impl_->all_slow_ns;
  m.oom = !r.ok;
  if (!r.ok) {
    LogWarn("episode_failed_on_memory").kv("reason", r.failure);
    m.runtime_ns = impl_->all_slow_ns;
    m.counters.measured = true;
    m.counters.oom_events = 1;
    return m;
  }
  m.runtime_ns = r.median_ns;
  MemoryCounters& c = m.counters;
  c.measured = true;
  c.runtime_spread = r.spread;
  c.repeats = static_cast<uint32_t>(r.iteration_ns.size());
  for (const IterationCounters& it : r.counters) {
    c.dram_peak_bytes = std::max(c.dram_peak_bytes, it.dram_peak_bytes);
    c.slow_peak_bytes = std::max(c.slow_peak_bytes, it.slow_peak_bytes);
    c.oom_events += static_cast<uint32_t>(it.oom_events + it.migration_oom_events);
    c.minor_faults += it.minor_faults;
    c.major_faults += it.major_faults;
  }
  if (!r.counters.empty()) {
    // Per iteration: the last measured one stands for all (plans repeat).
    const IterationCounters& last = r.counters.back();
    c.bytes_to_slow = last.bytes_to_slow;
    c.bytes_to_dram = last.bytes_to_dram;
    c.migrations_to_slow = static_cast<uint32_t>(last.migrations_to_slow);
    c.migrations_to_dram = static_cast<uint32_t>(last.migrations_to_dram);
    c.exposed_migration_ns = last.exposed_migration_ns;
    c.emulated_delay_ns = last.emulated_delay_ns;
    c.hardware_counters = last.hardware.available;
    c.cycles = last.hardware.cycles;
    c.instructions = last.hardware.instructions;
    c.llc_misses = last.hardware.llc_misses;
    c.minor_faults /= static_cast<int64_t>(r.counters.size());
    c.major_faults /= static_cast<int64_t>(r.counters.size());
  }
  return m;
}

}  // namespace tensortier
