#include <gtest/gtest.h>
#include <cstdio>
#include "envs/cost_model.h"
#include "envs/workload_spec.h"
#include "policies/policy.h"
using namespace tensortier;
TEST(Smoke, One) {
  Workload w = LoadWorkloadSpec(getenv("SPEC"));
  PolicyContext ctx;
  ctx.dram_limit_bytes = w.peak_live_bytes() / 5;
  ctx.mode = getenv("ASYNC") ? MigrationMode::kAsync : MigrationMode::kSync;
  if (getenv("GAP")) ctx.mip_gap = atof(getenv("GAP"));
  auto r = MakePolicy(getenv("POL"))->Decide(w, ctx);
  auto c = EvaluatePlan(w, r.plan);
  printf("total=%.0f dec=%.3f\n", c.total_ns, r.decision_seconds);
  if (r.solver) printf(" [%s gap=%.4f obj=%.0f bound=%.0f solves=%d vars=%d rows=%d nodes=%ld]\n", r.solver->status.c_str(), r.solver->mip_gap, r.solver->objective_ns, r.solver->bound_ns, r.solver->solves, r.solver->variables, r.solver->constraints, (long)r.solver->nodes);
}
