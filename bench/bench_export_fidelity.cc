// Fidelity of exported lookups on real models of the zoo, measured on real
// iterations. Per model: profile one iteration, train a DQN on its graph
// (cost model, in-process), export a lookup file, then roll the generalised
// lookup out over the graph (what a host without a plan table for the model
// does, hostrt/apply/plan_from_lookup.h) and compare that plan with the network's greedy plan:
// decisions that differ, agreement on the export's evaluation states and on
// the network's own greedy path, the cost-model runtime ratio, and the
// measured iteration time of both plans on the slow tier, alternating
// between them so drift hits both alike. File sizes: the whole file and its
// two parts.
//
//   build/exporter/bench_export_fidelity [--models resnet18,alexnet] [--batch 2] [--image-size 32]
//       [--episodes 60] [--dram-fraction 0.2] [--rounds 5] [--slow-tier emulated:optane-dcpmm] [--csv out.csv]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "agents/local_training.h"
#include "agents/dqn_agent.h"
#include "replay/replay_buffer.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "executor/executor.h"
#include "exporter/export.h"
#include "hostrt/tensortier_lookup.hpp"

namespace {

using namespace tensortier;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Decisions (initial tiers, migrations) in which two plans differ.
size_t Differing(const PlacementPlan& a, const PlacementPlan& b) {
  size_t d = 0;
  for (size_t t = 0; t < a.initial_tiers.size(); ++t) d += a.initial_tiers[t] != b.initial_tiers[t];
  std::vector<std::tuple<int32_t, uint32_t, int>> ma, mb, diff;
  for (const Migration& m : a.migrations) ma.emplace_back(m.after_kernel, m.tensor, static_cast<int>(m.to));
  for (const Migration& m : b.migrations) mb.emplace_back(m.after_kernel, m.tensor, static_cast<int>(m.to));
  std::sort(ma.begin(), ma.end());
  std::sort(mb.begin(), mb.end());
  std::set_symmetric_difference(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(diff));
  return d + diff.size();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Exported lookup vs the network's plan on real iterations of zoo models"};
  std::string models = "resnet18,alexnet", csv_path, slow_tier = "emulated:optane-dcpmm";
  int64_t batch = 2, image = 32;
  int episodes = 60, rounds = 5;
  double dram_fraction = 0.2;
  app.add_option("--models", models, "Comma-separated zoo names")->capture_default_str();
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--image-size", image, "Image size")->capture_default_str();
  app.add_option("--episodes", episodes, "DQN training episodes per model (cost model)")->capture_default_str();
  app.add_option("--dram-fraction", dram_fraction, "DRAM budget as a fraction of the peak")->capture_default_str();
  app.add_option("--rounds", rounds, "Alternations of the two plans; 3 measured iterations each")
      ->capture_default_str();
  app.add_option("--slow-tier", slow_tier, "Slow tier")->capture_default_str();
  app.add_option("--csv", csv_path, "Also write the table as CSV");
  CLI11_PARSE(app, argc, argv);

  std::ostringstream csv;
  csv << "model,kernels,tensors,decisions,differing,agreement,path_agreement,model_ratio,network_ms,lookup_ms,"
         "lookup_over_network,"
         "plans_identical,file_bytes,plan_table_bytes,generalised_bytes,cells,train_s,export_s,backend\n";
  std::printf("%-12s %7s %7s %11s %9s %9s %9s %10s %10s %8s %6s %9s %8s\n", "model", "kernels", "tensors",
              "differing", "agreement", "path_agr", "model_rt", "net_ms", "lookup_ms", "ratio", "same", "file_KiB",
              "train_s");
  std::stringstream names(models);
  for (std::string name; std::getline(names, name, ',');) {
    RunnerOptions o = ZooRunnerOptions(name, batch, image, slow_tier);
    o.threads = 1;
    o.profile_timing_iterations = 1;
    o.warmup_iterations = 1;
    o.repeats = 3;
    // Profiled by a runner that is gone before the agent exists: tensors made
    // while a runner's allocator is installed would join the job's graph.
    Workload w;
    {
      RealWorkloadRunner profiler(o);
      w = profiler.Profile().workload;
    }
    EnvConfig env;
    env.dram_limit_bytes = static_cast<uint64_t>(dram_fraction * static_cast<double>(w.peak_live_bytes()));

    const auto t0 = std::chrono::steady_clock::now();
    DqnConfig config;
    config.observation_size = kObservationSize;
    config.hidden = {128, 128};
    config.device = "cpu";
    config.learning_starts = 512;
    config.learning_rate = 1e-4;  // the settings its published numbers were measured with
    config.target_update_interval = 100;
    DqnAgent agent(config);
    PlacementEnv train(w, env);
    ReplayBuffer replay(100000);
    std::mt19937_64 rng(5);
    LocalTraining schedule;
    schedule.episodes = episodes;
    TrainLocally(agent, train, replay, schedule, rng);
    uint32_t decisions = 0;
    PlacementPlan network = RunEpisode(train, [&](const Observation& ob) {
                              ++decisions;
                              return agent.Act(ob.data(), 0.0, rng);
                            }).plan;
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    ExportOptions eo;
    eo.output_path = "/tmp/tensortier_bench_fidelity_" + std::to_string(getpid()) + "_" + name + ".ttlookup";
    eo.network = false;  // the cells' fidelity: with the network in the file the plans are the network's
    const ExportReport report = ExportLookupFrom(agent, w, network, eo);
    tensortier::lookup::Lookup lookup = tensortier::lookup::Lookup::Open(eo.output_path);
    // The generalised lookup's plan (the file's plan table would give the
    // network's plan back exactly).
    PlacementEnv rollout(w, env);
    PlacementPlan from_lookup =
        RunEpisode(rollout, [&](const Observation& ob) { return lookup.Decide(ob.data(), ob.size()); }).plan;
    const size_t differing = Differing(network, from_lookup);
    // On the network's own greedy path: where the plans differ only in decisions.
    uint32_t own_states = 0, own_agree = 0;
    PlacementEnv own(w, env);
    RunEpisode(own, [&](const Observation& ob) {
      const int a = agent.Act(ob.data(), 0.0, rng);
      ++own_states;
      // By effect, as ExportReport counts: where DRAM is full both answers clip to the slow tier.
      own_agree += own.DramRequestWouldSpill() || a == lookup.Decide(ob.data(), ob.size());
      return a;
    });
    const double model_ratio = EvaluatePlan(w, from_lookup).total_ns / EvaluatePlan(w, network).total_ns;

    RealWorkloadRunner runner(o);
    if (runner.Profile().workload.Signature() != w.Signature()) {
      std::printf("%s: the graph differs from the first profile; skipped\n", name.c_str());
      continue;
    }
    std::vector<double> net_ns, look_ns;
    bool ok = true;
    for (int r = 0; r < rounds && ok; ++r) {
      for (int which = 0; which < 2; ++which) {
        // Alternate which goes first, so neither always follows the other.
        const bool network_turn = (which == 0) == (r % 2 == 0);
        const ExecutionReport x = runner.Execute(network_turn ? network : from_lookup);
        if (!x.ok) {
          std::printf("%s: execution failed: %s\n", name.c_str(), x.failure.c_str());
          ok = false;
          break;
        }
        (network_turn ? net_ns : look_ns).insert((network_turn ? net_ns : look_ns).end(), x.iteration_ns.begin(),
                                                  x.iteration_ns.end());
      }
    }
    const double net_ms = Median(net_ns) / 1e6, look_ms = Median(look_ns) / 1e6;
    const bool same = network.Hash() == from_lookup.Hash();
    std::printf("%-12s %7zu %7zu %5zu/%-5u %8.2f%% %8.2f%% %9.4f %10.2f %10.2f %8.4f %6s %9.1f %8.1f\n",
                name.c_str(), w.num_kernels(), w.num_tensors(), differing, decisions, 100 * report.agreement,
                100.0 * own_agree / std::max(1u, own_states), model_ratio, net_ms, look_ms, look_ms / net_ms,
                same ? "yes" : "no", report.file_bytes / 1024.0, train_s);
    std::fflush(stdout);
    csv << name << ',' << w.num_kernels() << ',' << w.num_tensors() << ',' << decisions << ',' << differing << ','
        << report.agreement << ',' << static_cast<double>(own_agree) / std::max(1u, own_states) << ',' << model_ratio
        << ',' << net_ms << ',' << look_ms << ',' << look_ms / net_ms << ',' << same << ','
        << report.file_bytes << ',' << report.plan_section_bytes << ',' << report.generalised_section_bytes << ','
        << report.quantiser.cells << ',' << train_s << ',' << report.seconds << ',' << runner.backend() << '\n';
    std::remove(eo.output_path.c_str());
  }
  if (!csv_path.empty()) std::ofstream(csv_path) << csv.str();
  return 0;
}
