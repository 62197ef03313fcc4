#include "learner/convergence.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tensortier {

bool Converged(const std::vector<double>& rewards, const std::vector<uint64_t>& updates, uint32_t window_size,
               double tolerance_fraction) {
  const size_t window = window_size;
  if (window == 0) return false;
  std::vector<double> trained;
  for (size_t i = 0; i < rewards.size(); ++i)
    if (updates[i] > 0) trained.push_back(rewards[i]);
  if (trained.size() < window + 1) return false;
  const auto first = trained.end() - static_cast<std::ptrdiff_t>(window);
  const double best_before = *std::max_element(trained.begin(), first);
  const double lo = *std::min_element(first, trained.end());
  const double hi = *std::max_element(first, trained.end());
  const double best = std::max(best_before, hi);
  const double tolerance = tolerance_fraction * std::max(1.0, std::abs(best));
  return hi - lo <= tolerance && hi <= best_before + tolerance;
}

}  // namespace tensortier
