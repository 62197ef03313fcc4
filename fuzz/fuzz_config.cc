// Fuzz target: the config loader. `tensortier --config FILE` is the strict
// check of cli/config_file.h (SetStrictConfig: size, grammar, nesting, known
// keys) in front of CLI11's TOML reader, feeding options of the same kinds
// main.cc declares (strings, integers with ranges, doubles, lists, flags,
// IsMember checks) in [train], [learner] and [worker] sections. Bad files
// must end in a CLI::Error, nothing else; and a text the check accepts must
// read in CLI11 without an error (the check is what stands between a file
// and CLI11's reader, which overflows its stack on arrays nested deep).
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/config_file.h"

namespace {

struct Options {
  std::string workload, agent = "dqn", mode = "sync", bind = "tcp://127.0.0.1:5555", out, secret_key;
  double dram_fraction = 0.2, max_seconds = 0;
  uint64_t episodes = 400, seed = 1;
  uint32_t heartbeat_ms = 1000, min_workers = 1;
  std::vector<int> hidden = {128, 128};
  int batch_size = 32, workers = 2;
  bool prometheus = false, insecure = false;
};

void AddCommon(CLI::App* cmd, Options& o) {
  cmd->add_option("--workload", o.workload);
  cmd->add_option("--dram-fraction", o.dram_fraction)->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--episodes", o.episodes)->check(CLI::Range(1, 10000000));
  cmd->add_option("--agent", o.agent)->check(CLI::IsMember({"dqn", "sac"}));
  cmd->add_option("--mode", o.mode)->check(CLI::IsMember({"sync", "async"}));
  cmd->add_option("--seed", o.seed);
  cmd->add_option("--hidden", o.hidden);
  cmd->add_option("--batch-size", o.batch_size)->check(CLI::Range(1, 65536));
  cmd->add_option("--out", o.out);
  cmd->add_option("--max-seconds", o.max_seconds);
  cmd->add_option("--heartbeat-ms", o.heartbeat_ms)->check(CLI::Range(10, 600000));
}

const std::string& TempPath() {
  static const std::string path = "/tmp/tensortier-fuzz-config-" + std::to_string(::getpid()) + ".toml";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The check and the parser alone: what the check accepts, CLI11 reads.
  static const std::vector<std::string> kKeys = [] {
    CLI::App app{"keys"};
    Options o;
    AddCommon(app.add_subcommand("train"), o);
    return tensortier::ConfigKeys(app);
  }();
  bool accepted = false;
  try {
    tensortier::CheckConfigText(text, "fuzz.toml", kKeys);
    accepted = true;
  } catch (const CLI::ConfigError&) {
  }
  if (accepted) {
    try {
      std::istringstream in(text);
      (void)CLI::ConfigTOML().from_config(in);
    } catch (const CLI::Error& e) {
      std::fprintf(stderr, "the strict check accepted a text CLI11 refuses: %s\n", e.what());
      std::abort();
    }
  }
  // The whole path: --config FILE, then a subcommand picks up its section.
  FILE* f = std::fopen(TempPath().c_str(), "wb");
  if (!f) return 0;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (const char* sub : {"train", "learner", "worker"}) {
    CLI::App app{"fuzz"};
    app.require_subcommand(1);
    tensortier::SetStrictConfig(app, "Config file");
    std::string log_level = "info";
    app.add_option("--log-level", log_level);
    Options train_o, learner_o, worker_o;
    auto* train = app.add_subcommand("train");
    AddCommon(train, train_o);
    train->add_option("--workers", train_o.workers)->check(CLI::Range(1, 256));
    train->add_flag("--prometheus", train_o.prometheus);
    auto* learner = app.add_subcommand("learner");
    AddCommon(learner, learner_o);
    learner->add_option("--bind", learner_o.bind);
    learner->add_option("--min-workers", learner_o.min_workers)->check(CLI::Range(1, 100000));
    learner->add_option("--secret-key", learner_o.secret_key);
    learner->add_flag("--insecure-plaintext", learner_o.insecure);
    auto* worker = app.add_subcommand("worker");
    worker->add_option("--connect", worker_o.bind);
    worker->add_option("--give-up-seconds", worker_o.max_seconds);
    worker->add_flag("--insecure-plaintext", worker_o.insecure);
    std::vector<std::string> args = {"--config", TempPath(), sub};  // CLI11 parses a reversed vector
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
      (void)app.config_to_str(true, false);
    } catch (const CLI::Error&) {
    }
  }
  return 0;
}
