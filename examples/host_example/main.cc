// A host's use of an exported policy: open the lookup file (falling back to
// the default placement when it is refused), then route each tensor through
// the plan table when the model has a plan, or through the generalised
// lookup when it does not.
//
//   host_example LOOKUP_FILE [MODEL_SIGNATURE_HEX BATCH DRAM_BUDGET_BYTES]
#include <tensortier/tensortier_lookup.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tl = tensortier::lookup;

namespace {

// Walks a plan the way a tiered allocator would: the tier of each tensor as
// it is allocated, the copies to start when a kernel ends.
void ReplayPlan(const tl::PlanView& plan) {
  const tt_lookup_plan_info info = plan.info();
  uint32_t slow = 0;
  for (uint32_t t = 0; t < info.num_tensors; ++t) slow += plan.InitialTier(t) == tl::Tier::kSlow;
  std::printf("plan: %u tensors, %u allocated in the slow tier, %u migrations (%s copies)\n", info.num_tensors, slow,
              info.num_migrations, info.async_copies ? "async" : "sync");
  std::vector<tt_lookup_migration> moves;
  for (int32_t k = -1; k < static_cast<int32_t>(info.num_kernels); ++k) {
    plan.MigrationsAfter(k, &moves);
    for (const tt_lookup_migration& m : moves)
      std::printf("  after kernel %d: tensor %u -> %s\n", m.after_kernel, m.tensor,
                  m.to_tier == TT_LOOKUP_TIER_SLOW ? "slow" : "DRAM");
  }
}

// The generalised lookup on two made-up observations (docs/mdp.md's layout;
// a host computes them from its own graph as envs/placement_env.cc does).
void DecideExamples(const tl::Lookup& lookup) {
  const size_t n = lookup.observation_size();
  std::vector<float> hot(n, 0.0f), cold(n, 0.0f);
  if (n >= 15) {
    // tier, heat, DRAM left, slow left, size share, accessed now, input share,
    // penalty share, next use, position, copy cost, pending, size/limit,
    // next-use penalty, resident pending
    const float h[15] = {0.5f, 0.9f, 0.8f, 1.0f, 0.02f, 1.0f, 0.3f, 0.8f, 0.08f, 0.4f, 0.0f, 0.5f, 0.05f, 0.6f, 0.1f};
    const float c[15] = {1.0f, -0.9f, 0.05f, 1.0f, 0.3f, 0.0f, 0.0f, 0.0f, 1.0f, 0.4f, 0.9f, 0.9f, 0.6f, 0.0f, 0.4f};
    hot.assign(h, h + 15);
    cold.assign(c, c + 15);
  }
  std::printf("generalised lookup: hot small tensor -> %s, cold large tensor -> %s\n",
              lookup.Decide(hot) == TT_LOOKUP_TIER_SLOW ? "slow" : "DRAM",
              lookup.Decide(cold) == TT_LOOKUP_TIER_SLOW ? "slow" : "DRAM");
  // Time decisions over observations of varied heat (so no call is hoisted).
  std::vector<std::vector<float>> varied(1024, hot);
  for (size_t i = 0; i < varied.size(); ++i) varied[i][1] = static_cast<float>(i) / 512.0f - 1.0f;
  const int rounds = 10000000;
  int sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) sum += lookup.Decide(varied[static_cast<size_t>(i) & 1023]);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.1f ns per decision (%d of %d to the slow tier)\n", ns / rounds, sum, rounds);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    std::fprintf(stderr, "usage: %s LOOKUP_FILE [MODEL_SIGNATURE_HEX BATCH DRAM_BUDGET_BYTES]\n", argv[0]);
    return 2;
  }
  tl::Lookup lookup;
  std::string why;
  if (!tl::Lookup::TryOpen(argv[1], &lookup, &why)) {
    // A bad file must not take the job down: place everything as before.
    std::printf("lookup refused: %s\nkeeping the default allocator\n", why.c_str());
    return 0;
  }
  std::printf("lookup: model %016llx, %u plan(s), generalised lookup %s\n",
              static_cast<unsigned long long>(lookup.primary_signature()), lookup.plan_count(),
              lookup.has_generalised() ? "present" : "absent");
  uint64_t signature = lookup.primary_signature();
  uint32_t batch = 0;
  uint64_t budget = 0;
  if (argc == 5) {
    signature = std::strtoull(argv[2], nullptr, 16);
    batch = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
    budget = std::strtoull(argv[4], nullptr, 10);
  } else if (lookup.plan_count() > 0) {
    const tt_lookup_plan_info first = lookup.PlanAt(0).info();  // show the first plan
    signature = first.model_signature;
    batch = first.batch_size;
    budget = first.dram_budget_bytes;
  }
  const tl::PlanView plan = lookup.FindPlan(signature, batch, budget);
  if (plan) {
    ReplayPlan(plan);
  } else {
    std::printf("no plan for model %016llx, batch %u, DRAM budget %llu: using the generalised lookup\n",
                static_cast<unsigned long long>(signature), batch, static_cast<unsigned long long>(budget));
  }
  if (lookup.has_generalised()) DecideExamples(lookup);
  return 0;
}
