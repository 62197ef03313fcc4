#include "allocator/aggregation.h"

namespace tensortier {

const char* BlockClassName(BlockClass c) {
  switch (c) {
    case BlockClass::kOwn: return "own";
    case BlockClass::kSmall: return "small";
    case BlockClass::kLongLived: return "long-lived";
  }
  return "?";
}

std::string AggregationOptions::Describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += '+';
    s += name;
  };
  add(batch_small_tensors, "batching");
  add(adjoin_long_lived, "adjoining");
  add(contiguous_migration, "contiguous");
  return s.empty() ? "none" : s;
}

}  // namespace tensortier
