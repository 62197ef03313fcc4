// The learner checkpoint's own sections: the agent comes back with its
// weights and settings, a checkpoint of another run is refused saying why,
// a payload version from the future is refused, records round-trip, and a
// resume finds the newest checkpoint that verifies.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "learner/checkpoint_sections.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallDqn;
using testing::SmallEnv;
using testing::SmallWorkload;

class LearnerCheckpointSections : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = ::testing::TempDir() + "/checkpoint_sections_" + std::to_string(getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir());
    config_.workload = SmallWorkload();
    config_.env = SmallEnv(config_.workload);
    config_.run_dir = run_dir_;
    config_.dqn = SmallDqn(3);
  }
  void TearDown() override { std::filesystem::remove_all(run_dir_); }
  std::string dir() const { return run_dir_ + "/checkpoints"; }

  std::string Payload(const PlacementAgent& agent) {
    ByteWriter w;
    SaveAgentSection(w, agent, dir(), config_.workload.Signature(), config_.env.dram_limit_bytes);
    return w.bytes();
  }

  std::string run_dir_;
  LearnerConfig config_;
};

TEST_F(LearnerCheckpointSections, TheAgentComesBackWithItsWeightsAndSettings) {
  DqnConfig trained = SmallDqn(9);
  trained.hidden = {24, 24};  // the checkpoint's shape wins over the config's
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", trained.ToJson());
  const std::string payload = Payload(*agent);
  EXPECT_TRUE(std::filesystem::exists(dir() + "/dqn.ckpt"));  // where `export` looks
  ByteReader r(payload);
  const AgentSection s = LoadAgentSection(r);
  EXPECT_TRUE(r.done());
  EXPECT_EQ(s.payload_version, kCheckpointPayloadVersion);
  EXPECT_EQ(s.agent, "dqn");
  LearnerConfig c = config_;
  std::unique_ptr<PlacementAgent> back = RestoreAgent(s, c, dir());
  EXPECT_EQ(back->SerializeWeights(), agent->SerializeWeights());
  EXPECT_EQ(c.dqn.hidden, trained.hidden);
  EXPECT_EQ(c.dqn.device, config_.dqn.device);  // the device stays this run's
}

TEST_F(LearnerCheckpointSections, ACheckpointOfAnotherRunIsRefusedSayingWhy) {
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", SmallDqn(1).ToJson());
  const std::string payload = Payload(*agent);
  auto refusal = [&](LearnerConfig c) -> std::string {
    ByteReader r(payload);
    try {
      RestoreAgent(LoadAgentSection(r), c, dir());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  LearnerConfig sac = config_;
  sac.agent = AgentKind::kSac;
  EXPECT_EQ(refusal(sac), "the checkpoint holds a dqn agent, not sac");
  LearnerConfig other_dram = config_;
  other_dram.env.dram_limit_bytes += 1;
  EXPECT_EQ(refusal(other_dram), "the checkpoint was trained with another DRAM limit");
  LearnerConfig other_workload = config_;
  other_workload.workload = LoadWorkloadSpec("synthetic:resnet:3");
  EXPECT_EQ(refusal(other_workload), "the checkpoint was trained on another workload");
}

TEST_F(LearnerCheckpointSections, APayloadVersionFromTheFutureIsRefused) {
  ByteWriter w;
  w.U64(kCheckpointPayloadVersion + 1);
  ByteReader r(w.bytes());
  EXPECT_THROW(LoadAgentSection(r), CheckpointError);
}

TEST_F(LearnerCheckpointSections, RecordsRoundTrip) {
  EpisodeRecord a;
  a.episode = 1;
  a.worker_id = 2;
  a.worker_episode = 3;
  a.steps = 40;
  a.episodic_reward = -1.5;
  a.oom = true;
  a.wall_seconds = 2.25;
  a.backend = "memkind";
  EpisodeRecord b;
  b.episode = 2;
  b.loss = 0.125;
  ByteWriter w;
  SaveRecords(w, {a, b});
  ByteReader r(w.bytes());
  const std::vector<EpisodeRecord> back = LoadRecords(r);
  EXPECT_TRUE(r.done());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].worker_episode, 3u);
  EXPECT_EQ(back[0].steps, 40u);
  EXPECT_EQ(back[0].episodic_reward, -1.5);
  EXPECT_TRUE(back[0].oom);
  EXPECT_EQ(back[0].wall_seconds, 2.25);
  EXPECT_EQ(back[0].backend, "memkind");
  EXPECT_EQ(back[1].loss, 0.125);
}

TEST_F(LearnerCheckpointSections, AResumeFindsTheNewestCheckpointThatVerifies) {
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", SmallDqn(1).ToJson());
  CheckpointStore store(dir(), 3);
  const std::string good = store.Write(10, Payload(*agent));
  const std::string torn = store.Write(20, Payload(*agent));
  std::filesystem::resize_file(torn, std::filesystem::file_size(torn) / 2);
  const FoundCheckpoint found = FindCheckpoint(config_, dir());
  EXPECT_EQ(found.path, good);
  EXPECT_EQ(found.rejected, 1u);
  ByteReader r(found.payload);
  EXPECT_EQ(LoadAgentSection(r).agent, "dqn");
  // Only checkpoints of another run: the refusal says which and why.
  LearnerConfig sac = config_;
  sac.agent = AgentKind::kSac;
  try {
    FindCheckpoint(sac, dir());
    ADD_FAILURE() << "a dqn checkpoint resumed a sac run";
  } catch (const CheckpointError& e) {  // bad input (exit 3), not a failure of the run
    EXPECT_NE(std::string(e.what()).find("holds a dqn agent, not sac"), std::string::npos) << e.what();
  }
}

// Issue 18: `--resume` of a run directory without a checkpoint is bad input
// (CheckpointError: exit 3), whether there is none or none verifies.
TEST_F(LearnerCheckpointSections, NoCheckpointToResumeFromIsACheckpointError) {
  try {
    FindCheckpoint(config_, dir());
    ADD_FAILURE() << "resumed from nothing";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint in " + dir() + " (the run ended before its first one)"),
              std::string::npos) << e.what();
  }
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", SmallDqn(1).ToJson());
  const std::string torn = CheckpointStore(dir(), 3).Write(10, Payload(*agent));
  std::filesystem::resize_file(torn, 10);
  EXPECT_THROW(FindCheckpoint(config_, dir()), CheckpointError);
}

}  // namespace
}  // namespace tensortier
