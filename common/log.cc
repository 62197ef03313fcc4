#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <unistd.h>

namespace tensortier {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;
// Under g_mu.
std::FILE* g_file = nullptr;
bool g_info_to_stderr = true;
std::string g_progress;      // the progress line shown on the terminal, "" if none
std::string& Component() {
  static std::string c = "tensortier";
  return c;
}
const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}
// C0 controls and DEL: a CR or an ESC from a peer's string (a host name,
// a reason) must not start a forged line or drive the reader's terminal.
bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }
bool NeedsQuotes(const std::string& v) {
  if (v.empty()) return true;
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || IsControl(c)) return true;
  return false;
}
std::string Quote(const std::string& v) {
  if (!NeedsQuotes(v)) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    if (c == '\r') { out += "\\r"; continue; }
    if (c == '\t') { out += "\\t"; continue; }
    if (IsControl(c)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += hex;
      continue;
    }
    out += c;
  }
  return out + "\"";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

LogLevel ParseLogLevel(const std::string& name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  throw std::invalid_argument("unknown log level '" + name + "' (debug, info, warn, error)");
}

void SetLogComponent(const std::string& component) {
  std::lock_guard<std::mutex> lock(g_mu);
  Component() = component;
}

void SetLogFile(const std::string& path, bool info_to_stderr) {
  std::FILE* file = nullptr;
  if (!path.empty()) {
    file = std::fopen(path.c_str(), "ae");
    if (!file) throw std::runtime_error("cannot open the log file " + path);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_file) std::fclose(g_file);
  g_file = file;
  g_info_to_stderr = !file || info_to_stderr;
}

namespace {
const char kClearLine[] = "\r\033[K";
bool StdoutIsTerminal() { return ::isatty(STDOUT_FILENO) == 1; }
}  // namespace

void ShowProgressLine(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (StdoutIsTerminal()) {
    std::fputs(kClearLine, stdout);
    std::fputs(text.c_str(), stdout);
    g_progress = text;
  } else {
    std::fputs(text.c_str(), stdout);
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
}

void EndProgressLine() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_progress.empty()) return;
  std::fputc('\n', stdout);
  std::fflush(stdout);
  g_progress.clear();
}

LogLine::LogLine(LogLevel level, const char* event)
    : enabled_(static_cast<int>(level) >= g_level.load()), level_(level) {
  if (!enabled_) return;
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  std::string component;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    component = Component();
  }
  line_ = std::string("ts=") + ts + " level=" + LevelName(level) + " component=" + Quote(component) +
          " event=" + Quote(event);
}

void LogLine::Append(const char* key, const std::string& value) {
  line_ += ' ';
  line_ += key;
  line_ += '=';
  line_ += Quote(value);
}

LogLine::~LogLine() {
  if (!enabled_) return;
  line_ += '\n';
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_file) {
    std::fwrite(line_.data(), 1, line_.size(), g_file);
    std::fflush(g_file);
  }
  if (level_ < LogLevel::kWarn && !g_info_to_stderr) return;
  if (!g_progress.empty()) {  // off the progress line, and back to it after
    std::fputs(kClearLine, stdout);
    std::fflush(stdout);
  }
  std::fwrite(line_.data(), 1, line_.size(), stderr);
  std::fflush(stderr);
  if (!g_progress.empty()) {
    std::fputs(g_progress.c_str(), stdout);
    std::fflush(stdout);
  }
}

}  // namespace tensortier
