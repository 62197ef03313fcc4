// Issue 18: `train` shows its progress on the terminal and writes its info
// logs to RUN_DIR/train.log; warnings and errors go to both. Each checkpoint
// is logged once (the last one used to be written and logged twice).
// `learner` writes RUN_DIR/learner.log and keeps every line on stderr (a
// service's collector reads it). The real binary; the waits are hang guards.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"
#include "tests/integration/process.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

using testing::TempDir;

const std::vector<std::string> kTiny = {"--workload", "synthetic:tiny:3:65536", "--workers", "2",
                                        "--metrics-address", "off", "--demonstrations", "none",
                                        "--baselines", "none"};

std::vector<std::string> Train(std::vector<std::string> extra) {
  std::vector<std::string> args = {"train"};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(RunLogs, TrainKeepsInfoLogsInTheRunDirectoryAndEachCheckpointIsLoggedOnce) {
  const std::string dir = TempDir("run-logs");
  const std::string run = dir + "/run";
  ChildProcess train(Train({"--episodes", "60", "--checkpoint-every", "20", "--out", run}), dir + "/terminal.log");
  ASSERT_EQ(train.Wait(std::chrono::seconds(300)), 0) << ReadFile(dir + "/terminal.log");
  const std::string terminal = ReadFile(dir + "/terminal.log");
  const std::string log = ReadFile(run + "/train.log");
  // The terminal: the run's header, its progress and its results; no info line.
  EXPECT_NE(terminal.find("log: " + run + "/train.log"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("episode     60/60"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("finished: 60 episodes"), std::string::npos) << terminal;
  EXPECT_EQ(terminal.find("level=info"), std::string::npos) << terminal;
  // Its last lines explain the terms (learner/run_legend.h).
  EXPECT_NE(terminal.find("\nwhat the terms mean:\n"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("\n  normalised cost  "), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("\n  final plan       from the "), std::string::npos) << terminal;
  // The run directory: the info lines, each checkpoint once.
  EXPECT_EQ(Count(log, "event=learner_started"), 1u) << log;
  EXPECT_EQ(Count(log, "event=learner_finished episodes=60"), 1u) << log;
  EXPECT_EQ(Count(log, "event=worker_registered"), 2u) << log;
  for (const char* n : {"000000000020", "000000000040", "000000000060"})
    EXPECT_EQ(Count(log, std::string("event=checkpoint path=") + run + "/checkpoints/learner-" + n + ".ttckpt"), 1u)
        << n << "\n" << log;
  EXPECT_EQ(log.find("event=episode"), std::string::npos);  // progress stays on the terminal
  fs::remove_all(dir);
}

TEST(RunLogs, WarningsReachTheTerminalAndTheRunDirectory) {
  const std::string dir = TempDir("run-logs-warn");
  const std::string run = dir + "/run";
  {
    ChildProcess first(Train({"--episodes", "20", "--checkpoint-every", "10", "--out", run}), dir + "/first.log");
    ASSERT_EQ(first.Wait(std::chrono::seconds(300)), 0) << ReadFile(dir + "/first.log");
  }
  // The newest checkpoint torn: the resume warns that it skips it, and goes on from the one before.
  const std::string torn = run + "/checkpoints/learner-000000000020.ttckpt";
  ASSERT_TRUE(fs::exists(torn));
  fs::resize_file(torn, fs::file_size(torn) / 2);
  ChildProcess resumed({"--config", run + "/config.toml", "train", "--resume", run, "--episodes", "30"},
                       dir + "/terminal.log");
  ASSERT_EQ(resumed.Wait(std::chrono::seconds(300)), 0) << ReadFile(dir + "/terminal.log");
  const std::string terminal = ReadFile(dir + "/terminal.log");
  const std::string log = ReadFile(run + "/train.log");
  const std::string warning = "level=warn component=train event=checkpoint_rejected path=" + torn + " ";
  EXPECT_EQ(Count(terminal, warning), 1u) << terminal;
  EXPECT_EQ(Count(log, warning), 1u) << log;
  EXPECT_EQ(terminal.find("level=info"), std::string::npos) << terminal;
  // The log holds both sessions.
  EXPECT_EQ(Count(log, "event=learner_started"), 2u) << log;
  EXPECT_EQ(Count(log, "event=resumed checkpoint=" + run + "/checkpoints/learner-000000000010.ttckpt"), 1u) << log;
  fs::remove_all(dir);
}

TEST(RunLogs, ALearnerWritesItsLogInTheRunDirectoryAndStillOnStderr) {
  const std::string dir = TempDir("run-logs-learner");
  const std::string run = dir + "/run";
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePort());
  ChildProcess learner({"learner", "--bind", endpoint, "--workload", "synthetic:tiny:3:65536", "--episodes", "20",
                        "--metrics-address", "off", "--demonstrations", "none", "--baselines", "none", "--out", run},
                       dir + "/learner.out");
  ChildProcess worker({"worker", "--connect", endpoint, "--give-up-seconds", "60", "--metrics-address", "off"},
                      dir + "/worker.log");
  ASSERT_EQ(learner.Wait(std::chrono::seconds(300)), 0) << ReadFile(dir + "/learner.out");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(60)), 0) << ReadFile(dir + "/worker.log");
  const std::string out = ReadFile(dir + "/learner.out");
  const std::string log = ReadFile(run + "/learner.log");
  EXPECT_EQ(Count(out, "level=info component=learner event=learner_finished episodes=20"), 1u) << out;
  EXPECT_EQ(Count(log, "level=info component=learner event=learner_finished episodes=20"), 1u) << log;
  EXPECT_EQ(Count(log, "event=worker_registered"), 1u) << log;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
