// A learner checkpoint as `inspect` reads it: the agent, run, counters and
// scoreboard sections, written by the parts' own Save; the other sections
// are not needed, and a payload cut anywhere is an error, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "learner/checkpoint_message.h"
#include "learner/checkpoint_sections.h"
#include "learner/checkpoint_summary.h"
#include "learner/scoreboard.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointSummary, ReadsWhatInspectShows) {
  const fs::path dir = fs::temp_directory_path() / ("tt-summary-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto agent = testing::SmallAgent(3);
  capnp::MallocMessageBuilder message;
  schema::LearnerCheckpoint::Builder c = message.initRoot<schema::LearnerCheckpoint>();
  SaveAgentSection(c.initAgent(), *agent, dir.string(), 0xabcdef, 4096);
  schema::RunSection::Builder run = c.initRun();
  run.setEpisodes(7);
  run.setWeightsVersion(8);
  run.setEvaluations(2);
  run.setElapsedSeconds(12.5);
  EpisodeRecord record;
  record.episode = 7;
  record.worker_id = 2;
  record.backend = "cost-model";
  SaveRecords({record}, run.initRecords(1));
  CheckpointedCounters counters;
  counters.transitions_ingested = 99;
  counters.checkpoints_written = 3;
  SaveCounters(counters, c.initCounters());
  const Workload workload = testing::SmallWorkload();
  Scoreboard scores(workload, 0, 0);
  scores.ConsiderPlan(PlacementPlan::Uniform(workload, Tier::kSlow, testing::SmallEnv(workload).dram_limit_bytes));
  scores.Save(c.initScoreboard());
  const std::string payload = PayloadOf(message);

  const LearnerCheckpointHead h = ReadLearnerCheckpointHead(payload);
  EXPECT_EQ(h.agent, "dqn");
  EXPECT_EQ(h.agent_state, agent->SaveState());
  EXPECT_EQ(h.workload_signature, 0xabcdefu);
  EXPECT_EQ(h.dram_limit_bytes, 4096u);
  EXPECT_EQ(h.episodes, 7u);
  EXPECT_EQ(h.weights_version, 8u);
  EXPECT_EQ(h.evaluations, 2u);
  EXPECT_EQ(h.seconds, 12.5);
  EXPECT_EQ(h.counters.transitions_ingested, 99u);
  EXPECT_EQ(h.counters.checkpoints_written, 3u);
  ASSERT_TRUE(h.has_best_plan);
  EXPECT_EQ(h.best_plan, scores.best_plan());
  EXPECT_EQ(h.best_runtime_ns, scores.best_runtime_ns());
  ASSERT_EQ(h.records.size(), 1u);
  EXPECT_EQ(h.records[0].worker_id, 2u);
  EXPECT_EQ(h.records[0].backend, "cost-model");

  // Cut anywhere: an error, never a crash.
  for (size_t cut : {size_t{0}, size_t{8}, payload.size() / 2, payload.size() - 16})
    EXPECT_THROW(ReadLearnerCheckpointHead(payload.substr(0, cut)), CheckpointError) << cut;
  // Without a section inspect shows: saying which.
  c.disownCounters();
  try {
    ReadLearnerCheckpointHead(PayloadOf(message));
    ADD_FAILURE() << "read a checkpoint without counters";
  } catch (const CheckpointError& e) {
    EXPECT_STREQ(e.what(), "the checkpoint has no counters section");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
