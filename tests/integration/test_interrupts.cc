// SIGINT and SIGTERM to `train` and `learner` stop the workers and save the
// run (final checkpoint, metrics.csv, summary.json, the comparison) with the
// command that resumes it; `train` ends when every worker died. The real
// binary, as a user runs it; the waits are hang guards, nothing is timed.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/files.h"
#include "tests/integration/process.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

using testing::TempDir;

std::string ReadIfThere(const std::string& path) { return fs::exists(path) ? ReadFile(path) : ""; }

size_t Lines(const std::string& path) {
  std::istringstream in(ReadIfThere(path));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Waits until the log shows a progress line ("episode      1/..."): training is under way.
bool AwaitProgress(const std::string& log) {
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(50)))
    if (ReadIfThere(log).find("\nepisode ") != std::string::npos) return true;
  return false;
}

size_t CheckpointFiles(const std::string& run) {
  size_t n = 0;
  if (fs::exists(run + "/checkpoints"))
    for (const auto& e : fs::directory_iterator(run + "/checkpoints"))
      n += e.path().extension() == ".ttckpt" ? 1 : 0;
  return n;
}

// What an interrupted run leaves: everything a finished one does.
void ExpectSavedRun(const std::string& run) {
  EXPECT_GE(CheckpointFiles(run), 1u) << "no final checkpoint";
  const size_t rows = Lines(run + "/metrics.csv");
  EXPECT_GE(rows, 2u);
  auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  EXPECT_EQ(summary["episodes"].get<size_t>(), rows - 1);
  auto comparison = nlohmann::json::parse(ReadFile(run + "/comparison.json"));
  EXPECT_GE(comparison.size(), 3u);
  EXPECT_TRUE(fs::exists(run + "/final_plan.ttplan"));
}

TEST(Interrupts, SigintAndSigtermStopTrainWhichSavesTheRunAndResumes) {
  const std::string dir = TempDir("interrupt-train");
  const std::string run = dir + "/run";
  // No periodic checkpoints: the one there is the final one.
  ChildProcess train({"train", "--workload", "synthetic:tiny:3:65536", "--episodes", "10000000", "--workers", "2",
                      "--metrics-address", "off", "--demonstrations", "none", "--baselines", "sentinel",
                      "--checkpoint-every", "0", "--out", run},
                     dir + "/train.log");
  ASSERT_TRUE(AwaitProgress(dir + "/train.log")) << ReadIfThere(dir + "/train.log");
  train.Kill(SIGINT);
  ASSERT_EQ(train.Wait(std::chrono::seconds(120)), 130) << ReadIfThere(dir + "/train.log");
  const std::string log = ReadFile(dir + "/train.log");
  EXPECT_NE(log.find("interrupted by SIGINT after "), std::string::npos) << log;
  EXPECT_NE(log.find("continue with:\n  tensortier --config " + run + "/config.toml train --resume " + run + "\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("2/2 workers exited cleanly"), std::string::npos) << log;  // told to stop, not killed
  ExpectSavedRun(run);
  const size_t rows = Lines(run + "/metrics.csv");

  // The printed command continues the run; SIGTERM stops it the same way.
  ChildProcess resumed({"--config", run + "/config.toml", "train", "--resume", run}, dir + "/resumed.log");
  ASSERT_TRUE(AwaitProgress(dir + "/resumed.log")) << ReadIfThere(dir + "/resumed.log");
  resumed.Kill(SIGTERM);
  ASSERT_EQ(resumed.Wait(std::chrono::seconds(120)), 143) << ReadIfThere(dir + "/resumed.log");
  const std::string resumed_log = ReadFile(dir + "/resumed.log");
  EXPECT_NE(resumed_log.find("resumed from " + run + "/checkpoints/learner-"), std::string::npos) << resumed_log;
  EXPECT_NE(resumed_log.find("interrupted by SIGTERM after "), std::string::npos) << resumed_log;
  ExpectSavedRun(run);
  EXPECT_GT(Lines(run + "/metrics.csv"), rows);
  fs::remove_all(dir);
}

TEST(Interrupts, SigtermStopsALearnerWhichTellsItsWorkersAndSavesTheRun) {
  const std::string dir = TempDir("interrupt-learner");
  const std::string run = dir + "/run";
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePort());
  ChildProcess learner({"learner", "--bind", endpoint, "--workload", "synthetic:tiny:3:65536", "--episodes",
                        "10000000", "--metrics-address", "off", "--demonstrations", "none", "--baselines", "none",
                        "--heartbeat-ms", "200", "--out", run},
                       dir + "/learner.log");
  ChildProcess worker({"worker", "--connect", endpoint, "--give-up-seconds", "60", "--metrics-address", "off"},
                      dir + "/worker.log");
  ASSERT_TRUE(AwaitProgress(dir + "/learner.log")) << ReadIfThere(dir + "/learner.log");
  learner.Kill(SIGTERM);
  ASSERT_EQ(learner.Wait(std::chrono::seconds(120)), 143) << ReadIfThere(dir + "/learner.log");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(60)), 0) << ReadIfThere(dir + "/worker.log");  // told to shut down
  const std::string log = ReadFile(dir + "/learner.log");
  EXPECT_NE(log.find("continue with:\n  tensortier --config " + run + "/config.toml learner --resume " + run + "\n"),
            std::string::npos)
      << log;
  ExpectSavedRun(run);
  fs::remove_all(dir);
}

// Both workers refuse the slow tier and exit; train used to wait forever.
TEST(Interrupts, TrainEndsWithTheWorkersErrorWhenEveryWorkerDied) {
  const std::string dir = TempDir("dead-workers");
  ChildProcess train({"train", "--workload", "synthetic:tiny:3:65536", "--episodes", "100", "--workers", "2",
                      "--metrics-address", "off", "--demonstrations", "none", "--baselines", "none", "--slow-tier",
                      "pmem:/nonexistent/dir", "--out", dir + "/run"},
                     dir + "/train.log");
  ASSERT_EQ(train.Wait(std::chrono::seconds(120)), 4) << ReadIfThere(dir + "/train.log");
  const std::string log = ReadFile(dir + "/train.log");
  EXPECT_NE(log.find("training failed: every worker exited: worker-0, worker-1 (exit "), std::string::npos) << log;
  EXPECT_NE(log.find("pmem:/nonexistent/dir: not a directory"), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(dir + "/run/summary.json"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
