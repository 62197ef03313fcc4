// Help for a mistyped command line: the nearest valid flag or subcommand.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tensortier {

// For each word of `args` (argv without the program) that is no flag of the
// subcommand it follows (nor of `app`), or no subcommand where one is
// expected, a line "--episdoes: unknown flag of train; did you mean
// --episodes?" (without the suggestion when nothing is near).
std::vector<std::string> UnknownWordHints(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace tensortier
