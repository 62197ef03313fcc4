#include "cli/config_file.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <sstream>

#include "cli/suggest.h"

namespace tensortier {
namespace {

void AddKeys(const CLI::App& app, const std::string& prefix, std::vector<std::string>& keys) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == app.get_help_ptr() || opt == app.get_help_all_ptr() || opt == app.get_config_ptr() ||
        !opt->get_configurable())
      continue;
    for (const std::string& name : opt->get_lnames()) keys.push_back(prefix + name);
    if (opt->get_lnames().empty() && opt->get_snames().empty() && !opt->get_name().empty())
      keys.push_back(prefix + opt->get_name());  // a positional, by its name
  }
}

bool IsKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }
bool IsBareChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-.+:/@%").find(c) != std::string_view::npos;
}

// A scanner over the file's text with the line it is on.
class Checker {
 public:
  Checker(const std::string& text, const std::string& path, const std::vector<std::string>& keys)
      : text_(text), path_(path), keys_(keys) {
    for (const std::string& k : keys_) {
      const size_t dot = k.find('.');
      if (dot != std::string::npos) sections_.push_back(k.substr(0, dot));
    }
    std::sort(sections_.begin(), sections_.end());
    sections_.erase(std::unique(sections_.begin(), sections_.end()), sections_.end());
  }

  void Run() {
    if (text_.size() > kMaxConfigBytes)
      throw CLI::ConfigError(path_ + ": " + std::to_string(text_.size()) + " bytes; a config file may have at most " +
                             std::to_string(kMaxConfigBytes));
    for (size_t i = 0, line = 1; i < text_.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') ++line;
      if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c);
        Fail(line, std::string("binary data (byte ") + hex + "): not a TOML text file");
      }
    }
    while (pos_ < text_.size()) {
      SkipBlanks();
      if (AtLineEnd()) {
        EndLine("");
        continue;
      }
      if (Peek() == '[') {
        Section();
      } else {
        KeyValue();
      }
    }
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  bool AtLineEnd() const { return AtEnd() || Peek() == '\n' || Peek() == '#' || Peek() == '\r'; }
  void SkipBlanks() {
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
  }
  [[noreturn]] void Fail(size_t line, const std::string& what) const {
    throw CLI::ConfigError(path_ + ":" + std::to_string(line) + ": " + what);
  }
  static std::string Shown(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", u);
    return std::string("byte ") + hex;
  }
  // The rest of the line: blanks, then a comment or nothing.
  void EndLine(const std::string& after) {
    SkipBlanks();
    if (Peek() == '#')
      while (!AtEnd() && Peek() != '\n') ++pos_;
    if (Peek() == '\r') ++pos_;
    if (AtEnd()) return;
    if (Peek() != '\n') Fail(line_, "unexpected " + Shown(Peek()) + after);
    ++pos_;
    ++line_;
  }
  std::string Word() {
    const size_t start = pos_;
    while (IsKeyChar(Peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void Section() {
    const size_t line = line_;
    ++pos_;
    if (Peek() == '[') Fail(line, "arrays of tables ([[...]]) are not settings of tensortier");
    SkipBlanks();
    const std::string name = Word();
    SkipBlanks();
    if (Peek() != ']') {
      if (AtLineEnd()) Fail(line, "unterminated section header '[" + name + "' (expected ']')");
      Fail(line, "unexpected " + Shown(Peek()) + " in the section header '[" + name + "'");
    }
    ++pos_;
    if (name.empty()) Fail(line, "empty section name");
    if (name != "default" && std::find(sections_.begin(), sections_.end(), name) == sections_.end()) {
      const std::string near = NearestName(name, sections_);
      Fail(line, "unknown section '[" + name + "]'" + (near.empty() ? "" : " (did you mean '[" + near + "]'?)") +
                     "; sections: " + Join(sections_));
    }
    section_ = name == "default" ? "" : name;
    EndLine(" after the section header '[" + name + "]'");
  }

  void KeyValue() {
    const size_t line = line_;
    if (Peek() == '"' || Peek() == '\'') Fail(line, "quoted keys are not supported: write KEY = VALUE");
    const std::string key = Word();
    if (key.empty()) Fail(line, "unexpected " + Shown(Peek()) + ": expected KEY = VALUE");
    SkipBlanks();
    if (Peek() != '=') Fail(line, "expected '=' after '" + key + "' (KEY = VALUE)");
    ++pos_;
    const std::string full = section_.empty() ? key : section_ + "." + key;
    if (std::find(keys_.begin(), keys_.end(), full) == keys_.end()) {
      const std::string near = NearestName(full, keys_);
      Fail(line, "unknown key '" + full + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
    auto [it, inserted] = seen_.emplace(full, line);
    if (!inserted) Fail(line, "'" + full + "' is set twice (lines " + std::to_string(it->second) + " and " +
                                  std::to_string(line) + ")");
    SkipBlanks();
    if (AtLineEnd()) Fail(line, "'" + full + "' has no value");
    Value(full, 0);
    SkipBlanks();
    // CLI11 joins the lines of an array until one ends with ']'.
    if (line_ != line && Peek() == '#') Fail(line_, "a comment after a multi-line array is not supported");
    EndLine(" after the value of '" + full + "'");
  }

  // One value; arrays iterate, with their depth counted, never recursing
  // more than kMaxNesting deep.
  static constexpr int kMaxNesting = 1;
  void Value(const std::string& key, int depth) {
    const size_t line = line_;
    const char c = Peek();
    if (c == '"' || c == '\'') {
      ++pos_;
      while (!AtEnd() && Peek() != c && Peek() != '\n') {
        if (Peek() == '#') Fail(line, "'#' inside the value of '" + key + "' is not supported");
        if (c == '"' && Peek() == '\\') ++pos_;
        if (!AtEnd() && Peek() != '\n') ++pos_;
      }
      if (Peek() != c) Fail(line, "unterminated string in the value of '" + key + "'");
      ++pos_;
      return;
    }
    if (c == '[') {
      if (depth + 1 > kMaxNesting)
        Fail(line, "arrays inside arrays in the value of '" + key + "': no setting takes them");
      ++pos_;
      bool need_value = true;
      for (;;) {
        SkipArrayBlanks(key);
        if (AtEnd()) Fail(line, "unterminated array in the value of '" + key + "' (expected ']')");
        if (Peek() == ']') {
          ++pos_;
          return;
        }
        if (!need_value) {
          if (Peek() != ',') Fail(line_, "unexpected " + Shown(Peek()) + " in the array of '" + key + "' (expected ',' or ']')");
          ++pos_;
          need_value = true;
          continue;
        }
        if (Peek() == ',') Fail(line_, "empty item in the array of '" + key + "'");
        Value(key, depth + 1);
        need_value = false;
      }
    }
    if (!IsBareChar(c)) Fail(line, "unexpected " + Shown(c) + " in the value of '" + key + "'");
    while (IsBareChar(Peek())) ++pos_;
  }
  void SkipArrayBlanks(const std::string& key) {
    for (;;) {
      SkipBlanks();
      if (Peek() == '\r') {
        ++pos_;
      } else if (Peek() == '\n') {
        ++pos_;
        ++line_;
      } else if (Peek() == '#') {
        Fail(line_, "a comment inside the array of '" + key + "' is not supported");
      } else {
        return;
      }
    }
  }

  static std::string Join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  const std::string& text_;
  const std::string& path_;
  const std::vector<std::string>& keys_;
  std::vector<std::string> sections_;
  size_t pos_ = 0;
  size_t line_ = 1;
  std::string section_;
  std::map<std::string, size_t> seen_;
};

class StrictConfig : public CLI::ConfigTOML {
 public:
  explicit StrictConfig(const CLI::App* app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string path = app_->get_config_ptr()->as<std::string>();
    std::string text(kMaxConfigBytes + 1, '\0');
    input.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(input.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw CLI::ConfigError(path + ": larger than " + std::to_string(kMaxConfigBytes) +
                             " bytes; a config file is a few KiB of TOML");
    CheckConfigText(text, path, ConfigKeys(*app_));
    std::istringstream checked(text);
    return CLI::ConfigTOML::from_config(checked);
  }

 private:
  const CLI::App* app_;
};

}  // namespace

std::vector<std::string> ConfigKeys(const CLI::App& app) {
  std::vector<std::string> keys;
  AddKeys(app, "", keys);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    AddKeys(*sub, sub->get_name() + ".", keys);
  return keys;
}

void CheckConfigText(const std::string& text, const std::string& path, const std::vector<std::string>& keys) {
  Checker(text, path, keys).Run();
}

CLI::Option* SetStrictConfig(CLI::App& app, const std::string& help) {
  CLI::Option* opt = app.set_config("--config", "", help);
  opt->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.config_formatter(std::make_shared<StrictConfig>(&app));
  app.allow_config_extras(CLI::config_extras_mode::error);
  return opt;
}

}  // namespace tensortier
