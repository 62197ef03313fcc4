// `tensortier keys` and the security flags of `learner` and `worker`
// (CURVE keys, allow-list, --insecure-plaintext); docs/security.md.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "transport/security.h"

namespace tensortier {

struct KeysFlags {
  std::string dir = "keys";
  std::vector<std::string> names;
  bool force = false;
};

// Registers `keys` on `app`; run it with RunKeys when it was given.
CLI::App* AddKeysSubcommand(CLI::App& app, KeysFlags& flags);
int RunKeys(const KeysFlags& flags);

// --secret-key, --authorized-keys, --insecure-plaintext on a learner command.
void AddLearnerSecurityOptions(CLI::App* cmd, TransportSecurity& security);
// --secret-key, --server-key, --insecure-plaintext on a worker command.
void AddWorkerSecurityOptions(CLI::App* cmd, TransportSecurity& security);

}  // namespace tensortier
