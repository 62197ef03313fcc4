// Structured log lines (common/log.h): one line per event, whatever the
// values hold.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/files.h"
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


// Issue 18: with a run directory, info lines go to its log file only;
// warnings and errors to both.
TEST(Log, WithALogFileInfoLinesGoThereOnlyAndWarningsAndErrorsToBoth) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tt-log-" + std::to_string(::getpid()) + ".log")).string();
  std::filesystem::remove(path);
  SetLogFile(path);
  ::testing::internal::CaptureStderr();
  LogInfo("quiet").kv("n", 1);
  LogWarn("loud").kv("n", 2);
  LogError("louder").kv("n", 3);
  LogDebug("hidden");  // below the level: nowhere
  std::string err = ::testing::internal::GetCapturedStderr();
  std::string file = ReadFile(path);
  EXPECT_EQ(err.find("event=quiet"), std::string::npos) << err;
  EXPECT_NE(err.find("level=warn component=tensortier event=loud n=2\n"), std::string::npos) << err;
  EXPECT_NE(err.find("event=louder n=3\n"), std::string::npos) << err;
  EXPECT_NE(file.find("level=info component=tensortier event=quiet n=1\n"), std::string::npos) << file;
  EXPECT_NE(file.find("event=loud n=2\n"), std::string::npos) << file;
  EXPECT_NE(file.find("event=louder n=3\n"), std::string::npos) << file;
  EXPECT_EQ(file.find("event=hidden"), std::string::npos) << file;

  // A service's: info lines on stderr as well; the file is appended to.
  SetLogFile(path, /*info_to_stderr=*/true);
  ::testing::internal::CaptureStderr();
  LogInfo("both");
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("event=both"), std::string::npos) << err;
  file = ReadFile(path);
  EXPECT_NE(file.find("event=quiet"), std::string::npos) << file;
  EXPECT_NE(file.find("event=both"), std::string::npos) << file;

  // Closed: stderr only, as before.
  SetLogFile("");
  ::testing::internal::CaptureStderr();
  LogInfo("after");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("event=after"), std::string::npos);
  EXPECT_EQ(ReadFile(path).find("event=after"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_THROW(SetLogFile("/nonexistent-dir/x/train.log"), std::runtime_error);
}

// What a terminal shows: stdout and stderr on one pseudo-terminal. A log
// line clears the progress line, takes a line of its own, and the progress
// line is drawn again below it.
TEST(Log, ALogLineOnTheTerminalNeverSharesALineWithTheProgressDisplay) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(STDOUT_FILENO), saved_err = ::dup(STDERR_FILENO);
  ::dup2(slave, STDOUT_FILENO);
  ::dup2(slave, STDERR_FILENO);
  ShowProgressLine("episode 1/9");
  ShowProgressLine("episode 2/9");
  LogWarn("slow_worker").kv("worker", 2);
  ShowProgressLine("episode 3/9");
  EndProgressLine();
  std::printf("finished\n");
  std::fflush(stdout);
  ::dup2(saved_out, STDOUT_FILENO);
  ::dup2(saved_err, STDERR_FILENO);
  ::close(saved_out);
  ::close(saved_err);
  ::close(slave);
  std::string screen;
  char buf[4096];
  // Until the last line has come through the terminal (a hang guard, not a timing).
  for (int waited_ms = 0; screen.find("finished\r\n") == std::string::npos && waited_ms < 30000; waited_ms += 50) {
    pollfd pfd{master, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0 || !(pfd.revents & POLLIN)) continue;
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    screen.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  // The terminal turns "\n" into "\r\n".
  const std::string clear = "\r\033[K";
  const size_t warn = screen.find("level=warn");
  ASSERT_NE(warn, std::string::npos) << screen;
  const size_t line_start = screen.rfind("ts=", warn);
  EXPECT_EQ(screen.substr(0, line_start),
            clear + "episode 1/9" + clear + "episode 2/9" + clear)  // cleared before the log line
      << screen;
  const size_t eol = screen.find("worker=2\r\n", warn);
  ASSERT_NE(eol, std::string::npos) << screen;
  EXPECT_EQ(screen.substr(eol + 10), "episode 2/9" + clear + "episode 3/9\r\nfinished\r\n") << screen;
}

}  // namespace
}  // namespace tensortier
