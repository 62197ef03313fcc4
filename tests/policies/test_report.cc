// Not a test: prints the baseline comparison the docs quote. Run with
//   build/tests/tests_policies --gtest_also_run_disabled_tests --gtest_filter='*Report*'
// (environment: TT_REPORT_SPECS="synthetic:resnet:10,...", TT_REPORT_FRACTION=0.2,
//  TT_REPORT_TIME_LIMIT=60).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "envs/cost_model.h"
#include "envs/workload_spec.h"
#include "policies/policy.h"

namespace tensortier {
namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

TEST(DISABLED_Report, BaselinesRelativeToAllDram) {
  const char* specs_env = std::getenv("TT_REPORT_SPECS");
  const std::vector<std::string> specs =
      Split(specs_env ? specs_env : "synthetic:resnet:10,synthetic:vgg:10,synthetic:mobilenet:10");
  const double fraction = std::getenv("TT_REPORT_FRACTION") ? std::atof(std::getenv("TT_REPORT_FRACTION")) : 0.2;
  const double time_limit = std::getenv("TT_REPORT_TIME_LIMIT") ? std::atof(std::getenv("TT_REPORT_TIME_LIMIT")) : 60;
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    std::printf("\n%s copies, DRAM = %.2f x peak; cost-model time of all-DRAM / policy (decision seconds)\n\n",
                MigrationModeName(mode), fraction);
    std::printf("| policy |");
    for (const std::string& s : specs) std::printf(" %s |", s.c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < specs.size(); ++i) std::printf("---|");
    std::printf("\n");
    std::vector<Workload> workloads;
    for (const std::string& s : specs) workloads.push_back(LoadWorkloadSpec(s));
    std::string solver_notes;
    for (const std::string& name : PolicyNames()) {
      std::printf("| %s |", name.c_str());
      for (const Workload& w : workloads) {
        PolicyContext ctx;
        ctx.dram_limit_bytes = static_cast<uint64_t>(static_cast<double>(w.peak_live_bytes()) * fraction);
        ctx.mode = mode;
        ctx.solver_time_limit_seconds = time_limit;
        const PolicyResult r = MakePolicy(name)->Decide(w, ctx);
        const CostReport c = EvaluatePlan(w, r.plan);
        std::printf(" %.3f%s (%.2fs) |", MinCostNs(w) / c.total_ns, c.oom ? " OOM" : "", r.decision_seconds);
        if (r.solver) {
          char line[512];
          std::snprintf(line, sizeof line, "%s %s: %s, gap %.4f, %d solve(s), %d vars (%d integer), %d rows, %.2f s\n",
                        name.c_str(), w.name.c_str(), r.solver->status.c_str(), r.solver->mip_gap, r.solver->solves,
                        r.solver->variables, r.solver->integer_variables, r.solver->constraints,
                        r.solver->solve_seconds);
          solver_notes += line;
        }
      }
      std::printf("\n");
    }
    std::printf("\n%s", solver_notes.c_str());
  }
}

}  // namespace
}  // namespace tensortier
