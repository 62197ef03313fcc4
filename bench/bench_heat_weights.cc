// The learned form of DeepTM's Algorithm 1 against Algorithm 1 itself
// (issue #5, item 2): for each workload and seed, trains the continuous SAC
// heat-weight agent (agents/heat_weight_agent.h) on HeatWeightEnv and scores
// its deterministic plan beside Algorithm 1's, the starting weights without
// adjustment, first-touch and all-DRAM, all on the cost model.
// docs/results/heat-weights.md has the figures of one run.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "agents/heat_weight_agent.h"
#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "envs/heat_weight_env.h"
#include "envs/workload_spec.h"

namespace tensortier {
namespace {

struct Row {
  std::string workload;
  uint64_t seed = 0;
  uint64_t dram_limit_bytes = 0;
  size_t decision_kernels = 0;
  double all_dram_ns = 0, first_touch_ns = 0, start_weights_ns = 0, nothing_hot_ns = 0, algorithm1_ns = 0, agent_ns = 0;
  double algorithm1_return = 0, agent_return = 0, best_training_return = 0;
  bool agent_oom = false;
  uint64_t updates = 0;
  double seconds = 0;
};

// Speed as a share of all-DRAM (all-DRAM time / plan time), the convention of
// the project's other tables; 0 for a plan that does not fit.
double PercentOfAllDram(double all_dram_ns, double plan_ns) {
  return plan_ns > 0 ? 100.0 * all_dram_ns / plan_ns : 0.0;
}

int Main(int argc, char** argv) {
  CLI::App app{"Continuous SAC heat weights (learned Algorithm 1) against DeepTM's Algorithm 1, on the cost model"};
  std::vector<std::string> workloads = {"synthetic:vgg:8", "synthetic:resnet:8", "synthetic:mobilenet:8"};
  double dram_fraction = 0.2;
  double beta = 1.0;
  int episodes = 150;
  int seeds = 3;
  std::string csv_path;
  app.add_option("--workloads", workloads, "Workload specs (synthetic:SHAPE:LAYERS) or profiled .ttwl files");
  app.add_option("--dram-fraction", dram_fraction, "DRAM limit as a fraction of each workload's peak live bytes")
      ->check(CLI::Range(1e-6, 1.0));
  app.add_option("--beta", beta,
                 "Reward weight of performance against the memory-price term (DeepTM eq. 13); 1 = performance "
                 "only, as this comparison is about iteration time")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--episodes", episodes, "Training episodes per agent")->check(CLI::Range(1, 100000));
  app.add_option("--seeds", seeds, "Agents trained per workload (seeds 1..N)")->check(CLI::Range(1, 100));
  app.add_option("--csv", csv_path, "Also write the rows as CSV here");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  for (const std::string& spec : workloads) {
    Workload w;
    try {
      w = LoadWorkloadSpec(spec);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_heat_weights: workload %s: %s\n", spec.c_str(), e.what());
      return 2;
    }
    HeatWeightEnvConfig ec;
    ec.dram_limit_bytes = static_cast<uint64_t>(dram_fraction * static_cast<double>(w.peak_live_bytes()));
    ec.beta = beta;
    HeatWeightEnv env(w, ec);
    const double all_dram_ns = EvaluatePlan(w, PlacementPlan::Uniform(w, Tier::kDram, 0)).total_ns;
    const CostReport first_touch = EvaluatePlan(w, FirstTouchPlan(w, ec.dram_limit_bytes));
    double algorithm1_return = 0;
    const EpisodeSummary algorithm1 = RunAlgorithm1(env, &algorithm1_return);
    const EpisodeSummary start_weights = RunFixedWeights(env, HeatAction{});
    // Threshold at its top: at bottleneck kernels nothing is hot, so nothing moves to DRAM.
    const EpisodeSummary nothing_hot = RunFixedWeights(env, HeatAction{0, 0, 0, 0, 1});
    for (int seed = 1; seed <= seeds; ++seed) {
      std::fprintf(stderr, "== %s seed %d (%zu decision kernels, %d episodes)\n", spec.c_str(), seed,
                   env.decision_kernels().size(), episodes);
      HeatSacConfig c;
      c.device = "cpu";
      c.seed = static_cast<uint64_t>(seed);
      HeatWeightAgent agent(c);
      HeatTrainingOptions options;
      options.episodes = episodes;
      std::mt19937_64 rng(static_cast<uint64_t>(seed));
      const HeatTrainingResult trained = TrainHeatWeightAgent(env, agent, options, rng);
      const HeatComparison cmp = CompareWithAlgorithm1(env, agent);
      Row r;
      r.workload = w.name;
      r.seed = static_cast<uint64_t>(seed);
      r.dram_limit_bytes = ec.dram_limit_bytes;
      r.decision_kernels = env.decision_kernels().size();
      r.all_dram_ns = all_dram_ns;
      r.first_touch_ns = first_touch.oom ? 0 : first_touch.total_ns;
      r.start_weights_ns = start_weights.oom ? 0 : start_weights.cost.total_ns;
      r.nothing_hot_ns = nothing_hot.oom ? 0 : nothing_hot.cost.total_ns;
      r.algorithm1_ns = algorithm1.oom ? 0 : algorithm1.cost.total_ns;
      r.agent_ns = cmp.agent.oom ? 0 : cmp.agent.cost.total_ns;
      r.agent_oom = cmp.agent.oom;
      r.algorithm1_return = algorithm1_return;
      r.agent_return = cmp.agent_return;
      r.best_training_return = trained.best_return;
      r.updates = trained.updates;
      r.seconds = trained.seconds;
      rows.push_back(r);
      std::fprintf(stderr, "   agent %.1f%% of all-DRAM, Algorithm 1 %.1f%% (%.1f s, %llu updates)\n",
                   PercentOfAllDram(r.all_dram_ns, r.agent_ns), PercentOfAllDram(r.all_dram_ns, r.algorithm1_ns),
                   r.seconds, static_cast<unsigned long long>(r.updates));
    }
  }

  std::printf("DRAM limit %.2f x peak live bytes, beta %.2f, %d episodes, cost model; speeds in %% of all-DRAM\n\n",
              dram_fraction, beta, episodes);
  std::printf("| workload | seed | decision kernels | first-touch | start weights | nothing hot | Algorithm 1 | "
              "learned (SAC) | learned / Algorithm 1 | returns: Algorithm 1 / learned | updates | seconds |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
    std::printf("| %s | %llu | %zu | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%%%s | %.3fx | %.2f / %.2f | %llu | %.1f |\n",
                r.workload.c_str(), static_cast<unsigned long long>(r.seed), r.decision_kernels,
                PercentOfAllDram(r.all_dram_ns, r.first_touch_ns), PercentOfAllDram(r.all_dram_ns, r.start_weights_ns),
                PercentOfAllDram(r.all_dram_ns, r.nothing_hot_ns),
                PercentOfAllDram(r.all_dram_ns, r.algorithm1_ns), PercentOfAllDram(r.all_dram_ns, r.agent_ns),
                r.agent_oom ? " (OOM)" : "", r.agent_ns > 0 ? r.algorithm1_ns / r.agent_ns : 0.0,
                r.algorithm1_return, r.agent_return, static_cast<unsigned long long>(r.updates), r.seconds);
  if (!csv_path.empty()) {
    std::ofstream csv(csv_path);
    if (!csv) {
      std::fprintf(stderr, "bench_heat_weights: cannot write %s\n", csv_path.c_str());
      return 1;
    }
    csv << "workload,seed,dram_limit_bytes,decision_kernels,all_dram_ns,first_touch_ns,start_weights_ns,"
           "nothing_hot_ns,algorithm1_ns,agent_ns,agent_oom,algorithm1_return,agent_return,best_training_return,updates,seconds\n";
    for (const Row& r : rows)
      csv << r.workload << ',' << r.seed << ',' << r.dram_limit_bytes << ',' << r.decision_kernels << ','
          << r.all_dram_ns << ',' << r.first_touch_ns << ',' << r.start_weights_ns << ',' << r.nothing_hot_ns << ',' << r.algorithm1_ns << ','
          << r.agent_ns << ',' << (r.agent_oom ? 1 : 0) << ',' << r.algorithm1_return << ',' << r.agent_return << ','
          << r.best_training_return << ',' << r.updates << ',' << r.seconds << '\n';
  }
  return 0;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) {
  try {
    return tensortier::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_heat_weights: %s\n", e.what());
    return 1;
  }
}
