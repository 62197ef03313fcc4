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

// The q-quantile of `v` (0 <= q <= 1), interpolated linearly between the
// two nearest order statistics; 0 when empty.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  q = std::min(1.0, std::max(0.0, q));
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// A wall-clock duration as the host would give it undisturbed. Other
// processes only ever add time (preemption, cache pollution), so the lower
// quartile of repeated measurements stays at the undisturbed value while up
// to three quarters of them are disturbed, and a rare too-fast reading (a
// quarter at most) cannot pull it down the way a minimum would.
inline double UndisturbedTime(const std::vector<double>& samples_ns) { return Quantile(samples_ns, 0.25); }

}  // namespace tensortier
