// One placement decision through an exported lookup (hostrt, no LibTorch)
// against one forward pass of the network it was exported from, on the
// states a greedy episode visits; and the fidelity of the export (agreement
// and cost-model runtime) on the synthetic shapes.
//
//   build/exporter/bench_export_lookup --benchmark_repetitions=10
//     --benchmark_report_aggregates_only=true  (one line)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/dqn_agent.h"
#include "replay/replay_buffer.h"
#include "envs/placement_env.h"
#include "envs/workload_spec.h"
#include "exporter/export.h"
#include "hostrt/tensortier_lookup.h"

namespace tensortier {
namespace {

DqnConfig Config(int hidden) {
  DqnConfig c;
  c.observation_size = kObservationSize;
  c.hidden = {hidden, hidden};
  c.learning_rate = 1e-3;
  c.target_update_interval = 200;
  c.learning_starts = 512;
  c.seed = 3;
  c.device = "cpu";
  return c;
}

// A briefly trained agent, its greedy plan and a lookup exported from it.
struct Fixture {
  Workload w;
  EnvConfig env;
  std::unique_ptr<DqnAgent> agent;
  std::vector<Observation> states;  // visited by the greedy episode
  tt_lookup* lookup = nullptr;
  ExportReport report;
  double agreement = 0, network_ns = 0, lookup_ns = 0;
};

Fixture* MakeFixture(const std::string& spec, int hidden, int episodes) {
  auto* f = new Fixture;
  f->w = LoadWorkloadSpec(spec);
  f->env.dram_limit_bytes = static_cast<uint64_t>(0.35 * f->w.peak_live_bytes());
  f->agent = std::make_unique<DqnAgent>(Config(hidden));
  PlacementEnv env(f->w, f->env);
  ReplayBuffer replay(50000);
  std::mt19937_64 rng(5);
  for (int e = 0; e < episodes; ++e) {
    const double epsilon = std::max(0.05, 1.0 - static_cast<double>(e) / (0.6 * episodes));
    Observation obs = env.Reset();
    while (!env.done()) {
      int a = f->agent->Act(obs.data(), epsilon, rng);
      StepResult r = env.Step(a);
      replay.Add(TransitionOf(obs, a, r));
      obs = r.observation;
    }
    if (replay.size() >= 512)
      for (int u = 0; u < 32; ++u) f->agent->Update(replay, rng);
  }
  PlacementPlan plan = RunEpisode(env, [&](const Observation& o) {
                         f->states.push_back(o);
                         return f->agent->Act(o.data(), 0.0, rng);
                       }).plan;
  ExportOptions o;
  o.output_path = "/tmp/tensortier_bench_" + std::to_string(hidden) + ".ttlookup";
  f->report = ExportLookupFrom(*f->agent, f->w, plan, o);
  char err[512];
  if (tt_lookup_open(o.output_path.c_str(), &f->lookup, err, sizeof err) != TT_LOOKUP_OK) {
    std::fprintf(stderr, "%s\n", err);
    std::abort();
  }
  return f;
}

Fixture& Latency(int hidden) {
  static std::map<int, Fixture*> fixtures;
  auto& f = fixtures[hidden];
  if (!f) f = MakeFixture("synthetic:resnet:4:1048576", hidden, 150);
  return *f;
}

// A decision from the cells alone (tt_lookup_decide_table).
void BM_LookupDecide(benchmark::State& state) {
  Fixture& f = Latency(static_cast<int>(state.range(0)));
  const size_t n = f.states.size();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tt_lookup_decide_table(f.lookup, f.states[i].data(), kObservationSize));
    if (++i == n) i = 0;
  }
  state.counters["file_KiB"] = static_cast<double>(f.report.file_bytes) / 1024.0;
}

// A decision as a host makes it when the file carries the network (the
// export's default): the network's forward pass in the runtime.
void BM_LookupDecideNetwork(benchmark::State& state) {
  Fixture& f = Latency(static_cast<int>(state.range(0)));
  const size_t n = f.states.size();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tt_lookup_decide(f.lookup, f.states[i].data(), kObservationSize));
    if (++i == n) i = 0;
  }
}

void BM_LookupPlanInitialTier(benchmark::State& state) {
  Fixture& f = Latency(128);
  const uint64_t sig = f.w.Signature();
  const uint32_t tensors = static_cast<uint32_t>(f.w.num_tensors());
  uint32_t t = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        tt_lookup_plan_initial_tier(f.lookup, sig, f.w.batch_size, f.env.dram_limit_bytes, t));
    if (++t == tensors) t = 0;
  }
}

// What a host would do per decision without the lookup: DqnAgent::QValues
// (allocates its result) and DqnAgent::Act (greedy, no allocation).
void BM_NetworkQValues(benchmark::State& state) {
  Fixture& f = Latency(static_cast<int>(state.range(0)));
  const size_t n = f.states.size();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.agent->QValues(f.states[i].data()));
    if (++i == n) i = 0;
  }
}

void BM_NetworkActGreedy(benchmark::State& state) {
  Fixture& f = Latency(static_cast<int>(state.range(0)));
  const size_t n = f.states.size();
  size_t i = 0;
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.agent->Act(f.states[i].data(), 0.0, rng));
    if (++i == n) i = 0;
  }
}

// Fidelity on a synthetic shape: the export's own report (agreement on the
// greedy evaluation states, cost-model runtimes of the network's and the
// lookup's plans). One iteration: it trains an agent.
void BM_ExportFidelity(benchmark::State& state, const char* spec) {
  for (auto _ : state) {
    std::unique_ptr<Fixture> f(MakeFixture(spec, 64, 200));
    state.counters["agreement_pct"] = 100.0 * f->report.agreement;
    state.counters["eval_states"] = static_cast<double>(f->report.eval_states);
    state.counters["runtime_delta_pct"] =
        100.0 * (f->report.lookup_runtime_ns / f->report.network_runtime_ns - 1.0);
    state.counters["generalised_KiB"] = static_cast<double>(f->report.generalised_section_bytes) / 1024.0;
    state.counters["export_s"] = f->report.seconds;
    tt_lookup_close(f->lookup);
  }
}

BENCHMARK(BM_LookupDecide)->Arg(64)->Arg(128);
BENCHMARK(BM_LookupDecideNetwork)->Arg(64)->Arg(128);
BENCHMARK(BM_LookupPlanInitialTier);
BENCHMARK(BM_NetworkQValues)->Arg(64)->Arg(128);
BENCHMARK(BM_NetworkActGreedy)->Arg(64)->Arg(128);
BENCHMARK_CAPTURE(BM_ExportFidelity, resnet8, "synthetic:resnet:8:1048576")->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_ExportFidelity, vgg6, "synthetic:vgg:6:1048576")->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_ExportFidelity, mobilenet6, "synthetic:mobilenet:6:1048576")
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace tensortier

BENCHMARK_MAIN();
