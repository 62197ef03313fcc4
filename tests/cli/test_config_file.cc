// Config files are checked strictly (cli/config_file.h) and a run's
// config.toml repeats the run (cli/run_config.h).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cli/config_file.h"
#include "cli/run_config.h"
#include "cli/suggest.h"
#include "cli/training_flags.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

// An app shaped like main.cc's: --log-level, --config, `train` with the
// training flags and two model flags, and `learner`.
struct TestApp {
  TestApp() {
    SetStrictConfig(app, "config");
    app.add_option("--log-level", log_level)->capture_default_str();
    train = app.add_subcommand("train");
    AddTrainingOptions(train, flags);
    train->add_option("--model", model);
    train->add_option("--batch", batch)->capture_default_str();
    CLI::App* learner = app.add_subcommand("learner");
    AddTrainingOptions(learner, learner_flags);
  }
  void Parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes argv reversed
    app.parse(args);
  }
  CLI::App app;
  CLI::App* train;
  std::string log_level = "info";
  TrainingFlags flags, learner_flags;
  std::string model;
  int batch = 2;
};

std::string WriteTemp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("tt-config-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// The error CheckConfigText gives for `text`, or "" when it accepts it.
std::string ErrorOf(const std::string& text) {
  TestApp t;
  try {
    CheckConfigText(text, "run.toml", ConfigKeys(t.app));
    return "";
  } catch (const CLI::ConfigError& e) {
    return e.what();
  }
}

TEST(Suggest, FindsTheNearestNameOrNone) {
  EXPECT_EQ(NearestName("--episdoes", {"--episodes", "--eval-every", "--seed"}), "--episodes");
  EXPECT_EQ(NearestName("dram_fraction", {"dram-limit-bytes", "dram-fraction"}), "dram-fraction");
  EXPECT_EQ(NearestName("trian", {"train", "learner"}), "train");
  EXPECT_EQ(NearestName("--xyz", {"--episodes", "--seed"}), "");
  EXPECT_EQ(NearestName("", {"a"}), "");
  EXPECT_EQ(EditDistance("abc", "acb"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

TEST(ConfigFile, AcceptsWhatCli11ReadsAndSetsTheFields) {
  const std::string path = WriteTemp("good.toml",
                                     "# a comment\n"
                                     "log-level = \"warn\"\n"
                                     "\n"
                                     "[train]\n"
                                     "episodes = 12   # trailing comment\n"
                                     "agent = 'sac'\n"
                                     "hidden = [48,\n"
                                     "          24]\n"
                                     "baselines = [\"sentinel\", \"ca-lm\"]\n"
                                     "workload = \"synthetic:tiny:3:65536\"\n"
                                     "dram-fraction = 0.5\r\n"
                                     "force = true\n");
  TestApp t;
  t.Parse({"--config", path, "train"});
  EXPECT_EQ(t.log_level, "warn");
  EXPECT_EQ(t.flags.learner.episodes, 12u);
  EXPECT_EQ(t.flags.learner.agent, AgentKind::kSac);
  EXPECT_EQ(t.flags.learner.dqn.hidden, (std::vector<int>{48, 24}));
  EXPECT_EQ(t.flags.baselines, (std::vector<std::string>{"sentinel", "ca-lm"}));
  EXPECT_EQ(t.flags.workload, "synthetic:tiny:3:65536");
  EXPECT_EQ(t.flags.dram_fraction, 0.5);
  EXPECT_TRUE(t.flags.force);
  fs::remove(path);
}

TEST(ConfigFile, AnEmptyFileSetsNothing) {
  for (const std::string text : {"", "\n\n", "# only a comment\n", "   \t\n"}) {
    const std::string path = WriteTemp("empty.toml", text);
    TestApp t;
    t.Parse({"--config", path, "train"});
    EXPECT_EQ(t.flags.learner.episodes, LearnerConfig().episodes);
    fs::remove(path);
  }
}

TEST(ConfigFile, UnknownKeysNameFileLineKeyAndTheNearestKey) {
  EXPECT_EQ(ErrorOf("train.episdoes = 3\n"),
            "run.toml:1: unknown key 'train.episdoes' (did you mean 'train.episodes'?)");
  EXPECT_EQ(ErrorOf("# settings\n[train]\nepisodes = 3\ndram_fraction = 0.3\n"),
            "run.toml:4: unknown key 'train.dram_fraction' (did you mean 'train.dram-fraction'?)");
  EXPECT_EQ(ErrorOf("episodes = 3\n"), "run.toml:1: unknown key 'episodes'");
  EXPECT_EQ(ErrorOf("[traim]\nepisodes = 3\n").rfind("run.toml:1: unknown section '[traim]' (did you mean '[train]'?)", 0),
            0u);
  EXPECT_EQ(ErrorOf("train.episodes = 3\ntrain.episodes = 4\n"),
            "run.toml:2: 'train.episodes' is set twice (lines 1 and 2)");
}

TEST(ConfigFile, MalformedFilesNameFileAndLine) {
  EXPECT_EQ(ErrorOf("[train\nepisodes = 3\n"), "run.toml:1: unterminated section header '[train' (expected ']')");
  EXPECT_EQ(ErrorOf("[train]\nworkload = \"synthetic:tiny\nepisodes = 3\n"),
            "run.toml:2: unterminated string in the value of 'train.workload'");
  EXPECT_EQ(ErrorOf("train.episodes\n"), "run.toml:1: expected '=' after 'train.episodes' (KEY = VALUE)");
  EXPECT_EQ(ErrorOf("train.episodes =\n"), "run.toml:1: 'train.episodes' has no value");
  EXPECT_EQ(ErrorOf("train.episodes = 3 4\n"), "run.toml:1: unexpected '4' after the value of 'train.episodes'");
  EXPECT_EQ(ErrorOf("train.hidden = [1, 2\n"), "run.toml:1: unterminated array in the value of 'train.hidden' (expected ']')");
  EXPECT_EQ(ErrorOf("train.hidden = [1,\n2] # c\n"),
            "run.toml:2: a comment after a multi-line array is not supported");
  EXPECT_EQ(ErrorOf("train.out = \"runs/#1\"\n"), "run.toml:1: '#' inside the value of 'train.out' is not supported");
  EXPECT_EQ(ErrorOf("\n\ntrain.episodes = 3\x01\n"), "run.toml:3: binary data (byte 0x01): not a TOML text file");
}

TEST(ConfigFile, NestingAndSizeAreBounded) {
  // 80,000 nested arrays used to overflow CLI11's stack (exit 139).
  const std::string deep = "train.hidden = " + std::string(80000, '[') + std::string(80000, ']') + "\n";
  EXPECT_EQ(ErrorOf(deep), "run.toml:1: arrays inside arrays in the value of 'train.hidden': no setting takes them");
  const std::string path = WriteTemp("deep.toml", deep);
  TestApp t;
  EXPECT_THROW(t.Parse({"--config", path, "train"}), CLI::ConfigError);
  fs::remove(path);

  const std::string big = WriteTemp("big.toml", std::string(kMaxConfigBytes + 1, '#'));
  TestApp u;
  try {
    u.Parse({"--config", big, "train"});
    ADD_FAILURE() << "a file over the limit was read";
  } catch (const CLI::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(big + ": larger than 1048576 bytes"), std::string::npos) << e.what();
  }
  fs::remove(big);
}

// Random bytes are refused with a message naming the file, whatever they are;
// nothing crashes.
TEST(ConfigFile, RandomBytesAreRefused) {
  std::mt19937_64 rng(18);
  for (int i = 0; i < 200; ++i) {
    std::string bytes(16 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string path = WriteTemp("random.toml", bytes);
    TestApp t;
    try {
      t.Parse({"--config", path, "train"});
      ADD_FAILURE() << "random bytes accepted (seed round " << i << ")";
    } catch (const CLI::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ":", 0), 0u) << e.what();
    }
    fs::remove(path);
  }
}

TEST(RunConfig, RepeatsTheRunWithItsWorkloadAndNotItsDirectory) {
  TestApp first;
  first.Parse({"train", "--episodes", "7", "--hidden", "48", "24", "--baselines", "sentinel", "ca-lm", "--model",
               "resnet18", "--batch", "4", "--out", "runs/a", "--force", "--agent", "sac"});
  const std::string toml = RunConfigToml(first.app, "train", "/abs/runs/a/workload.ttwl");
  EXPECT_NE(toml.find("train.workload=\"/abs/runs/a/workload.ttwl\"\n"), std::string::npos) << toml;
  EXPECT_NE(toml.find("train.hidden=[48, 24]\n"), std::string::npos) << toml;
  EXPECT_NE(toml.find("log-level=\"info\"\n"), std::string::npos) << toml;
  for (const std::string gone : {"train.out", "train.force", "train.model", "train.batch=", "learner."})
    EXPECT_EQ(toml.find(gone), std::string::npos) << gone << " in\n" << toml;

  const std::string path = WriteTemp("run.toml", toml);
  TestApp again;
  again.Parse({"--config", path, "train"});
  EXPECT_EQ(again.flags.workload, "/abs/runs/a/workload.ttwl");
  EXPECT_EQ(again.flags.learner.episodes, 7u);
  EXPECT_EQ(again.flags.learner.agent, AgentKind::kSac);
  EXPECT_EQ(again.flags.learner.sac.hidden, (std::vector<int>{48, 24}));
  EXPECT_EQ(again.flags.baselines, (std::vector<std::string>{"sentinel", "ca-lm"}));
  EXPECT_EQ(again.flags.learner.dqn.ToJson(), first.flags.learner.dqn.ToJson());
  EXPECT_EQ(again.flags.learner.sac.ToJson(), first.flags.learner.sac.ToJson());
  EXPECT_EQ(again.flags.out, "");
  EXPECT_FALSE(again.flags.force);
  EXPECT_EQ(again.model, "");
  // The file it writes is the same again.
  EXPECT_EQ(RunConfigToml(again.app, "train", again.flags.workload), toml);
  fs::remove(path);
}

}  // namespace
}  // namespace tensortier
