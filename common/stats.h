// Small order statistics shared by the executor and the benchmarks.
#pragma once

#include <algorithm>
#include <vector>

namespace tensortier {

// The median of `v` (mean of the middle two for an even count); 0 when empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace tensortier
