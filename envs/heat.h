// Tensor heat (DeepTM IV-A) and Algorithm 1's dynamic weight adjustment.
#pragma once

#include <cstdint>
#include <vector>

#include "envs/workload.h"

namespace tensortier {

struct HeatWeights {
  double w_r = 1.0;  // reuse distance (subtracted)
  double w_f = 1.0;  // future access frequency
  double w_s = 1.0;  // size (subtracted)
  double w_l = 1.0;  // lifetime
  double threshold = 0.0;
};

// Min-max-normalised features of the tensors live at kernel k, in
// workload.live_at(k) order.
struct HeatFeatures {
  std::vector<double> reuse_distance;
  std::vector<double> future_frequency;
  std::vector<double> size;
  std::vector<double> lifetime;
};
HeatFeatures ComputeHeatFeatures(const Workload& w, size_t k);

double Heat(const HeatWeights& weights, const HeatFeatures& f, size_t i);

struct KernelHeats {
  std::vector<double> heat;  // per live tensor, live_at(k) order
  HeatWeights weights;       // after adjustment; the next kernel starts from these
  uint64_t hot_bytes = 0;
  int iterations = 0;
  bool converged = false;    // hot bytes ended in [0.9, 1.1] x L_D (or all live fits)
};

// Algorithm 1 at one kernel: starting from `start`, adjust w_s (if live bytes
// >= 2.5 L_D) or else w_r in 2% steps until the hot tensors' bytes are in
// [0.9, 1.1] x dram_limit_bytes, or max_iterations pass.
KernelHeats AdjustHeats(const Workload& w, size_t k, uint64_t dram_limit_bytes,
                        const HeatWeights& start, int max_iterations = 2000);

// Algorithm 1 over the whole iteration, carrying weights from kernel to
// kernel. heats[k][i] is the heat of live_at(k)[i].
std::vector<std::vector<double>> ComputeAllHeats(const Workload& w, uint64_t dram_limit_bytes,
                                                 HeatWeights start = {});

}  // namespace tensortier
