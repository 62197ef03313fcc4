// Config files (--config FILE): the subset of TOML that CLI11 reads, checked
// strictly before CLI11 sees it. A file that is not that (binary data, an
// unterminated string or section header, a key without a value, arrays in
// arrays, more than kMaxConfigBytes) or that sets a key no option has, or
// one key twice, is a CLI::ConfigError "FILE:LINE: ..." naming the key (and
// the nearest valid one). An empty file, or one of comments only, sets
// nothing. The grammar (docs: README "Config files"):
//   # comment
//   [train]                      a subcommand's section; keys below are its
//   key = value                  value: "string", 'string', number, true,
//                                false, a bare word, or [v, v, ...] (may span lines)
//   train.key = value            the same key outside the section
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tensortier {

constexpr size_t kMaxConfigBytes = 1 << 20;

// The keys a config file may set for `app`: its options' long names, and
// "SUB.name" for each subcommand's (help and --config excluded).
std::vector<std::string> ConfigKeys(const CLI::App& app);

// Throws CLI::ConfigError "PATH:LINE: ..." for the first problem of `text`.
void CheckConfigText(const std::string& text, const std::string& path, const std::vector<std::string>& keys);

// Installs --config on `app` (one file) with a formatter that reads at most
// kMaxConfigBytes, checks the text with CheckConfigText against
// ConfigKeys(app), and only then hands it to CLI11's TOML reader.
CLI::Option* SetStrictConfig(CLI::App& app, const std::string& help);

}  // namespace tensortier
