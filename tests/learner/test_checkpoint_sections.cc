// The learner checkpoint's own sections: the agent comes back with its
// weights and settings, a checkpoint of another run is refused saying why,
// counters and records round-trip, a version-01 file (before the schema)
// is refused saying why, and a resume finds the newest checkpoint that
// verifies and reads, past torn files, garbage and messages without an agent.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/files.h"
#include "common/framed_file.h"
#include "envs/workload_capnp.h"
#include "learner/checkpoint_message.h"
#include "learner/checkpoint_sections.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallDqn;
using testing::SmallEnv;
using testing::SmallWorkload;

class LearnerCheckpointSections : public testing::RunDirTest {
 protected:
  LearnerCheckpointSections() : RunDirTest("checkpoint_sections", 3) {}

  // A payload with the agent section alone: all that a resume reads first.
  std::string Payload(const PlacementAgent& agent) {
    capnp::MallocMessageBuilder message;
    SaveAgentSection(message.initRoot<schema::LearnerCheckpoint>().initAgent(), agent, dir(),
                     config_.workload.Signature(), config_.env.dram_limit_bytes);
    return PayloadOf(message);
  }
};

TEST_F(LearnerCheckpointSections, TheAgentComesBackWithItsWeightsAndSettings) {
  DqnConfig trained = SmallDqn(9);
  trained.hidden = {24, 24};  // the checkpoint's shape wins over the config's
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", trained.ToJson());
  const std::string payload = Payload(*agent);
  EXPECT_TRUE(std::filesystem::exists(dir() + "/dqn.ckpt"));  // where `export` looks
  const AgentSection s = ReadAgentSection(payload);
  EXPECT_EQ(s.agent, "dqn");
  EXPECT_EQ(s.agent_config_json, agent->config_json());
  EXPECT_EQ(s.workload_signature, config_.workload.Signature());
  EXPECT_EQ(s.dram_limit_bytes, config_.env.dram_limit_bytes);
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
    try {
      RestoreAgent(ReadAgentSection(payload), c, dir());
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

TEST_F(LearnerCheckpointSections, CountersRoundTripEachInItsOwnField) {
  constexpr uint64_t CheckpointedCounters::*kAll[] = {
      &CheckpointedCounters::frames_received,        &CheckpointedCounters::malformed_frames,
      &CheckpointedCounters::oversized_frames,       &CheckpointedCounters::wrong_version_frames,
      &CheckpointedCounters::unknown_worker_frames,  &CheckpointedCounters::duplicate_batches,
      &CheckpointedCounters::transitions_ingested,   &CheckpointedCounters::workers_registered,
      &CheckpointedCounters::workers_expired,        &CheckpointedCounters::heartbeats_received,
      &CheckpointedCounters::unexpected_messages,    &CheckpointedCounters::worker_errors,
      &CheckpointedCounters::duplicate_reports,      &CheckpointedCounters::episodes_acked,
      &CheckpointedCounters::checkpoints_written,    &CheckpointedCounters::checkpoints_rejected,
      &CheckpointedCounters::measurement_cache_hits, &CheckpointedCounters::measurement_cache_misses,
      &CheckpointedCounters::measurement_cache_redundant};
  static_assert(sizeof(kAll) / sizeof(kAll[0]) * sizeof(uint64_t) == sizeof(CheckpointedCounters),
                "a counter is missing here");
  CheckpointedCounters before;
  for (size_t i = 0; i < std::size(kAll); ++i) before.*kAll[i] = 1000 + i;  // each its own value
  testing::SectionMessage<schema::Counters> section;
  SaveCounters(before, section.Init());
  const CheckpointedCounters after = LoadCounters(section.Read());
  for (size_t i = 0; i < std::size(kAll); ++i) EXPECT_EQ(after.*kAll[i], 1000 + i) << "counter " << i;
}

TEST_F(LearnerCheckpointSections, RecordsRoundTrip) {
  EpisodeRecord a;
  a.episode = 1;
  a.worker_id = 2;
  a.worker_episode = 3;
  a.policy_version = 4;
  a.steps = 40;
  a.step_reward_sum = -0.5;
  a.episodic_reward = -1.5;
  a.normalised_cost = 1.25;
  a.runtime_ns = 5e6;
  a.oom = true;
  a.epsilon = 0.375;
  a.mean_q = -2.5;
  a.best_runtime_ns = 4e6;
  a.wall_seconds = 2.25;
  a.backend = "memkind";
  EpisodeRecord b;
  b.episode = 2;
  b.loss = 0.125;
  testing::SectionMessage<schema::RunSection> section;
  SaveRecords({a, b}, section.Init().initRecords(2));
  const std::vector<EpisodeRecord> back = LoadRecords(section.Read().getRecords());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].episode, 1u);
  EXPECT_EQ(back[0].worker_id, 2u);
  EXPECT_EQ(back[0].worker_episode, 3u);
  EXPECT_EQ(back[0].policy_version, 4u);
  EXPECT_EQ(back[0].steps, 40u);
  EXPECT_EQ(back[0].step_reward_sum, -0.5);
  EXPECT_EQ(back[0].episodic_reward, -1.5);
  EXPECT_EQ(back[0].normalised_cost, 1.25);
  EXPECT_EQ(back[0].runtime_ns, 5e6);
  EXPECT_TRUE(back[0].oom);
  EXPECT_EQ(back[0].epsilon, 0.375);
  EXPECT_EQ(back[0].mean_q, -2.5);
  EXPECT_EQ(back[0].best_runtime_ns, 4e6);
  EXPECT_EQ(back[0].wall_seconds, 2.25);
  EXPECT_EQ(back[0].backend, "memkind");
  EXPECT_EQ(back[1].episode, 2u);
  EXPECT_EQ(back[1].loss, 0.125);
  EXPECT_FALSE(back[1].oom);
}

// Run directories of the release before hold version-01 files: the refusal
// says what they are and what to do, for `inspect` and for `--resume`.
TEST_F(LearnerCheckpointSections, AVersionOneFileIsRefusedSayingWhy) {
  const std::string path = dir() + "/learner-000000000010.ttckpt";
  WriteFileAtomically(path, FramePayload(FileFrame{"TTCKPT", 1, "learner checkpoint"}, std::string(64, '\1')));
  const std::string why = path +
                          ": learner checkpoint format version 1 (before the Cap'n Proto schema); this build reads "
                          "version 2: start a new run directory or resume with the release that wrote it";
  try {
    CheckpointStore::ReadVerified(path);
    ADD_FAILURE() << "a version-01 file was read";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.what(), why);
  }
  try {
    FindCheckpoint(config_, dir());
    ADD_FAILURE() << "resumed from a version-01 file";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.what(), "no usable checkpoint in " + dir() + "; the newest: " + why);
  }
}

TEST_F(LearnerCheckpointSections, APayloadThatIsNoLearnerCheckpointWithAnAgentIsACheckpointError) {
  auto refusal = [](const std::string& payload) -> std::string {
    try {
      ReadAgentSection(payload);
    } catch (const CheckpointError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal(std::string(13, 'x')),
            "the checkpoint payload (13 bytes) is not a whole number of Cap'n Proto words");
  // Garbage a checksum would pass: a segment table that claims more than there is.
  const std::string not_a_message = "the checkpoint payload is not a valid learner checkpoint message: ";
  EXPECT_EQ(refusal(std::string(64, '\x7f')).rfind(not_a_message, 0), 0u) << refusal(std::string(64, '\x7f'));
  // A sound segment table around garbage: the root pointer points nowhere.
  EXPECT_EQ(refusal(testing::GarbageMessage(64)).rfind(not_a_message, 0), 0u) << refusal(testing::GarbageMessage(64));
  capnp::MallocMessageBuilder without_agent;
  without_agent.initRoot<schema::LearnerCheckpoint>().initRun().setEpisodes(3);
  EXPECT_EQ(refusal(PayloadOf(without_agent)), "the checkpoint has no agent section");
  capnp::MallocMessageBuilder with_agent;
  with_agent.initRoot<schema::LearnerCheckpoint>().initAgent().setAgent("dqn");
  EXPECT_EQ(refusal(PayloadOf(with_agent)), "");
  EXPECT_EQ(refusal(PayloadOf(with_agent) + std::string(8, '\0')),
            "the checkpoint payload has 8 bytes after its message");
}

// The traversal limit grows with the payload: Cap'n Proto's default (64 MiB
// of reads) would refuse a legal checkpoint with a big replay or network.
TEST_F(LearnerCheckpointSections, ACheckpointBiggerThanCapnProtosDefaultTraversalLimitReads) {
  const std::string state(72u << 20, 's');
  capnp::MallocMessageBuilder message;
  schema::AgentSection::Builder agent = message.initRoot<schema::LearnerCheckpoint>().initAgent();
  agent.setAgent("dqn");
  agent.setState(BytesToData(state));
  EXPECT_EQ(ReadAgentSection(PayloadOf(message)).agent_checkpoint.size(), state.size());
}

TEST_F(LearnerCheckpointSections, AResumeFindsTheNewestCheckpointThatVerifies) {
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", SmallDqn(1).ToJson());
  CheckpointStore store(dir(), 5);
  const std::string good = store.Write(10, Payload(*agent));
  // Newer ones that do not do: a file cut short, garbage behind a valid
  // checksum, a valid message without the agent.
  const std::string torn = store.Write(20, Payload(*agent));
  std::filesystem::resize_file(torn, std::filesystem::file_size(torn) / 2);
  store.Write(30, std::string(4096, '\x5a'));
  capnp::MallocMessageBuilder without_agent;
  without_agent.initRoot<schema::LearnerCheckpoint>().initRun().setEpisodes(40);
  store.Write(40, PayloadOf(without_agent));
  const FoundCheckpoint found = FindCheckpoint(config_, dir());
  EXPECT_EQ(found.path, good);
  EXPECT_EQ(found.rejected, 3u);
  EXPECT_EQ(ReadAgentSection(found.payload).agent, "dqn");
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
