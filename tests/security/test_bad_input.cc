// Inputs that fuzzing found (fuzz/corpus/*/regression-*), checked directly.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"
#include "protocol/codec.h"

namespace tensortier {
namespace {

TEST(BadInput, SmallFrameCannotDecodeIntoHugeMessage) {
  // 160 bytes whose list claims millions of elements: once decoded into
  // hundreds of MB in seconds, within the flat traversal limit.
  const std::string frame =
      ReadFile(std::string(TENSORTIER_SOURCE_DIR) + "/fuzz/corpus/protocol/regression-amplified-list");
  ASSERT_EQ(frame.size(), 160u);
  // Before the fix it was refused too, but only after building the huge
  // list (seconds, hundreds of MB): the read limit must stop it first.
  DecodeResult r = DecodeMessage(frame.data(), frame.size());
  ASSERT_TRUE(std::holds_alternative<DecodeError>(r));
  const DecodeError& e = std::get<DecodeError>(r);
  EXPECT_EQ(e.reason, DecodeErrorReason::kMalformed);
  EXPECT_NE(e.detail.find("traversal limit"), std::string::npos) << e.detail;
}

TEST(BadInput, EveryRegressionInputOfTheProtocolIsRefusedOrSmall) {
  namespace fs = std::filesystem;
  int seen = 0;
  for (const auto& e : fs::directory_iterator(std::string(TENSORTIER_SOURCE_DIR) + "/fuzz/corpus/protocol")) {
    const std::string bytes = ReadFile(e.path().string());
    DecodeResult r = DecodeMessage(bytes.data(), bytes.size());
    if (auto* m = std::get_if<Message>(&r)) {
      EXPECT_LT(EncodeMessage(*m).size(), 64 * bytes.size() + 65536);
    }
    ++seen;
  }
  EXPECT_GT(seen, 5);
}

}  // namespace
}  // namespace tensortier
