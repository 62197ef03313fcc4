// RUN_DIR/config.toml: the settings of a `train` or `learner` run as the
// config file that repeats it (`tensortier --config RUN_DIR/config.toml train`).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tensortier {

// The top-level settings of `app` and those of `subcommand` (not the other
// subcommands'), every value in force, defaults included, lists as TOML
// arrays; unset values are left out. `workload` is recorded as the
// subcommand's `workload`, and the model flags (whose profile it is) are
// left out. So is where the run goes (`out`, `force`, `resume`): the file
// starts a new run wherever --out says (or runs/<time>).
std::string RunConfigToml(const CLI::App& app, const std::string& subcommand, const std::string& workload);

}  // namespace tensortier
