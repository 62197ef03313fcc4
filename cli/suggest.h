// "Did you mean ...?": the nearest of a set of valid names to a mistyped one.
#pragma once

#include <string>
#include <vector>

namespace tensortier {

// Edit distance (insertions, deletions, substitutions, and swaps of two
// neighbouring characters each count 1).
size_t EditDistance(const std::string& a, const std::string& b);

// The name of `names` nearest to `typo`, or "" when none is near enough to
// be what was meant: at most 2 edits, and fewer than half of the typo's
// characters. Ties go to the first in `names`.
std::string NearestName(const std::string& typo, const std::vector<std::string>& names);

}  // namespace tensortier
