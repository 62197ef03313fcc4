// tensortier's exit codes, one set for every subcommand (README: Exit codes).
#pragma once

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>

namespace tensortier {

enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 2,        // the command line or a setting is wrong: unknown flag or key, bad value, conflicting flags
  kExitInput = 3,        // an input file is missing, unreadable or malformed (config, workload, plan, checkpoint)
  kExitFailure = 4,      // the work failed: training failed, every worker died, no episode arrived, ...
};

// An input file that cannot be used; exits with kExitInput.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The exit code of a CLI11 parse error: 0 for --help; kExitInput for the
// config file (missing, malformed) and for a file or directory a flag names
// that does not exist (CLI::ExistingFile and its kin); kExitUsage for the rest.
inline int ExitCodeOf(const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return kExitOk;
  if (dynamic_cast<const CLI::ConfigError*>(&e) || dynamic_cast<const CLI::FileError*>(&e)) return kExitInput;
  if (dynamic_cast<const CLI::ValidationError*>(&e) && std::string(e.what()).find(" does not exist: ") != std::string::npos)
    return kExitInput;
  return kExitUsage;
}

}  // namespace tensortier
