// The head of a learner checkpoint's payload as `inspect` reads it, written
// by the parts' own sections in learner/payload.cc's order.
#include <gtest/gtest.h>

#include <filesystem>

#include "learner/checkpoint_sections.h"
#include "learner/checkpoint_summary.h"
#include "learner/fleet_registry.h"
#include "learner/scoreboard.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointSummary, ReadsTheHeadOfAPayload) {
  const fs::path dir = fs::temp_directory_path() / ("tt-summary-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto agent = testing::SmallAgent(3);
  ByteWriter w;
  SaveAgentSection(w, *agent, dir.string(), 0xabcdef, 4096);
  w.U64(7);   // episodes
  w.U64(8);   // weights version
  w.U64(2);   // evaluations
  FleetRegistry(1).SaveNextIds(w);
  w.F64(12.5);
  CheckpointedCounters counters;
  counters.transitions_ingested = 99;
  counters.checkpoints_written = 3;
  w.Pod(counters);
  const Workload workload = testing::SmallWorkload();
  Scoreboard scores(workload, 0, 0);
  scores.SaveBestPlan(w);  // none yet
  EpisodeRecord record;
  record.episode = 7;
  record.worker_id = 2;
  record.backend = "cost-model";
  SaveRecords(w, {record});
  w.String("uniform");  // what follows the head is not read

  const LearnerCheckpointHead h = ReadLearnerCheckpointHead(w.bytes());
  EXPECT_EQ(h.payload_version, kCheckpointPayloadVersion);
  EXPECT_EQ(h.agent, "dqn");
  EXPECT_EQ(h.workload_signature, 0xabcdefu);
  EXPECT_EQ(h.dram_limit_bytes, 4096u);
  EXPECT_EQ(h.episodes, 7u);
  EXPECT_EQ(h.weights_version, 8u);
  EXPECT_EQ(h.evaluations, 2u);
  EXPECT_EQ(h.seconds, 12.5);
  EXPECT_EQ(h.counters.transitions_ingested, 99u);
  EXPECT_EQ(h.counters.checkpoints_written, 3u);
  EXPECT_FALSE(h.has_best_plan);
  ASSERT_EQ(h.records.size(), 1u);
  EXPECT_EQ(h.records[0].worker_id, 2u);
  EXPECT_EQ(h.records[0].backend, "cost-model");

  // Cut anywhere inside the head: an error, never a crash.
  for (size_t cut : {size_t{0}, size_t{8}, w.bytes().size() / 2, w.bytes().size() - 20})
    EXPECT_THROW(ReadLearnerCheckpointHead(w.bytes().substr(0, cut)), CheckpointError) << cut;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
