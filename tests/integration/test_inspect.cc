// `tensortier inspect` reads both kinds of checkpoint a run writes: the
// learner's (.ttckpt) and the agent's (.ckpt), and refuses torn or corrupt
// ones as bad input (exit 3).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "tests/integration/process.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

// The value of the line of `text` whose key, padded to `width`, is `key`;
// "" if there is none.
std::string Field(const std::string& text, const std::string& key, size_t width = 15) {
  std::string padded = key;
  if (padded.size() < width) padded.resize(width, ' ');
  padded += ' ';
  const size_t at = text.find("\n" + padded);
  if (at == std::string::npos) return "";
  const size_t start = at + 1 + padded.size();
  return text.substr(start, text.find('\n', start) - start);
}

TEST(Inspect, ReadsBothKindsOfCheckpoint) {
  const fs::path dir = fs::temp_directory_path() / ("tensortier-inspect-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = (dir / "run").string();
  ChildProcess train({"train", "--workload", "synthetic:tiny:3:65536", "--episodes", "6", "--workers", "1",
                      "--metrics-address", "off", "--demonstrations", "none", "--baselines", "none",
                      "--learning-starts", "16", "--out", run},
                     (dir / "train.log").string());
  ASSERT_EQ(train.Wait(std::chrono::seconds(120)), 0) << ReadFile((dir / "train.log").string());
  const auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  std::string learner_checkpoint;
  for (const auto& e : fs::directory_iterator(run + "/checkpoints"))
    if (e.path().extension() == ".ttckpt") learner_checkpoint = std::max(learner_checkpoint, e.path().string());
  ASSERT_FALSE(learner_checkpoint.empty());

  ChildProcess a({"inspect", learner_checkpoint}, (dir / "a.log").string());
  ASSERT_EQ(a.Wait(std::chrono::seconds(60)), 0) << ReadFile((dir / "a.log").string());
  const std::string learner = "\n" + ReadFile((dir / "a.log").string());
  EXPECT_EQ(Field(learner, "learner checkpoint"), learner_checkpoint) << learner;
  EXPECT_EQ(Field(learner, "agent"), "dqn");
  EXPECT_EQ(Field(learner, "episodes"), "6");
  EXPECT_EQ(Field(learner, "updates"), std::to_string(summary["updates"].get<uint64_t>()));
  EXPECT_NE(Field(learner, "settings").find("\"hidden\":[128,128]"), std::string::npos) << learner;
  EXPECT_EQ(Field(learner, "  transitions_ingested", 30),
            std::to_string(summary["counters"]["transitions_ingested"].get<uint64_t>()));
  EXPECT_EQ(Field(learner, "records").rfind("6 episodes from 1 workers", 0), 0u) << learner;
  // The best plan when the final checkpoint was written (the greedy rollout
  // after it can only improve on it).
  const std::string best = Field(learner, "best plan");
  ASSERT_NE(best.find(" ms on the cost model"), std::string::npos) << learner;
  const double best_ms = std::stod(best.substr(best.find(", ") + 2));
  EXPECT_GT(best_ms, 0);
  EXPECT_GE(best_ms, summary["best_episode_runtime_ns"].get<double>() / 1e6 - 0.001);

  ChildProcess b({"inspect", run + "/checkpoints/dqn.ckpt"}, (dir / "b.log").string());
  ASSERT_EQ(b.Wait(std::chrono::seconds(60)), 0) << ReadFile((dir / "b.log").string());
  const std::string agent = "\n" + ReadFile((dir / "b.log").string());
  EXPECT_EQ(Field(agent, "agent"), "dqn") << agent;
  EXPECT_EQ(Field(agent, "updates"), std::to_string(summary["updates"].get<uint64_t>()));

  // A flipped byte and a torn file are bad input, named.
  std::string bytes = ReadFile(learner_checkpoint);
  bytes[bytes.size() / 2] ^= 0x20;
  WriteFileAtomically((dir / "flipped.ttckpt").string(), bytes);
  ChildProcess c({"inspect", (dir / "flipped.ttckpt").string()}, (dir / "c.log").string());
  EXPECT_EQ(c.Wait(std::chrono::seconds(60)), 3);
  EXPECT_NE(ReadFile((dir / "c.log").string()).find("flipped.ttckpt: checksum mismatch"), std::string::npos)
      << ReadFile((dir / "c.log").string());
  WriteFileAtomically((dir / "torn.ckpt").string(), ReadFile(run + "/checkpoints/dqn.ckpt").substr(0, 100));
  ChildProcess d({"inspect", (dir / "torn.ckpt").string()}, (dir / "d.log").string());
  EXPECT_EQ(d.Wait(std::chrono::seconds(60)), 3);
  EXPECT_NE(ReadFile((dir / "d.log").string()).find("torn.ckpt: truncated"), std::string::npos)
      << ReadFile((dir / "d.log").string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
