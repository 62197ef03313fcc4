// Structured log lines (common/log.h): one line per event, whatever the
// values hold.
#include <gtest/gtest.h>

#include <string>

#include "common/log.h"

namespace tensortier {
namespace {

std::string LineFor(const std::string& value) {
  ::testing::internal::CaptureStderr();
  LogWarn("probe").kv("host", value).kv("after", 1);
  return ::testing::internal::GetCapturedStderr();
}

// Issue 17: a CR in a registering peer's host name forged a whole logfmt
// line for readers that split on CR (terminals, journald, many shippers).
TEST(Log, ControlCharactersAreEscapedSoNoLineCanBeForged) {
  const std::string forged = "x\rts=2026-01-01T00:00:00.000Z level=error component=learner event=forged";
  const std::string line = LineFor(forged);
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_NE(line.find("host=\"x\\rts=2026-01-01T00:00:00.000Z level=error"), std::string::npos) << line;
  EXPECT_NE(line.find(" after=1\n"), std::string::npos) << line;

  const std::string escapes = LineFor(std::string("a\x1b[31mred\x7f\x01\nb\tc\"d\\e"));
  for (char c : escapes.substr(0, escapes.size() - 1)) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << escapes;
    EXPECT_NE(c, '\x7f') << escapes;
  }
  EXPECT_NE(escapes.find("host=\"a\\x1b[31mred\\x7f\\x01\\nb\\tc\\\"d\\\\e\""), std::string::npos) << escapes;
}

TEST(Log, PlainValuesStayUnquoted) {
  EXPECT_NE(LineFor("worker-3.example").find(" host=worker-3.example after=1\n"), std::string::npos);
  EXPECT_NE(LineFor("").find(" host=\"\" after=1\n"), std::string::npos);
}

}  // namespace
}  // namespace tensortier
