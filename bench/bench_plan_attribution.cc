// Where a plan's time goes, by tensor kind and by tensor, against a reference
// plan of the same workload and budget (cost model; docs/results/learning.md,
// session thirty-five). Each plan's slow-tier penalties and copies come from
// the cost model's own sum (envs/cost_model.h, TensorLedger). For a network's
// greedy plan it also counts the DRAM requests the MDP clipped to the slow
// tier, by kind: a request that found the room taken by earlier decisions.
//
//   build/bench/bench_plan_attribution --workload ts/rowgru_like.ttwl [--checkpoint dqn.ckpt]
//       [--dram-fraction 0.2] [--mode sync] [--policies sentinel autotm-sync] [--plan greedy] [--against autotm-sync]
//       [--search-seconds 30] [--top 15] [--csv tensors.csv] [--save-plans DIR] [--plan-file F.ttplan]...
//       [--no-plan-polish]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "agents/agent.h"
#include "envs/copy_schedule.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"
#include "policies/policy.h"

namespace {

using namespace tensortier;

constexpr int kKinds = static_cast<int>(TensorKind::kInput) + 1;

struct Attributed {
  std::string name;
  PlacementPlan plan;
  CostReport cost;
  TensorLedger tensors;
  KernelLedger kernels;
};

// Async copy time past the kernel each copy is issued before (cost_model.h: it hides under that one
// alone), and at how many kernels.
std::pair<double, int> BeyondKernelsNs(const KernelLedger& l) {
  double beyond_ns = 0;
  int kernels = 0;
  for (size_t k = 0; k < l.exec_ns.size(); ++k)
    if (l.overlapped_ns[k] > l.exec_ns[k]) beyond_ns += l.overlapped_ns[k] - l.exec_ns[k], ++kernels;
  return {beyond_ns, kernels};
}

Attributed Attribute(const Workload& w, std::string name, PlacementPlan plan) {
  Attributed a{std::move(name), std::move(plan), {}, {}, {}};
  a.plan.Validate(w);
  EvaluateValidPlan(w, a.plan, a.cost, &a.kernels, &a.tensors);
  return a;
}

double TensorNs(const TensorLedger& l, size_t t) { return l.slow_penalty_ns[t] + l.copy_ns[t]; }

// A network's greedy episode, with the DRAM requests the MDP clipped, by kind.
PlacementPlan GreedyCountingClips(PlacementEnv& env, const PlacementAgent& agent, std::vector<int>& clipped) {
  clipped.assign(kKinds, 0);
  Observation o = env.Reset();
  while (!env.done()) {
    const int action = agent.Greedy(o.data());
    if (action == 0 && env.DramRequestWouldSpill())
      ++clipped[static_cast<int>(env.workload().tensors[env.current_tensor()].kind)];
    o = env.Step(action).observation;
  }
  return env.summary().plan;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Where each plan's time goes, by tensor kind and tensor, against a reference plan (cost model)"};
  std::string spec, checkpoint, mode = "sync", against = "autotm-sync", examined, csv, save_plans;
  bool no_plan_polish = false;
  double fraction = 0.2, search_seconds = 30, ilp_seconds = 60;
  std::vector<std::string> policies = {"sentinel", "autotm-sync"}, plan_files;
  int top = 15;
  app.add_option("--workload", spec, "Workload file or synthetic:SHAPE[:LAYERS]")->required();
  app.add_option("--checkpoint", checkpoint, "Agent checkpoint (.ckpt): adds its greedy plan and the plan-time search's "
                 "(dqn+search or sac+search)");
  app.add_option("--dram-fraction", fraction, "DRAM limit as a fraction of peak live bytes")->check(CLI::Range(0.0, 1.0));
  app.add_option("--mode", mode, "sync or async migrations")->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--policies", policies, "Baselines (tensortier bench's names)");
  app.add_option("--plan", examined, "The plan the per-tensor list examines (default: greedy with --checkpoint, "
                 "else the first policy)");
  app.add_option("--against", against, "The reference plan of the per-tensor list (a policy above, greedy, dqn+search or sac+search)");
  app.add_option("--search-seconds", search_seconds, "Plan-time search limit")->check(CLI::NonNegativeNumber);
  app.add_option("--ilp-seconds", ilp_seconds, "Solver time limit of AutoTM's ILP")->check(CLI::PositiveNumber);
  app.add_option("--top", top, "Tensors listed, where the first plan pays the most over the reference")
      ->check(CLI::Range(0, 100000));
  app.add_option("--csv", csv, "Per tensor and plan: penalty, copies (ns) and counts");
  app.add_option("--plan-file", plan_files, "A plan (.ttplan, e.g. of --save-plans) to attribute beside the others, named "
                 "by its file name without .ttplan (repeatable)");
  app.add_option("--save-plans", save_plans, "Directory (existing) to write each plan to, as NAME.ttplan");
  app.add_flag("--no-plan-polish", no_plan_polish, "The plan-time search's plan without the polish's edits (envs/plan_polish.h)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Workload w = LoadWorkloadSpec(spec);
    const uint64_t limit = static_cast<uint64_t>(std::llround(fraction * static_cast<double>(w.peak_live_bytes())));
    const MigrationMode migration = mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync;
    std::vector<Attributed> plans;
    std::vector<int> clipped;
    if (!checkpoint.empty()) {
      const std::unique_ptr<PlacementAgent> agent = LoadAgentCheckpoint(checkpoint);
      EnvConfig env_config;
      env_config.dram_limit_bytes = limit;
      env_config.mode = migration;
      PlacementEnv env(w, env_config);
      plans.push_back(Attribute(w, "greedy", GreedyCountingClips(env, *agent, clipped)));
      PlanSearchOptions search;
      search.max_seconds = search_seconds;
      search.polish_plan = !no_plan_polish;
      plans.push_back(Attribute(w, agent->name() + "+search", SearchPlan(env, ScoresOf(*agent), search, {}).best.plan));
    }
    PolicyContext ctx;
    ctx.dram_limit_bytes = limit;
    ctx.mode = migration;
    ctx.solver_time_limit_seconds = ilp_seconds;
    for (const std::string& p : policies) plans.push_back(Attribute(w, p, MakePolicy(p)->Plan(w, ctx)));
    for (const std::string& f : plan_files)
      plans.push_back(Attribute(w, std::filesystem::path(f).stem().string(), ReadPlanFile(f)));
    if (plans.empty()) throw std::invalid_argument("no plans: give --checkpoint or --policies");
    auto named = [&](const std::string& flag, const std::string& name) {
      const auto it = std::find_if(plans.begin(), plans.end(), [&](const Attributed& a) { return a.name == name; });
      if (it == plans.end()) throw std::invalid_argument(flag + " " + name + " is none of the plans");
      return it;
    };
    const auto reference = named("--against", against);
    const Attributed& first = *(examined.empty() ? plans.begin() : named("--plan", examined));

    if (!save_plans.empty())
      for (const Attributed& a : plans) WritePlanFile(a.plan, save_plans + "/" + a.name + ".ttplan");
    const double all_dram_ns = MinCostNs(w);
    std::printf("%s at %.2f x peak (%.1f KiB), %s, cost model\n\n", w.name.c_str(), fraction, limit / 1024.0, mode.c_str());
    // Async copies are exposed in two ways (cost_model.h): the share of the part a kernel hides, and
    // all of the part beyond the kernel they are issued before; the second is what crowding costs.
    std::printf("| plan | of all-DRAM | kernels (ms) | copies exposed (ms) | of which blocking / beyond their kernel (ms) "
                "| kernels a copy outlasts | copies to slow / to DRAM |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (const Attributed& a : plans) {
      double blocking_ns = 0;
      for (double b : a.kernels.blocking_ns) blocking_ns += b;
      const auto [beyond_ns, outlasted] = BeyondKernelsNs(a.kernels);
      std::printf("| %s | %.1f%% | %.3f | %.3f | %.3f / %.3f | %d | %u / %u |\n", a.name.c_str(),
                  100 * all_dram_ns / a.cost.total_ns, a.cost.exec_ns / 1e6, a.cost.migration_ns / 1e6,
                  blocking_ns / 1e6, beyond_ns / 1e6, outlasted, a.cost.migrations_to_slow, a.cost.migrations_to_dram);
    }

    if (migration == MigrationMode::kAsync) {
      // How much of the copies' crowding the copy timing could still remove: each plan's copies
      // moved again (envs/copy_schedule.h, passes until none moves), then with the DRAM limit
      // lifted for the moves (the tiers every kernel sees kept). What stays beyond the kernels
      // then is a copy outlasting every kernel it may be issued before: only other tiers remove it.
      std::printf("\nCopy timing (async): of all-DRAM and copy time beyond the kernels (ms) as given, rescheduled, "
                  "and rescheduled with no DRAM limit\n\n| plan | as given | rescheduled | no DRAM limit |\n|---|---:|---:|---:|\n");
      CopyScheduleOptions until_none_moves;
      until_none_moves.max_passes = 64;
      for (const Attributed& a : plans) {
        std::printf("| %s |", a.name.c_str());
        PlacementPlan unlimited = a.plan;
        unlimited.dram_limit_bytes = 0;
        const PlacementPlan rescheduled = ScheduleAsyncCopies(w, a.plan, until_none_moves).plan;
        const PlacementPlan lifted = ScheduleAsyncCopies(w, unlimited, until_none_moves).plan;
        for (const PlacementPlan* p : {&a.plan, &rescheduled, &lifted}) {
          CostReport cost;
          KernelLedger kernels;
          EvaluateValidPlan(w, *p, cost, &kernels);
          std::printf(" %.2f%% / %.3f |", 100 * all_dram_ns / cost.total_ns, BeyondKernelsNs(kernels).first / 1e6);
        }
        std::printf("\n");
      }
    }
    std::printf("\nBy kind: slow-tier penalty ms / copy ms (whole durations) / slow accesses / copies\n\n| kind |");
    for (const Attributed& a : plans) std::printf(" %s |", a.name.c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < plans.size(); ++i) std::printf("---:|");
    std::printf("\n");
    for (int kind = 0; kind < kKinds; ++kind) {
      std::printf("| %s |", TensorKindName(static_cast<TensorKind>(kind)));
      for (const Attributed& a : plans) {
        double penalty = 0, copy = 0;
        uint64_t slow = 0, copies = 0;
        for (size_t t = 0; t < w.num_tensors(); ++t)
          if (static_cast<int>(w.tensors[t].kind) == kind) {
            penalty += a.tensors.slow_penalty_ns[t];
            copy += a.tensors.copy_ns[t];
            slow += a.tensors.slow_accesses[t];
            copies += a.tensors.copies[t];
          }
        std::printf(" %.2f / %.2f / %llu / %llu |", penalty / 1e6, copy / 1e6, static_cast<unsigned long long>(slow),
                    static_cast<unsigned long long>(copies));
      }
      std::printf("\n");
    }
    if (!clipped.empty()) {
      std::printf("\nThe greedy episode's DRAM requests clipped to the slow tier (the room was taken), by kind:");
      for (int kind = 0; kind < kKinds; ++kind)
        if (clipped[kind] > 0) std::printf(" %s %d", TensorKindName(static_cast<TensorKind>(kind)), clipped[kind]);
      std::printf("\n");
    }

    std::vector<std::pair<double, size_t>> over;
    for (size_t t = 0; t < w.num_tensors(); ++t)
      over.push_back({TensorNs(first.tensors, t) - TensorNs(reference->tensors, t), t});
    std::sort(over.begin(), over.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::printf("\nWhere %s pays the most over %s (penalty + copies, ms):\n\n| tensor | kind | KiB | %s | %s | more |\n"
                "|---|---|---:|---:|---:|---:|\n",
                first.name.c_str(), reference->name.c_str(), first.name.c_str(), reference->name.c_str());
    for (int i = 0; i < top && i < static_cast<int>(over.size()) && over[i].first > 0; ++i) {
      const size_t t = over[i].second;
      std::printf("| %s | %s | %.1f | %.3f | %.3f | %.3f |\n", w.tensors[t].name.c_str(),
                  TensorKindName(w.tensors[t].kind), w.tensors[t].size_bytes / 1024.0, TensorNs(first.tensors, t) / 1e6,
                  TensorNs(reference->tensors, t) / 1e6, over[i].first / 1e6);
    }
    if (!csv.empty()) {
      std::ofstream out(csv);
      if (!out) throw std::runtime_error("cannot write " + csv);
      out << "plan,tensor,name,kind,size_bytes,slow_penalty_ns,slow_accesses,copy_ns,copies\n";
      for (const Attributed& a : plans)
        for (size_t t = 0; t < w.num_tensors(); ++t) {
          std::string name = w.tensors[t].name;
          std::replace(name.begin(), name.end(), ',', ';');
          out << a.name << ',' << t << ',' << name << ',' << TensorKindName(w.tensors[t].kind) << ','
              << w.tensors[t].size_bytes << ',' << a.tensors.slow_penalty_ns[t] << ',' << a.tensors.slow_accesses[t]
              << ',' << a.tensors.copy_ns[t] << ',' << a.tensors.copies[t] << '\n';
        }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_plan_attribution: %s\n", e.what());
    return 1;
  }
  return 0;
}
