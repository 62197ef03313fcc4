// Small order statistics shared by the executor and the benchmarks.
#pragma once

#include <algorithm>
#include <cmath>
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

// A distribution-free confidence interval for the median of the population
// `v` was drawn from: the order statistics x_(k) and x_(n+1-k) cover it with
// probability 1 - 2 P(Binomial(n, 1/2) <= k - 1). The narrowest such interval
// whose confidence reaches `level`; with too few samples for that, [min, max]
// and the confidence it has (5 samples: 93.75%, 3: 75%).
struct MedianInterval {
  double low = 0, high = 0;
  double confidence = 0;
};
inline MedianInterval MedianConfidenceInterval(std::vector<double> v, double level = 0.95) {
  MedianInterval out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  // cdf[j] = P(Binomial(n, 1/2) <= j), from the pmf's recurrence.
  std::vector<double> cdf(n + 1);
  double pmf = std::pow(0.5, static_cast<double>(n)), sum = 0;
  for (size_t j = 0; j <= n; ++j) {
    sum += pmf;
    cdf[j] = sum;
    pmf = pmf * static_cast<double>(n - j) / static_cast<double>(j + 1);
  }
  auto confidence = [&](size_t k) { return std::max(0.0, 1 - 2 * cdf[k - 1]); };
  size_t k = 1;
  while (k + 1 <= (n + 1) / 2 && confidence(k + 1) >= level) ++k;
  out.low = v[k - 1];
  out.high = v[n - k];
  out.confidence = confidence(k);
  return out;
}

}  // namespace tensortier
