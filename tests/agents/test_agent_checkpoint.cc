// Agent checkpoint files (.ckpt): the state bytes an agent saves (what the
// learner's checkpoint embeds) and the versioned, checksummed file around
// them that `tensortier export` and `bench` read through
// LoadAgentCheckpoint. A flipped byte, a truncated file, appended bytes and
// another format version are refused with a message that says which; a
// file of the previous release (the bare state) still loads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "agents/sac_agent.h"
#include "envs/placement_env.h"
#include "replay/prioritized_replay.h"
#include "replay/replay_buffer.h"
#include "tests/agents/random_replay.h"

namespace tensortier {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tt_agent_ckpt_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::unique_ptr<PlacementAgent> SmallAgent(const std::string& kind, uint64_t seed) {
  return MakeAgent(kind, R"({"hidden": [16, 16], "batch_size": 8, "seed": )" + std::to_string(seed) + "}", "cpu");
}

std::vector<std::vector<float>> Probes() {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> out(16, std::vector<float>(kObservationSize));
  for (auto& o : out)
    for (float& x : o) x = normal(rng);
  return out;
}

std::vector<int> GreedyActions(const PlacementAgent& agent) {
  std::vector<int> out;
  for (const auto& o : Probes()) out.push_back(agent.Greedy(o.data()));
  return out;
}

// The message LoadAgentCheckpoint refuses `path` with ("" if it loads).
std::string Refusal(const std::string& path) {
  try {
    LoadAgentCheckpoint(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

class AgentCheckpoint : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    agent_ = SmallAgent(GetParam(), 5);
    ReplayBuffer replay = RandomNormalReplay(64, 1);
    std::mt19937_64 rng(2);
    for (int i = 0; i < 5; ++i) agent_->Update(replay, rng);
    path_ = TempPath(GetParam() + ".ckpt");
    agent_->SaveCheckpoint(path_);
    good_ = ReadBytes(path_);
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::unique_ptr<PlacementAgent> agent_;
  std::string path_;
  std::string good_;
};

TEST_P(AgentCheckpoint, RoundTripsThroughFileAndBytes) {
  ASSERT_EQ(good_.compare(0, 8, "TTAGNT01"), 0);
  std::unique_ptr<PlacementAgent> loaded = LoadAgentCheckpoint(path_);
  EXPECT_EQ(loaded->name(), GetParam());
  EXPECT_EQ(loaded->updates(), agent_->updates());
  EXPECT_EQ(loaded->SerializeWeights(), agent_->SerializeWeights());
  EXPECT_EQ(GreedyActions(*loaded), GreedyActions(*agent_));

  // The bytes the learner embeds are the file's payload, and load alike.
  const std::string state = agent_->SaveState();
  EXPECT_EQ(ReadAgentCheckpoint(path_), state);
  std::unique_ptr<PlacementAgent> from_bytes = LoadAgentState(state, "cpu", "embedded state");
  EXPECT_EQ(from_bytes->SerializeWeights(), agent_->SerializeWeights());
  std::unique_ptr<PlacementAgent> other = SmallAgent(GetParam(), 99);
  EXPECT_NE(other->SerializeWeights(), agent_->SerializeWeights());
  other->LoadState(state);
  EXPECT_EQ(other->SerializeWeights(), agent_->SerializeWeights());
  EXPECT_EQ(other->updates(), agent_->updates());
}

TEST_P(AgentCheckpoint, AFlippedByteIsRefused) {
  for (size_t at : {good_.size() / 2, good_.size() - 1, size_t{30}}) {
    std::string bad = good_;
    bad[at] ^= 0x10;
    WriteBytes(path_, bad);
    const std::string why = Refusal(path_);
    EXPECT_NE(why.find("checksum mismatch"), std::string::npos) << at << ": " << why;
    EXPECT_NE(why.find(path_), std::string::npos) << why;
  }
}

TEST_P(AgentCheckpoint, ATruncatedFileIsRefused) {
  for (size_t keep : {good_.size() - 1, good_.size() / 2, size_t{30}}) {
    WriteBytes(path_, good_.substr(0, keep));
    const std::string why = Refusal(path_);
    EXPECT_NE(why.find("truncated"), std::string::npos) << keep << ": " << why;
  }
  WriteBytes(path_, good_.substr(0, 12));  // shorter than the header
  EXPECT_NE(Refusal(path_).find("not a TensorTier agent checkpoint"), std::string::npos) << Refusal(path_);
  WriteBytes(path_, "");
  EXPECT_NE(Refusal(path_).find("not a TensorTier agent checkpoint"), std::string::npos) << Refusal(path_);
}

TEST_P(AgentCheckpoint, AppendedBytesAreRefused) {
  for (const std::string& tail : {std::string(1, '\0'), std::string("PK\x05\x06 trailing junk")}) {
    WriteBytes(path_, good_ + tail);
    const std::string why = Refusal(path_);
    EXPECT_NE(why.find(std::to_string(tail.size()) + " bytes appended"), std::string::npos) << why;
  }
}

TEST_P(AgentCheckpoint, AnotherFormatVersionIsRefused) {
  std::string newer = good_;
  newer[7] = '2';  // "TTAGNT02"
  WriteBytes(path_, newer);
  const std::string why = Refusal(path_);
  EXPECT_NE(why.find("format version \"02\""), std::string::npos) << why;
  EXPECT_NE(why.find("reads version 01"), std::string::npos) << why;
}

TEST_P(AgentCheckpoint, AFileOfThePreviousReleaseStillLoads) {
  // Before the frame, SaveCheckpoint wrote the bare state (a LibTorch
  // archive) to the file: that is what the previous release's runs hold.
  WriteBytes(path_, agent_->SaveState());
  ASSERT_EQ(ReadBytes(path_).compare(0, 2, "PK"), 0);
  std::unique_ptr<PlacementAgent> loaded = LoadAgentCheckpoint(path_);
  EXPECT_EQ(loaded->SerializeWeights(), agent_->SerializeWeights());
  EXPECT_EQ(loaded->updates(), agent_->updates());
  // Unverified, but LibTorch's reader still refuses what is not an archive.
  WriteBytes(path_, agent_->SaveState().substr(0, 200));
  EXPECT_FALSE(Refusal(path_).empty());
}

TEST_P(AgentCheckpoint, ANetworkOfAnotherObservationSizeIsRefused) {
  std::unique_ptr<PlacementAgent> old = MakeAgent(
      GetParam(), R"({"hidden": [16, 16], "batch_size": 8, "observation_size": )" + std::to_string(kObservationSize - 2) + "}",
      "cpu");
  old->SaveCheckpoint(path_);
  const std::string why = Refusal(path_);
  EXPECT_NE(why.find("takes " + std::to_string(kObservationSize - 2) + " observation floats"), std::string::npos) << why;
}

TEST_P(AgentCheckpoint, OtherFilesAreRefused) {
  WriteBytes(path_, "not a checkpoint at all");
  EXPECT_NE(Refusal(path_).find("not a TensorTier agent checkpoint"), std::string::npos) << Refusal(path_);
  // A weights blob is an archive but not an agent's state.
  WriteAgentCheckpoint(path_, agent_->SerializeWeights());
  EXPECT_NE(Refusal(path_).find("is not an agent's state"), std::string::npos) << Refusal(path_);
  EXPECT_NE(Refusal(TempPath("missing.ckpt")), "");
}

INSTANTIATE_TEST_SUITE_P(BothAgents, AgentCheckpoint, ::testing::Values("dqn", "sac"));

TEST(AgentCheckpointFile, LoadCheckpointIntoAnAgentVerifiesToo) {
  std::unique_ptr<PlacementAgent> a = SmallAgent("dqn", 1), b = SmallAgent("dqn", 2);
  const std::string path = TempPath("into.ckpt");
  a->SaveCheckpoint(path);
  std::string bad = ReadBytes(path);
  bad[bad.size() / 2] ^= 1;
  WriteBytes(path, bad);
  const std::string before = b->SerializeWeights();
  try {
    b->LoadCheckpoint(path);
    ADD_FAILURE() << "a corrupt checkpoint was loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b->SerializeWeights(), before);
  // And a SAC state is not a DQN agent's.
  SmallAgent("sac", 1)->SaveCheckpoint(path);
  EXPECT_THROW(b->LoadCheckpoint(path), std::runtime_error);
  EXPECT_EQ(b->SerializeWeights(), before);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tensortier
