// The learner checkpoint's payload on its own: every part's section loads
// back what was saved, so that saving the restored parts again gives the
// same bytes, also for a full replay of 100,000 transitions; a payload
// that is not a whole learner checkpoint is a CheckpointError.
#include <gtest/gtest.h>

#include <unistd.h>

#include <capnp/any.h>
#include <capnp/serialize.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "learner/checkpoint_message.h"
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
TrainerSettings Limited() {
  TrainerSettings s;
  s.samples_per_insert = 2.0;
  s.batch_size = 8;
  return s;
}

struct Parts {
  explicit Parts(const LearnerConfig& c, std::unique_ptr<PlacementAgent> a, const TrainerSettings& settings = Limited())
      : agent(std::move(a)),
        trainer(*agent, settings),
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

class LearnerPayload : public testing::RunDirTest {
 protected:
  LearnerPayload() : RunDirTest("payload", 5) {}
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

  LearnerConfig c = config_;
  Parts after(c, RestoreAgent(ReadAgentSection(payload), c, dir()));
  LearnerParts view = after.view();
  EXPECT_EQ(LoadPayload(payload, view), 12.5);
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
  TrainerSettings prioritized = Limited();
  prioritized.prioritized = true;
  Parts after(config_, MakeAgent("dqn", SmallDqn(5).ToJson()), prioritized);
  LearnerParts view = after.view();
  EXPECT_THROW(LoadPayload(payload, view), std::invalid_argument);  // the run's settings differ
}

// The payload's own framing as bytes; for this test only, where a payload
// is picked apart: the learner reads payloads through ReadCheckpoint.
class Reread {
 public:
  explicit Reread(const std::string& payload) : words_(kj::heapArray<capnp::word>(payload.size() / 8)) {
    std::memcpy(words_.begin(), payload.data(), payload.size());
    reader_ = std::make_unique<capnp::FlatArrayMessageReader>(words_.asPtr());
    copy_.setRoot(reader_->getRoot<schema::LearnerCheckpoint>());
  }
  schema::LearnerCheckpoint::Builder root() { return copy_.getRoot<schema::LearnerCheckpoint>(); }
  std::string Bytes() { return PayloadOf(copy_); }

 private:
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  capnp::MallocMessageBuilder copy_;
};

class LearnerPayloadRefusal : public LearnerPayload {
 protected:
  // The error LoadPayload throws for `payload`, "" if it loads.
  std::string Refusal(const std::string& payload) {
    Parts after(config_, MakeAgent("dqn", SmallDqn(5).ToJson()));
    LearnerParts view = after.view();
    try {
      LoadPayload(payload, view);
    } catch (const CheckpointError& e) {
      return e.what();
    }
    return "";
  }
  std::string Saved() {
    Parts before(config_, MakeAgent("dqn", SmallDqn(5).ToJson()));
    return SavePayload(before.view(), config_, 1, dir());
  }
};

TEST_F(LearnerPayloadRefusal, ASavedPayloadLoads) {
  EXPECT_EQ(Refusal(Saved()), "");
  EXPECT_EQ(Refusal(Reread(Saved()).Bytes()), "");  // and so does its copy, which the tests below spoil
}

TEST_F(LearnerPayloadRefusal, GarbageBehindAValidChecksumIsACheckpointError) {
  const std::string garbage = Refusal(testing::GarbageMessage(512));
  EXPECT_EQ(garbage.rfind("the checkpoint payload is not a valid learner checkpoint message", 0), 0u) << garbage;
  std::string null_root(16, '\0');  // one segment of one word: the root pointer, null
  null_root[4] = 1;
  EXPECT_EQ(Refusal(null_root), "the checkpoint has no agent section");
}

TEST_F(LearnerPayloadRefusal, AMessageWithoutASectionIsACheckpointError) {
  Reread without_trainer(Saved());
  without_trainer.root().disownTrainer();
  EXPECT_EQ(Refusal(without_trainer.Bytes()), "the checkpoint has no trainer section");
  Reread without_agent(Saved());
  without_agent.root().disownAgent();
  EXPECT_EQ(Refusal(without_agent.Bytes()), "the checkpoint has no agent section");
}

// A list of void elements costs no bytes, however many it claims: reading
// one as 500 million records must stop at the payload's traversal limit,
// not try to build them.
TEST_F(LearnerPayloadRefusal, AListThatClaimsFarMoreThanThePayloadHoldsIsACheckpointError) {
  Reread amplified(Saved());
  capnp::AnyStruct::Builder run = capnp::toAny(amplified.root().getRun());
  run.getPointerSection()[1].initAs<capnp::List<capnp::Void>>((1u << 29) - 1);  // RunSection.records
  const std::string refusal = Refusal(amplified.Bytes());
  EXPECT_EQ(refusal.rfind("the checkpoint payload is not a valid learner checkpoint message", 0), 0u) << refusal;
  EXPECT_NE(refusal.find("traversal limit"), std::string::npos) << refusal;
}

// A full default replay (100,000 transitions of 19 floats) saves and loads
// transition for transition; the test prints how long each took (not
// asserted: a test must not depend on the machine's speed).
TEST_F(LearnerPayload, AFullReplayOfAHundredThousandTransitionsRoundTrips) {
  TrainerSettings unlimited;  // no rate limiter: the trainer inserts without training
  unlimited.samples_per_insert = 0;
  Parts before(config_, MakeAgent("dqn", SmallDqn(5).ToJson()), unlimited);
  const size_t capacity = before.trainer.replay_capacity();
  ASSERT_EQ(capacity, 100000u);
  before.trainer.Start();
  for (uint64_t episode = 1; episode <= capacity / 1000; ++episode) {
    StagedBatch b;
    b.incarnation = 1;
    b.episode_id = episode;
    b.size = b.episode_transitions = 1000;
    b.completes_episode = true;
    for (int i = 0; i < 1000; ++i)
      b.transitions.push_back(Row(static_cast<float>(episode) + 0.001f * static_cast<float>(i), i & 1, -1));
    before.trainer.Stage(std::move(b));
  }
  before.trainer.Stop();
  ASSERT_EQ(before.trainer.replay_size(), capacity);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  const std::string payload = SavePayload(before.view(), config_, 1, dir());
  const Clock::time_point t1 = Clock::now();
  Parts after(config_, MakeAgent("dqn", SmallDqn(5).ToJson()), unlimited);
  LearnerParts view = after.view();
  LoadPayload(payload, view);
  const Clock::time_point t2 = Clock::now();
  std::printf("100,000 transitions: payload %.1f MB, saved in %.0f ms, loaded in %.0f ms\n",
              static_cast<double>(payload.size()) / 1e6, std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  EXPECT_EQ(after.trainer.replay_size(), capacity);
  EXPECT_EQ(SavePayload(after.view(), config_, 1, dir()), payload);  // every transition came back as it was
}

}  // namespace
}  // namespace tensortier
