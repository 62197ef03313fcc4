#include "cli/keys.h"

#include <cstdio>

namespace tensortier {

CLI::App* AddKeysSubcommand(CLI::App& app, KeysFlags& flags) {
  auto* keys = app.add_subcommand(
      "keys", "Generate CURVE key pairs for the fleet: DIR/NAME.key (secret, mode 0600) and DIR/NAME.pub");
  keys->add_option("names", flags.names, "Key names, e.g. learner worker-1 worker-2")->required();
  keys->add_option("--dir", flags.dir, "Directory to write the key files into")->capture_default_str();
  keys->add_flag("--force", flags.force, "Replace existing key files");
  keys->footer(
      "Give the learner learner.key (--secret-key) and a directory or file holding the workers' .pub files "
      "(--authorized-keys); give each worker its own NAME.key (--secret-key) and learner.pub (--server-key). "
      "See docs/security.md.");
  return keys;
}

int RunKeys(const KeysFlags& flags) {
  RequireCurve();
  for (const std::string& name : flags.names) {
    CurveKeyPair pair = WriteKeyPairFiles(flags.dir, name, flags.force);
    std::printf("%s/%s.key (secret, 0600)  %s/%s.pub  public key %s\n", flags.dir.c_str(), name.c_str(),
                flags.dir.c_str(), name.c_str(), pair.public_key.c_str());
  }
  return 0;
}

namespace {

void AddCommon(CLI::App* cmd, TransportSecurity& s, const char* whose) {
  cmd->add_option("--secret-key", s.secret_key_file,
                  std::string("CURVE key pair file of this ") + whose +
                      " (NAME.key from `tensortier keys`, mode 0600); turns on CURVE");
  cmd->add_flag("--insecure-plaintext", s.insecure_plaintext,
                "Allow plain text (no authentication, no encryption) on a non-loopback address; "
                "for trusted networks only");
}

}  // namespace

void AddLearnerSecurityOptions(CLI::App* cmd, TransportSecurity& s) {
  AddCommon(cmd, s, "learner");
  cmd->add_option("--authorized-keys", s.authorized_keys,
                  "Worker public keys the learner admits: a directory of NAME.pub files or one file of keys");
}

void AddWorkerSecurityOptions(CLI::App* cmd, TransportSecurity& s) {
  AddCommon(cmd, s, "worker");
  cmd->add_option("--server-key", s.server_key, "The learner's public key: learner.pub or its Z85 text");
}

}  // namespace tensortier
