#include "cli/suggest.h"

#include <algorithm>

namespace tensortier {

size_t EditDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance, three rows.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::string NearestName(const std::string& typo, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 3;  // at most 2 edits
  for (const std::string& name : names) {
    const size_t d = EditDistance(typo, name);
    if (d < best_distance && 2 * d < std::max<size_t>(typo.size(), 1)) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace tensortier
