// The learner checkpoint's payload on its own: every part's section loads
// back what was saved, in order, so that saving the restored parts again
// gives the same bytes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "learner/checkpoint_sections.h"
#include "learner/payload.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::Row;
using testing::SmallDqn;
using testing::SmallEnv;
using testing::SmallWorkload;

// A learner's parts without a learner: no sockets, no threads but the trainer's.
struct Parts {
  explicit Parts(const LearnerConfig& c, std::unique_ptr<PlacementAgent> a)
      : agent(std::move(a)),
        trainer(*agent, [] {
          TrainerSettings s;
          s.samples_per_insert = 2.0;
          s.batch_size = 8;
          return s;
        }()),
        scores(c.workload, 2, 0.01),
        measurements(c.workload.Signature(), c.env.dram_limit_bytes) {}
  LearnerParts view() { return LearnerParts{*agent, weights, fleet, trainer, ingest, scores, measurements, result}; }

  std::unique_ptr<PlacementAgent> agent;
  WeightsPublisher weights{std::chrono::milliseconds(50)};
  FleetRegistry fleet{1};
  Trainer trainer;
  Ingest ingest;
  Scoreboard scores;
  MeasurementCache measurements;
  LearnerResult result;
};

class LearnerPayload : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = ::testing::TempDir() + "/payload_" + std::to_string(getpid());
    std::filesystem::create_directories(dir());
    config_.workload = SmallWorkload();
    config_.env = SmallEnv(config_.workload);
    config_.run_dir = run_dir_;
    config_.dqn = SmallDqn(5);
  }
  void TearDown() override { std::filesystem::remove_all(run_dir_); }
  std::string dir() const { return run_dir_ + "/checkpoints"; }

  std::string run_dir_;
  LearnerConfig config_;
};

TEST_F(LearnerPayload, RestoredPartsSaveTheSameBytes) {
  Parts before(config_, MakeAgent("dqn", SmallDqn(5).ToJson()));
  RegisterMsg reg;
  reg.incarnation = 99;
  WorkerState* w = before.fleet.Register("peer", reg, {}).worker;
  TransitionBatchMsg batch;
  batch.worker_id = w->id;
  batch.episode_id = 1;
  for (int i = 0; i < 40; ++i) batch.transitions.push_back(Row(0.01f * static_cast<float>(i), i & 1, -1));
  Ingest::Outcome staged = before.ingest.OnBatch(*w, batch);
  before.trainer.Start();
  for (StagedBatch& b : staged.ready) before.trainer.Stage(std::move(b));
  before.trainer.Stop();
  for (const InsertedBatch& b : before.trainer.TakeInserted()) {
    before.result.counters.transitions_ingested += b.transitions;
    before.ingest.OnInserted(b);
  }
  before.ingest.OnReport(99, 1);
  before.weights.Advance();
  before.scores.ConsiderPlan(PlacementPlan::Uniform(config_.workload, Tier::kSlow, config_.env.dram_limit_bytes));
  before.scores.BookEvaluation(-4, before.trainer.updates());
  EpisodeReportMsg measured;
  measured.counters.measured = true;
  measured.backend = "memkind";
  before.measurements.Record(measured);
  before.result.episodes = 1;
  before.result.evaluations = 1;
  before.result.records.resize(1);
  before.result.records[0].steps = 40;
  before.result.workers_seen = {w->id};
  const std::string payload = SavePayload(before.view(), config_, 12.5, dir());

  ByteReader r(payload);
  LearnerConfig c = config_;
  Parts after(c, RestoreAgent(LoadAgentSection(r), c, dir()));
  LearnerParts view = after.view();
  EXPECT_EQ(LoadPayload(payload, c, view), 12.5);
  EXPECT_EQ(after.result.episodes, 1u);
  EXPECT_EQ(after.weights.version(), 1u);
  EXPECT_EQ(after.trainer.replay_size(), 40u);
  EXPECT_TRUE(after.ingest.Acknowledgeable(99, 1));
  EXPECT_EQ(after.measurements.size(), 1u);
  EXPECT_EQ(after.scores.evaluation_rewards().size(), 1u);
  EXPECT_FALSE(after.fleet.Register("peer-2", reg, {}).new_worker);  // the incarnation keeps its id
  EXPECT_EQ(SavePayload(after.view(), c, 12.5, dir()), payload);
}

TEST_F(LearnerPayload, AnotherKindOfReplayIsRefused) {
  Parts before(config_, MakeAgent("dqn", SmallDqn(5).ToJson()));
  const std::string payload = SavePayload(before.view(), config_, 1, dir());
  LearnerConfig prioritized = config_;
  prioritized.replay = ReplayKind::kPrioritized;
  Parts after(config_, MakeAgent("dqn", SmallDqn(5).ToJson()));
  LearnerParts view = after.view();
  EXPECT_THROW(LoadPayload(payload, prioritized, view), std::invalid_argument);
}

}  // namespace
}  // namespace tensortier
