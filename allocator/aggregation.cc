#include "allocator/aggregation.h"

#include "common/named_enum.h"

namespace tensortier {

const char* BlockClassName(BlockClass c) {
  static constexpr EnumName<BlockClass> kNames[] = {
      {BlockClass::kOwn, "own"}, {BlockClass::kSmall, "small"}, {BlockClass::kLongLived, "long-lived"}};
  return NameOfEnumOr(kNames, c, "?");
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
