// The polish (envs/plan_polish.h) on a saved plan, with its options as
// flags, against reference plans of the same workload and budget (cost
// model): what each option buys and what it costs in time.
//
//   build/bench/bench_plan_polish --workload wl.ttwl --plan dqn+search.ttplan [--against heat+ilp.ttplan]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "envs/cost_model.h"
#include "envs/plan_polish.h"
#include "envs/plan_relaxation.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"The polish on a saved plan, against reference plans (cost model)"};
  std::string spec, plan_path, out;
  int top = 0, relax_iterations = 0;
  PlanRelaxationOptions ro;
  std::vector<std::string> against;
  PlanPolishOptions options;
  app.add_option("--workload", spec, "Workload file or synthetic:SHAPE[:LAYERS]")->required();
  app.add_option("--plan", plan_path, "Plan to polish (.ttplan)")->required();
  app.add_option("--against", against, "Reference plans (.ttplan)");
  app.add_option("--max-passes", options.max_passes, "PlanPolishOptions::max_passes");
  app.add_option("--max-seconds", options.max_seconds, "PlanPolishOptions::max_seconds (0: none)");
  app.add_option("--room-tensors", options.room_tensors, "PlanPolishOptions::room_tensors");
  app.add_option("--room-blockers", options.room_blockers, "PlanPolishOptions::room_blockers");
  app.add_option("--room-depth", options.room_depth, "PlanPolishOptions::room_depth");
  app.add_option("--top", top, "With --against: the tensors where the polished plan and the first reference differ most, each way");
  app.add_option("--relaxation", relax_iterations, "Also the plan by relaxation (envs/plan_relaxation.h), this many steps, and it polished");
  app.add_option("--repair-every", ro.repair_every, "PlanRelaxationOptions::repair_every");
  app.add_option("--deflection", ro.deflection, "PlanRelaxationOptions::deflection");
  app.add_option("--patience", ro.patience, "PlanRelaxationOptions::patience");
  app.add_option("--out", out, "Write the polished plan here (.ttplan)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Workload w = LoadWorkloadSpec(spec);
    const double all_dram_ns = MinCostNs(w);
    auto percent = [&](const PlacementPlan& p) {
      p.Validate(w);
      CostReport c;
      EvaluateValidPlan(w, p, c);
      return c.oom ? 0.0 : 100 * all_dram_ns / c.total_ns;
    };
    const PlacementPlan plan = ReadPlanFile(plan_path);
    std::printf("| plan | of all-DRAM |\n|---|---:|\n");
    for (const std::string& a : against) std::printf("| %s | %.3f%% |\n", a.c_str(), percent(ReadPlanFile(a)));
    std::printf("| %s | %.3f%% |\n", plan_path.c_str(), percent(plan));
    const PlanPolishResult r = PolishValidPlan(w, plan, options);
    std::printf("| polished | %.3f%% |\n\nedits kept %d of %d tried, %d passes, %.2f s\n", percent(r.plan), r.edits_kept,
                r.edits_tried, r.passes, r.seconds);
    if (!out.empty()) WritePlanFile(r.plan, out);
    {
      const auto t0 = std::chrono::steady_clock::now();
      const BestResponseResult br = RespondPerTensor(w, plan);
      std::printf("best responses on the input: %.3f%% (%d moved, %.2f s)\n", percent(br.plan), br.tensors_moved,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      const BestResponseResult br2 = RespondPerTensor(w, r.plan);
      std::printf("best responses on the polished: %.3f%% (%d moved)\n", percent(br2.plan), br2.tensors_moved);
      const PlanPolishResult rp = PolishValidPlan(w, br.plan, options);
      std::printf("best responses then polish: %.3f%% (%d edits)\n", percent(rp.plan), rp.edits_kept);
    }
    if (relax_iterations > 0) {
      CostReport pc;
      EvaluateValidPlan(w, r.plan, pc);
      ro.max_iterations = relax_iterations;
      const PlanRelaxationResult rr = PlanByRelaxation(w, plan.dram_limit_bytes, pc.total_ns, ro);
      std::printf("relaxation: found=%d %.3f%% bound %.3f%% iterations %d %.2f s\n", rr.found,
                  rr.found ? 100 * all_dram_ns / rr.cost.total_ns : 0.0, 100 * all_dram_ns / rr.lower_bound_ns,
                  rr.iterations, rr.seconds);
      if (rr.found) {
        const PlanPolishResult rp = PolishValidPlan(w, rr.plan, options);
        std::printf("relaxation polished: %.3f%% (%d edits, %.2f s)\n", percent(rp.plan), rp.edits_kept, rp.seconds);
      }
    }
    if (top > 0 && !against.empty()) {
      // Per tensor: where the polished plan and the first reference differ.
      const PlacementPlan ref = ReadPlanFile(against.front());
      CostReport c;
      TensorLedger mine, theirs;
      EvaluateValidPlan(w, r.plan, c, nullptr, &mine);
      EvaluateValidPlan(w, ref, c, nullptr, &theirs);
      auto schedule = [&](const PlacementPlan& p, uint32_t t) {
        std::string s = p.initial_tiers[t] == Tier::kDram ? "D" : "S";
        for (const Migration& m : p.migrations)
          if (m.tensor == t) s += (m.to == Tier::kDram ? " >D@" : " >S@") + std::to_string(m.after_kernel);
        return s;
      };
      std::vector<std::pair<double, uint32_t>> diff;
      for (uint32_t t = 0; t < w.num_tensors(); ++t) {
        const double d = (mine.slow_penalty_ns[t] + mine.copy_ns[t]) - (theirs.slow_penalty_ns[t] + theirs.copy_ns[t]);
        if (d != 0) diff.push_back({d, t});
      }
      std::sort(diff.begin(), diff.end());
      double total = 0;
      for (auto& [d, t] : diff) total += d;
      std::printf("\n%zu tensors differ, sum %.3f ms (polished less reference, penalty + copies)\n\n"
                  "| tensor | KiB | alloc-free | uses | polished ms | ref ms | polished | reference |\n|---|---:|---|---|---:|---:|---|---|\n",
                  diff.size(), total / 1e6);
      auto row = [&](uint32_t t) {
        const Tensor& x = w.tensors[t];
        const auto& uses = w.kernels_of_tensor(t);
        std::string u;
        for (size_t i = 0; i < uses.size() && i < 6; ++i) u += (i ? " " : "") + std::to_string(uses[i]);
        if (uses.size() > 6) u += " ..";
        std::printf("| %s | %.0f | %d-%d | %s | %.3f | %.3f | %s | %s |\n", x.name.c_str(), x.size_bytes / 1024.0,
                    static_cast<int>(x.alloc_kernel), static_cast<int>(x.free_kernel), u.c_str(),
                    (mine.slow_penalty_ns[t] + mine.copy_ns[t]) / 1e6,
                    (theirs.slow_penalty_ns[t] + theirs.copy_ns[t]) / 1e6, schedule(r.plan, t).c_str(),
                    schedule(ref, t).c_str());
      };
      for (size_t i = 0; i < diff.size(); ++i)
        if (i < static_cast<size_t>(top) || i + static_cast<size_t>(top) >= diff.size()) row(diff[i].second);
      // Transplant: the polished plan with the reference's schedule for every differing tensor, then each reverted where that stays in DRAM and is no dearer.
      auto with_schedule = [&](PlacementPlan p, uint32_t t, const PlacementPlan& from) {
        p.initial_tiers[t] = from.initial_tiers[t];
        p.migrations.erase(std::remove_if(p.migrations.begin(), p.migrations.end(), [t](const Migration& m) { return m.tensor == t; }), p.migrations.end());
        for (const Migration& m : from.migrations) if (m.tensor == t) p.migrations.push_back(m);
        p.Normalize();
        return p;
      };
      PlacementPlan q = r.plan;
      for (auto& [d, t] : diff) q = with_schedule(q, t, ref);
      EvaluateValidPlan(w, q, c);
      std::printf("\nall transplanted: %.3f%% oom=%d\n", 100 * all_dram_ns / c.total_ns, c.oom);
      double qns = c.total_ns;
      for (int round = 0; round < 3; ++round)
      for (auto& [d, t] : diff) {
        PlacementPlan back = with_schedule(q, t, r.plan);
        if (back == q) continue;
        EvaluateValidPlan(w, back, c);
        if (!c.oom && c.total_ns <= qns) { q = back; qns = c.total_ns; }
      }
      std::printf("after reverts: %.3f%%; still the reference's:\n", 100 * all_dram_ns / qns);
      for (auto& [d, t] : diff) {
        PlacementPlan back = with_schedule(q, t, r.plan);
        if (!(back == q)) row(t);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_plan_polish: %s\n", e.what());
    return 1;
  }
  return 0;
}
