#include "policies/policy.h"

#include <chrono>
#include <functional>
#include <stdexcept>
#include <utility>

#include "envs/plannable_workload.h"
#include "policies/autotm.h"
#include "policies/basic.h"
#include "policies/cached_arrays.h"
#include "policies/deeptm_heuristic.h"
#include "policies/guided_ilp.h"
#include "policies/relaxation.h"
#include "policies/sentinel.h"

namespace tensortier {

PolicyResult PlacementPolicy::Decide(const Workload& w, const PolicyContext& ctx) const {
  if (!w.finalized()) throw std::logic_error("policy " + name() + ": workload not finalized");
  // Pinned tensors hold DRAM no plan can give to others: the policy plans
  // the workload without them under what they leave, and they are put in
  // DRAM after it.
  const PlannableWorkload plannable(w);
  PolicyContext inner = ctx;
  inner.dram_limit_bytes = PlannableDramBytes(w, ctx.dram_limit_bytes);
  const auto start = std::chrono::steady_clock::now();
  PolicyResult r;
  if (plannable.workload().num_tensors() > 0) r = DecideImpl(plannable.workload(), inner);
  else r.plan = PlacementPlan::Uniform(plannable.workload(), Tier::kDram, inner.dram_limit_bytes);
  r.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.plan = plannable.ToOriginal(r.plan);
  r.plan.produced_by = name();
  r.plan.workload_signature = w.Signature();
  if (r.plan.dram_limit_bytes == inner.dram_limit_bytes) r.plan.dram_limit_bytes = ctx.dram_limit_bytes;
  r.plan.KeepPinnedInDram(w);
  r.plan.Validate(w);
  return r;
}

namespace {

using Factory = std::function<std::unique_ptr<PlacementPolicy>()>;

// The entry of a policy with no settings: named once, for the registry and
// for the policy itself.
std::pair<std::string, Factory> Stateless(const char* name, StatelessPolicy::DecideFn decide) {
  return {name, [name, decide] { return std::make_unique<StatelessPolicy>(name, decide); }};
}

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const std::vector<std::pair<std::string, Factory>> registry = {
      Stateless("all-dram", DecideAllDram),
      Stateless("all-slow", DecideAllSlow),
      Stateless("random", DecideRandom),
      Stateless("first-touch", DecideFirstTouch),
      {"sentinel", [] { return std::make_unique<SentinelPolicy>(); }},
      {"autotm-static", [] { return std::make_unique<AutoTmPolicy>(AutoTmFormulation::kStatic); }},
      {"autotm-sync", [] { return std::make_unique<AutoTmPolicy>(AutoTmFormulation::kSynchronous); }},
      {"autotm-async", [] { return std::make_unique<AutoTmPolicy>(AutoTmFormulation::kAsynchronous); }},
      Stateless("deeptm-heuristic", DecideDeepTmHeuristic),
      {"ca-l", [] { return std::make_unique<CachedArraysPolicy>(CachedArraysVariant::kL); }},
      {"ca-lm", [] { return std::make_unique<CachedArraysPolicy>(CachedArraysVariant::kLM); }},
      {"ca-lmp", [] { return std::make_unique<CachedArraysPolicy>(CachedArraysVariant::kLMP); }},
      Stateless("heat+ilp", DecideHeatGuidedIlp),
      Stateless("relaxation", DecideRelaxation),
  };
  return registry;
}

}  // namespace

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, factory] : Registry()) v.push_back(name);
    return v;
  }();
  return names;
}

std::unique_ptr<PlacementPolicy> MakePolicy(const std::string& name) {
  for (const auto& [n, factory] : Registry())
    if (n == name) return factory();
  std::string valid;
  for (const std::string& n : PolicyNames()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown policy '" + name + "' (valid: " + valid + ")");
}

}  // namespace tensortier
