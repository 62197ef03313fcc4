// common/hash.h's FNV-1a variant: files and caches depend on its values.
#include <gtest/gtest.h>

#include <string>

#include "common/hash.h"

namespace tensortier {
namespace {

TEST(Fnv1a, IsThisFormatsVariantNotTheStandardOne) {
  EXPECT_EQ(Fnv1a().digest(), 1469598103934665603ull);
  EXPECT_NE(Fnv1a().digest(), 0xcbf29ce484222325ull);  // the standard offset basis
  // One step of the standard algorithm from that basis: xor, then the standard prime.
  EXPECT_EQ(Fnv1a().Bytes("a", 1).digest(), (1469598103934665603ull ^ 'a') * 1099511628211ull);
}

}  // namespace
}  // namespace tensortier
