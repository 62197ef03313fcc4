// The async best responses: one tensor's schedule, copy timing included,
// against every schedule of it (the others kept), priced by the cost model.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "envs/async_response.h"
#include "envs/cost_model.h"
#include "envs/synthetic.h"

namespace tensortier {
namespace {

// Eight kernels of uneven length (the copies they hide differ). G (200 B,
// tensor 0) is read at k0, k3 (written there when `g_written_at_k3`: a copy
// before k3 blocks) and k7, `g_penalty_ns` more each from the slow tier; R
// (300 B, tensor 1) is written at k2 and read at k5; H (100 B, tensor 2) is
// read at k1 and k6. A copy of G takes 150 ns.
Workload Uneven(bool g_persistent, bool g_written_at_k3, double g_penalty_ns) {
  Workload w;
  w.name = "uneven";
  const double ns[] = {100, 50, 400, 100, 30, 300, 80, 100};
  for (uint32_t k = 0; k < 8; ++k) w.kernels.push_back({"k" + std::to_string(k), ns[k]});
  w.tensors = {
      {"G", 200, TensorKind::kGradient, 0, 7, g_persistent},
      {"R", 300, TensorKind::kActivation, 2, 5, false},
      {"H", 100, TensorKind::kActivation, 1, 6, false},
  };
  w.accesses = {{0, 0, 1, 0, g_penalty_ns}, {1, 2, 1, 0, 20}, {2, 1, 0, 1, 40},
                {3, 0, 1, g_written_at_k3 ? 1u : 0u, g_penalty_ns}, {5, 1, 1, 0, 40},
                {6, 2, 1, 0, 20}, {7, 0, 1, 0, g_penalty_ns}};
  w.device.dram_to_slow_bytes_per_second = 200.0 / 150e-9;
  w.device.slow_to_dram_bytes_per_second = 200.0 / 150e-9;
  w.device.async_copy_exposure = 0.25;
  w.Finalize();
  return w;
}

// G's cheapest schedule by enumeration: its starting tier and, at each of
// its seven boundaries, a copy to the other tier or none; R and H as `base`
// has them. The cost, or +inf where none fits.
double CheapestByEnumeration(const Workload& w, const PlacementPlan& base) {
  double best = std::numeric_limits<double>::infinity();
  CostReport cost;
  for (uint32_t bits = 0; bits < (1u << 8); ++bits) {
    PlacementPlan p = base;
    Tier tier = (bits & 1) ? Tier::kSlow : Tier::kDram;
    p.initial_tiers[0] = tier;
    p.migrations.erase(std::remove_if(p.migrations.begin(), p.migrations.end(), [](const Migration& m) { return m.tensor == 0; }), p.migrations.end());
    for (int32_t b = 0; b < 7; ++b)
      if (bits & (2u << b)) {
        tier = tier == Tier::kDram ? Tier::kSlow : Tier::kDram;
        p.migrations.push_back({b, 0, tier});
      }
    p.Normalize();
    EvaluateValidPlan(w, p, cost);
    if (!cost.oom) best = std::min(best, cost.total_ns);
  }
  return best;
}

// R in DRAM, H in the slow tier throughout (read from there: it has a
// cost, so the responses may move it too; DRAM for it is kept out by the
// limit), G in DRAM throughout, which R and G together overfill.
PlacementPlan Start(const Workload& w, uint64_t dram_limit_bytes) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kDram, dram_limit_bytes);
  p.mode = MigrationMode::kAsync;
  p.initial_tiers[0] = Tier::kSlow;  // fits: G read from the slow tier all iteration
  p.initial_tiers[2] = Tier::kSlow;
  p.Normalize();
  return p;
}

TEST(AsyncResponse, OneTensorEndsAtItsCheapestScheduleAmongEveryOne) {
  // 450 B: R and G together do not fit, nor G, R and H; G and H do.
  for (bool persistent : {false, true})
    for (bool written : {false, true})
      for (double penalty : {60.0, 200.0, 700.0}) {
        SCOPED_TRACE("persistent " + std::to_string(persistent) + ", written at k3 " + std::to_string(written) +
                     ", penalty " + std::to_string(penalty));
        const Workload w = Uneven(persistent, written, penalty);
        const PlacementPlan start = Start(w, 450);
        CostReport start_cost;
        EvaluateValidPlan(w, start, start_cost);
        ASSERT_FALSE(start_cost.oom);
        AsyncResponseOptions one_pass;
        one_pass.max_passes = 1;
        const BestResponseResult r = RespondPerTensorAsync(w, start, one_pass);
        ASSERT_FALSE(r.cost.oom);
        CostReport check;
        EvaluateValidPlan(w, r.plan, check);
        EXPECT_DOUBLE_EQ(check.total_ns, r.cost.total_ns);
        // G is the costliest tensor, so it responds first, to R and H as
        // the start has them: no schedule of G is cheaper, and H's response
        // after it only saves more.
        const double cheapest_g = CheapestByEnumeration(w, start);
        EXPECT_LE(r.cost.total_ns, cheapest_g * (1 + 1e-12));
        PlacementPlan only_g = r.plan;
        only_g.initial_tiers[2] = start.initial_tiers[2];
        only_g.migrations.erase(std::remove_if(only_g.migrations.begin(), only_g.migrations.end(), [](const Migration& m) { return m.tensor == 2; }), only_g.migrations.end());
        only_g.Normalize();
        CostReport g_cost;
        EvaluateValidPlan(w, only_g, g_cost);
        if (!g_cost.oom) {
          EXPECT_NEAR(g_cost.total_ns, cheapest_g, 1e-6 * cheapest_g);
        }
        EXPECT_LT(r.cost.total_ns, start_cost.total_ns);
      }
}

TEST(AsyncResponse, EveryTensorAtItsBestResponseWhenThePassesEnd) {
  // On a synthetic ResNet-like graph: the responses never overfill DRAM and
  // never cost more, and once a pass moves nothing, no tensor's single
  // response (a pass of its own) finds anything more.
  for (SyntheticShape shape : {SyntheticShape::kResnetLike, SyntheticShape::kMobilenetLike}) {
    SCOPED_TRACE(SyntheticShapeName(shape));
    SyntheticOptions so;
    so.shape = shape;
    so.layers = 6;
    Workload w = GenerateSynthetic(so);
    w.Finalize();
    PlacementPlan p = PlacementPlan::Uniform(w, Tier::kSlow, w.peak_live_bytes() / 4);
    p.mode = MigrationMode::kAsync;
    CostReport before;
    EvaluateValidPlan(w, p, before);
    ASSERT_FALSE(before.oom);
    AsyncResponseOptions many;
    many.max_passes = 50;
    const BestResponseResult r = RespondPerTensorAsync(w, p, many);
    EXPECT_FALSE(r.cost.oom);
    EXPECT_GT(r.tensors_moved, 0);
    EXPECT_LT(r.cost.total_ns, before.total_ns);
    const BestResponseResult again = RespondPerTensorAsync(w, r.plan, many);
    EXPECT_EQ(again.tensors_moved, 0);
    EXPECT_DOUBLE_EQ(again.cost.total_ns, r.cost.total_ns);
  }
}

TEST(AsyncResponse, ASyncPlanIsRefused) {
  const Workload w = Uneven(false, false, 60);
  PlacementPlan p = Start(w, 450);
  p.mode = MigrationMode::kSync;
  EXPECT_THROW(RespondPerTensorAsync(w, p), std::invalid_argument);
}

}  // namespace
}  // namespace tensortier
