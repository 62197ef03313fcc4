#include <gtest/gtest.h>

#include <random>

#include "envs/heat.h"
#include "envs/synthetic.h"
#include "tests/core/hand_graph.h"

namespace tensortier {
namespace {

// One kernel that touches `n` tensors of mixed sizes, lifetimes and reuse,
// so that hot bytes can be tuned finely.
Workload ManyTensors(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> size(1000, 20000);
  std::uniform_int_distribution<uint32_t> kernel(1, 30);
  Workload w;
  for (int k = 0; k < 32; ++k) w.kernels.push_back({"k" + std::to_string(k), 1000});
  for (int t = 0; t < n; ++t) {
    uint32_t last = kernel(rng);
    w.tensors.push_back({"t" + std::to_string(t), size(rng), TensorKind::kActivation, 0, last, false});
    w.accesses.push_back({0, static_cast<uint32_t>(t), 1, 0, 10});
    uint32_t reuse = kernel(rng) % (last + 1);
    if (reuse > 0) w.accesses.push_back({reuse, static_cast<uint32_t>(t), 1, 0, 10});
    if (last > reuse) w.accesses.push_back({last, static_cast<uint32_t>(t), 1, 0, 10});
  }
  w.Finalize();
  return w;
}

TEST(Heat, FeaturesAreMinMaxNormalised) {
  Workload w = testing::HandGraph();
  HeatFeatures f = ComputeHeatFeatures(w, 0);
  ASSERT_EQ(f.size.size(), 3u);  // A, B, D live at k0
  for (const auto* v : {&f.reuse_distance, &f.future_frequency, &f.size, &f.lifetime})
    for (double x : *v) {
      EXPECT_GE(x, 0.0);
      EXPECT_LE(x, 1.0);
    }
  // A is the largest, D the smallest.
  EXPECT_DOUBLE_EQ(f.size[0], 1.0);
  EXPECT_DOUBLE_EQ(f.size[2], 0.0);
  // A and B are used at k0 (distance 0), D only at k1.
  EXPECT_DOUBLE_EQ(f.reuse_distance[0], 0.0);
  EXPECT_DOUBLE_EQ(f.reuse_distance[2], 1.0);
}

TEST(Heat, HeatFollowsTheFormula) {
  HeatFeatures f;
  f.reuse_distance = {0.5};
  f.future_frequency = {1.0};
  f.size = {0.25};
  f.lifetime = {0.75};
  HeatWeights wt;
  wt.w_r = 2;
  wt.w_f = 3;
  wt.w_s = 4;
  wt.w_l = 5;
  EXPECT_DOUBLE_EQ(Heat(wt, f, 0), 3 * 1.0 - 2 * 0.5 - 4 * 0.25 + 5 * 0.75);
}

TEST(Heat, AlgorithmOneBringsHotBytesIntoTheWindowThroughReuseWeight) {
  Workload w = ManyTensors(200, 7);
  // At kernel 1 reuse distances differ (at kernel 0 every tensor is in use).
  const uint64_t live = w.live_bytes_at(1);
  // Live < 2.5 L_D: Algorithm 1 tunes w_r.
  for (double share : {0.45, 0.6, 0.8}) {
    uint64_t limit = static_cast<uint64_t>(live * share);
    KernelHeats kh = AdjustHeats(w, 1, limit, HeatWeights{});
    EXPECT_TRUE(kh.converged) << share;
    EXPECT_GE(kh.hot_bytes, 0.9 * limit) << share;
    EXPECT_LE(kh.hot_bytes, 1.1 * limit) << share;
    EXPECT_DOUBLE_EQ(kh.weights.w_s, 1.0);
  }
}

TEST(Heat, AlgorithmOneTunesSizeWeightWhenLiveDataFarExceedsDram) {
  Workload w = ManyTensors(200, 11);
  const uint64_t live = w.live_bytes_at(0);
  uint64_t limit = live / 4;  // live >= 2.5 L_D
  KernelHeats kh = AdjustHeats(w, 0, limit, HeatWeights{});
  EXPECT_TRUE(kh.converged);
  EXPECT_GE(kh.hot_bytes, 0.9 * limit);
  EXPECT_LE(kh.hot_bytes, 1.1 * limit);
  EXPECT_NE(kh.weights.w_s, 1.0);
  EXPECT_GT(kh.iterations, 0);
}

TEST(Heat, WeightsStayWhenAllLiveDataFits) {
  Workload w = ManyTensors(50, 3);
  HeatWeights start;
  start.w_r = 1.7;
  KernelHeats kh = AdjustHeats(w, 0, w.live_bytes_at(0) * 2, start);
  EXPECT_TRUE(kh.converged);
  EXPECT_EQ(kh.iterations, 0);
  EXPECT_DOUBLE_EQ(kh.weights.w_r, 1.7);
}

TEST(Heat, WeightsCarryAcrossKernels) {
  SyntheticOptions o;
  o.shape = SyntheticShape::kMobilenetLike;
  o.layers = 12;
  o.base_bytes = 1 << 20;
  Workload w = GenerateSynthetic(o);
  auto heats = ComputeAllHeats(w, w.peak_live_bytes() / 3);
  ASSERT_EQ(heats.size(), w.num_kernels());
  for (size_t k = 0; k < w.num_kernels(); ++k) EXPECT_EQ(heats[k].size(), w.live_at(k).size());
}

}  // namespace
}  // namespace tensortier
