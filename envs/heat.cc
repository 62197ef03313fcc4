#include "envs/heat.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tensortier {
namespace {

void MinMaxNormalise(std::vector<double>& v) {
  if (v.empty()) return;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  double min = *lo, range = *hi - *lo;
  for (double& x : v) x = range > 0 ? (x - min) / range : 0.0;
}

uint64_t HotBytes(const Workload& w, size_t k, const std::vector<double>& heat, double threshold) {
  uint64_t bytes = 0;
  const auto& live = w.live_at(k);
  for (size_t i = 0; i < live.size(); ++i)
    if (heat[i] > threshold) bytes += w.tensors[live[i]].size_bytes;
  return bytes;
}

}  // namespace

HeatFeatures ComputeHeatFeatures(const Workload& w, size_t k) {
  const auto& live = w.live_at(k);
  HeatFeatures f;
  f.reuse_distance.reserve(live.size());
  f.future_frequency.reserve(live.size());
  f.size.reserve(live.size());
  f.lifetime.reserve(live.size());
  const double never = static_cast<double>(w.num_kernels());
  for (uint32_t t : live) {
    const auto& uses = w.kernels_of_tensor(t);
    auto first_future = std::lower_bound(uses.begin(), uses.end(), static_cast<uint32_t>(k));
    double reuse = first_future == uses.end() ? never : static_cast<double>(*first_future - k);
    const double future = static_cast<double>(w.future_accesses(t, static_cast<size_t>(first_future - uses.begin())));
    const Tensor& x = w.tensors[t];
    f.reuse_distance.push_back(reuse);
    f.future_frequency.push_back(future);
    f.size.push_back(static_cast<double>(x.size_bytes));
    f.lifetime.push_back(static_cast<double>(x.free_kernel - x.alloc_kernel + 1));
  }
  MinMaxNormalise(f.reuse_distance);
  MinMaxNormalise(f.future_frequency);
  MinMaxNormalise(f.size);
  MinMaxNormalise(f.lifetime);
  return f;
}

double Heat(const HeatWeights& wt, const HeatFeatures& f, size_t i) {
  return wt.w_f * f.future_frequency[i] - wt.w_r * f.reuse_distance[i] - wt.w_s * f.size[i] +
         wt.w_l * f.lifetime[i];
}

KernelHeats AdjustHeats(const Workload& w, size_t k, uint64_t dram_limit_bytes, const HeatWeights& start,
                        int max_iterations) {
  const HeatFeatures f = ComputeHeatFeatures(w, k);
  const size_t n = w.live_at(k).size();
  KernelHeats out;
  out.weights = start;
  out.heat.resize(n);
  auto recompute = [&] {
    for (size_t i = 0; i < n; ++i) out.heat[i] = Heat(out.weights, f, i);
    out.hot_bytes = HotBytes(w, k, out.heat, out.weights.threshold);
  };
  recompute();

  const double limit = static_cast<double>(dram_limit_bytes);
  const double live = static_cast<double>(w.live_bytes_at(k));
  // Without a DRAM bottleneck there is nothing to separate: keep the weights
  // (the paper's loop could not terminate here).
  if (w.live_bytes_at(k) <= dram_limit_bytes) {
    out.converged = true;
    return out;
  }
  const double low = 0.9 * limit;
  const double high = 1.1 * limit;
  auto in_range = [&] {
    double hot = static_cast<double>(out.hot_bytes);
    return hot >= low && hot <= high;
  };
  // Algorithm 1: tune w_s when the live set is far above the limit (size is
  // what separates tensors then), otherwise w_r. Raising either weight
  // cools, lowering heats; 2% per step.
  double HeatWeights::*knob = live >= 2.5 * limit ? &HeatWeights::w_s : &HeatWeights::w_r;
  while (!in_range() && out.iterations < max_iterations) {
    double& weight = out.weights.*knob;
    if (static_cast<double>(out.hot_bytes) > high)
      weight *= 1.02;
    else
      weight /= 1.02;
    ++out.iterations;
    recompute();
    // A weight pushed to an extreme no longer changes which tensors are hot:
    // hand over to the other weight (our extension; the paper's loop would
    // spin here).
    if (weight > 1e4 || weight < 1e-4) {
      weight = std::clamp(weight, 1e-4, 1e4);
      if (knob == &HeatWeights::w_s) break;
      knob = &HeatWeights::w_s;
    }
  }
  out.converged = in_range();
  return out;
}

std::vector<std::vector<double>> ComputeAllHeats(const Workload& w, uint64_t dram_limit_bytes,
                                                 HeatWeights start) {
  std::vector<std::vector<double>> heats(w.num_kernels());
  HeatWeights weights = start;
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    KernelHeats kh = AdjustHeats(w, k, dram_limit_bytes, weights);
    heats[k] = std::move(kh.heat);
    weights = kh.weights;
  }
  return heats;
}

}  // namespace tensortier
