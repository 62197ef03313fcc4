#include "cli/run_config.h"

#include <algorithm>
#include <sstream>

namespace tensortier {
namespace {

// Keys of the subcommand that do not describe the training: where it goes,
// and the model the workload was profiled from.
const std::vector<std::string> kLeftOut = {"out", "force", "resume", "model", "torchscript",
                                           "batch", "image-size", "classes", "optimizer"};

// CLI11 writes a list default as one quoted, space-separated string (which
// it would read back as one item): numbers only, e.g. "128 128" -> [128, 128].
std::string AsTomlValue(std::string value) {
  const bool quoted_list = value.size() > 2 && value.front() == '"' && value.back() == '"' &&
                           value.find(' ') != std::string::npos &&
                           value.find_first_not_of("\"0123456789.e+- ") == std::string::npos;
  if (!quoted_list) return value;
  std::istringstream items(value.substr(1, value.size() - 2));
  std::string item, joined;
  while (items >> item) joined += (joined.empty() ? "" : ", ") + item;
  return "[" + joined + "]";
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string RunConfigToml(const CLI::App& app, const std::string& subcommand, const std::string& workload) {
  std::istringstream in(app.config_to_str(true, false));
  std::ostringstream top, sub;
  const std::string prefix = subcommand + ".";
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    if (value == "\"\"") continue;  // unset
    if (key.find('.') == std::string::npos) {
      top << key << '=' << AsTomlValue(value) << '\n';
      continue;
    }
    if (key.compare(0, prefix.size(), prefix) != 0) continue;  // another subcommand's
    const std::string name = key.substr(prefix.size());
    if (name == "workload" || std::find(kLeftOut.begin(), kLeftOut.end(), name) != kLeftOut.end()) continue;
    sub << key << '=' << AsTomlValue(value) << '\n';
  }
  std::ostringstream out;
  out << top.str();
  if (!workload.empty()) out << prefix << "workload=" << Quoted(workload) << '\n';
  out << sub.str();
  return out.str();
}

}  // namespace tensortier
