#include <gtest/gtest.h>
#include <cstdio>
#include "envs/cost_model.h"
#include "envs/workload_spec.h"
#include "policies/policy.h"
using namespace tensortier;
TEST(Smoke, Table) {
  for (const char* spec : {"synthetic:resnet:10", "synthetic:vgg:10", "synthetic:mobilenet:10"}) {
    Workload w = LoadWorkloadSpec(spec);
    double ideal = EvaluatePlan(w, MakePolicy("all-dram")->Plan(w, {})).total_ns;
    printf("%s K=%zu T=%zu peak=%llu\n", spec, w.num_kernels(), w.num_tensors(), (unsigned long long)w.peak_live_bytes());
    for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
      PolicyContext ctx;
      ctx.dram_limit_bytes = w.peak_live_bytes() / 5;
      ctx.mode = mode;
      for (const std::string& n : PolicyNames()) {
        auto r = MakePolicy(n)->Decide(w, ctx);
        auto c = EvaluatePlan(w, r.plan);
        printf("  %-5s %-18s perf=%.3f oom=%d dec=%.3fs", MigrationModeName(mode), n.c_str(), ideal / c.total_ns, c.oom, r.decision_seconds);
        if (r.solver) printf(" [%s gap=%.4f obj=%.0f solves=%d vars=%d]", r.solver->status.c_str(), r.solver->mip_gap, r.solver->objective_ns, r.solver->solves, r.solver->variables);
        for (auto& [k, v] : r.stats) printf(" %s=%g", k.c_str(), v);
        printf("\n");
      }
    }
  }
}
