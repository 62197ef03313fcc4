// Structured logs: one logfmt line per event on stderr,
//   ts=2026-11-22T01:02:03.456Z level=info component=learner event=worker_joined worker=3
// so that people can read them and machines can parse them.
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace tensortier {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel ParseLogLevel(const std::string& name);  // throws on unknown names
void SetLogComponent(const std::string& component);

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
  std::string line_;
};

inline LogLine LogInfo(const char* event) { return LogLine(LogLevel::kInfo, event); }
inline LogLine LogWarn(const char* event) { return LogLine(LogLevel::kWarn, event); }
inline LogLine LogError(const char* event) { return LogLine(LogLevel::kError, event); }
inline LogLine LogDebug(const char* event) { return LogLine(LogLevel::kDebug, event); }

}  // namespace tensortier
