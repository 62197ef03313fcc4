// Structured logs: one logfmt line per event,
//   ts=2026-11-22T01:02:03.456Z level=info component=learner event=worker_joined worker=3
// so that people can read them and machines can parse them. On stderr, and
// with a log file (SetLogFile: a run directory's train.log) in the file, and
// on stderr only warnings and errors. The progress display (ShowProgressLine)
// and log lines never share a line of the terminal.
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace tensortier {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel ParseLogLevel(const std::string& name);  // throws on unknown names
void SetLogComponent(const std::string& component);

// Every line at or above the level is appended to `path` from now on; on
// stderr only warnings and errors, unless `info_to_stderr` (a service whose
// stderr is collected: docker logs, journald). "" closes the file: every
// line on stderr again. Throws std::runtime_error naming the file when it
// cannot be opened.
void SetLogFile(const std::string& path, bool info_to_stderr = false);

// The progress display, on stdout. On a terminal, one line redrawn in place;
// a log line written to stderr meanwhile clears it first and redraws it
// after. Elsewhere (a pipe, a file) each call prints `text` and a newline.
void ShowProgressLine(const std::string& text);
// Ends the progress line (on a terminal: moves past it) before other output.
void EndProgressLine();

class LogLine {
 public:
  LogLine(LogLevel level, const char* event);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  template <typename T>
  LogLine& kv(const char* key, const T& value) {
    if (enabled_) {
      std::ostringstream os;
      os << value;
      Append(key, os.str());
    }
    return *this;
  }
  LogLine& kv(const char* key, const std::string& value) {
    if (enabled_) Append(key, value);
    return *this;
  }
  LogLine& kv(const char* key, const char* value) { return kv(key, std::string(value)); }

 private:
  void Append(const char* key, const std::string& value);
  bool enabled_;
  LogLevel level_;
  std::string line_;
};

inline LogLine LogInfo(const char* event) { return LogLine(LogLevel::kInfo, event); }
inline LogLine LogWarn(const char* event) { return LogLine(LogLevel::kWarn, event); }
inline LogLine LogError(const char* event) { return LogLine(LogLevel::kError, event); }
inline LogLine LogDebug(const char* event) { return LogLine(LogLevel::kDebug, event); }

}  // namespace tensortier
