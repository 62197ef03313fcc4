// A mistyped command line gets the nearest valid flag or subcommand, and
// every kind of mistake its documented exit code (cli/exit_codes.h).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/config_file.h"
#include "cli/exit_codes.h"
#include "cli/training_flags.h"
#include "cli/usage.h"

namespace tensortier {
namespace {

struct TestApp {
  TestApp() {
    SetStrictConfig(app, "config");
    app.add_option("--log-level", log_level)->check(CLI::IsMember({"debug", "info", "warn", "error"}));
    app.fallthrough();
    AddTrainingOptions(app.add_subcommand("train"), flags);
    AddTrainingOptions(app.add_subcommand("learner"), learner_flags);
    app.add_subcommand("inspect")->add_option("file", file)->required()->check(CLI::ExistingFile);
    app.require_subcommand(1);
  }
  // The exit code main.cc gives for `args`.
  int ExitCode(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      return ExitCodeOf(e);
    }
  }
  CLI::App app;
  std::string log_level = "info", file;
  TrainingFlags flags, learner_flags;
};

TEST(Usage, AMistypedFlagGetsTheNearestOne) {
  TestApp t;
  EXPECT_EQ(UnknownWordHints(t.app, {"train", "--episdoes", "3"}),
            (std::vector<std::string>{"--episdoes: unknown flag of train; did you mean --episodes?"}));
  EXPECT_EQ(UnknownWordHints(t.app, {"train", "--dram_fraction=0.3", "--episodes", "3"}),
            (std::vector<std::string>{"--dram_fraction: unknown flag of train; did you mean --dram-fraction?"}));
  EXPECT_EQ(UnknownWordHints(t.app, {"--log-levle", "debug", "train"}),
            (std::vector<std::string>{"--log-levle: unknown flag; did you mean --log-level?"}));
  EXPECT_EQ(UnknownWordHints(t.app, {"trian", "--episodes", "3"}),
            (std::vector<std::string>{"trian: unknown subcommand; did you mean train?"}));
  EXPECT_EQ(UnknownWordHints(t.app, {"train", "--zzzzzzz"}),
            (std::vector<std::string>{"--zzzzzzz: unknown flag of train"}));
  // Top-level flags after the subcommand are valid; so is what is right.
  EXPECT_TRUE(UnknownWordHints(t.app, {"--log-level", "warn", "train", "--episodes", "3", "--log-level", "debug"}).empty());
}

TEST(Usage, ExitCodesSayWhatKindOfMistake) {
  EXPECT_EQ(TestApp().ExitCode({"train", "--episodes", "3"}), kExitOk);
  EXPECT_EQ(TestApp().ExitCode({"train", "--log-level", "debug"}), kExitOk);  // after the subcommand too
  EXPECT_EQ(TestApp().ExitCode({"--help"}), kExitOk);
  EXPECT_EQ(TestApp().ExitCode({"train", "--episdoes", "3"}), kExitUsage);
  EXPECT_EQ(TestApp().ExitCode({"train", "--episodes", "abc"}), kExitUsage);
  EXPECT_EQ(TestApp().ExitCode({"train", "--agent", "ppo"}), kExitUsage);
  EXPECT_EQ(TestApp().ExitCode({"--log-level", "verbose", "train"}), kExitUsage);
  EXPECT_EQ(TestApp().ExitCode({}), kExitUsage);
  EXPECT_EQ(TestApp().ExitCode({"--config", "/nonexistent/run.toml", "train"}), kExitInput);
  EXPECT_EQ(TestApp().ExitCode({"inspect", "/nonexistent/file.ttwl"}), kExitInput);
}

}  // namespace
}  // namespace tensortier
