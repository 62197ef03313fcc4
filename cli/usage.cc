#include "cli/usage.h"

#include <algorithm>

#include "cli/suggest.h"

namespace tensortier {
namespace {

std::vector<std::string> LongFlags(const CLI::App& app) {
  std::vector<std::string> flags;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& name : opt->get_lnames()) flags.push_back("--" + name);
  return flags;
}

}  // namespace

std::vector<std::string> UnknownWordHints(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> hints;
  const std::vector<const CLI::App*> subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  std::vector<std::string> subcommand_names;
  for (const CLI::App* sub : subcommands) subcommand_names.push_back(sub->get_name());
  const CLI::App* current = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (word.rfind("--", 0) == 0) {
      const std::string flag = word.substr(0, word.find('='));
      std::vector<std::string> valid = LongFlags(*current);
      if (current != &app) {
        const std::vector<std::string> top = LongFlags(app);
        valid.insert(valid.end(), top.begin(), top.end());
      }
      if (std::find(valid.begin(), valid.end(), flag) != valid.end()) continue;
      const std::string near = NearestName(flag, valid);
      hints.push_back(flag + ": unknown flag" + (current == &app ? "" : " of " + current->get_name()) +
                      (near.empty() ? "" : "; did you mean " + near + "?"));
      continue;
    }
    if (current != &app || word.empty() || word[0] == '-') continue;
    // At the top: a subcommand, or the value of a top-level option.
    auto sub = std::find(subcommand_names.begin(), subcommand_names.end(), word);
    if (sub != subcommand_names.end()) {
      current = subcommands[static_cast<size_t>(sub - subcommand_names.begin())];
      continue;
    }
    const bool option_value = i > 0 && args[i - 1].rfind("--", 0) == 0 && args[i - 1].find('=') == std::string::npos;
    if (option_value) continue;
    const std::string near = NearestName(word, subcommand_names);
    hints.push_back(word + ": unknown subcommand" + (near.empty() ? "" : "; did you mean " + near + "?"));
    break;  // the flags after it are of a subcommand not known
  }
  return hints;
}

}  // namespace tensortier
