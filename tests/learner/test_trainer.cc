// The training thread on its own: staged batches go into replay whole and
// are reported back, the rate limiter keeps samples per insert in its band,
// without a limiter each report buys a fixed number of updates, the derived
// ratio follows episode lengths, and replay and limiter survive a checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "learner/trainer.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using testing::SmallAgent;
using testing::SmallDqn;

StagedBatch Batch(uint64_t incarnation, uint64_t episode, size_t transitions, bool completes = true) {
  StagedBatch b;
  b.worker_id = 1;
  b.incarnation = incarnation;
  b.episode_id = episode;
  b.size = transitions;
  b.completes_episode = completes;
  b.episode_transitions = transitions;
  for (size_t i = 0; i < transitions; ++i)
    b.transitions.push_back(testing::Row(static_cast<float>(episode) + 0.001f * static_cast<float>(i),
                                         static_cast<uint8_t>(i & 1), -1.0f, i + 1 == transitions));
  return b;
}

TrainerSettings Settings(double samples_per_insert) {
  TrainerSettings s;
  s.samples_per_insert = samples_per_insert;
  s.batch_size = static_cast<uint64_t>(SmallDqn(1).batch_size);
  s.steps_per_episode_guess = 50;
  return s;
}

TEST(LearnerTrainer, StagedBatchesGoIntoReplayAndAreReportedInOrder) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  Trainer trainer(*agent, Settings(2.0));
  trainer.Start();
  trainer.Stage(Batch(7, 1, 30));
  trainer.Stage(Batch(7, 2, 20, /*completes=*/false));
  trainer.Stop();
  std::vector<InsertedBatch> in = trainer.TakeInserted();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].episode_id, 1u);
  EXPECT_EQ(in[0].transitions, 30u);
  EXPECT_TRUE(in[0].completes_episode);
  EXPECT_EQ(in[1].episode_id, 2u);
  EXPECT_FALSE(in[1].completes_episode);
  EXPECT_EQ(trainer.replay_size(), 50u);
  EXPECT_EQ(trainer.replay_items(), 50u);
  EXPECT_EQ(trainer.staged_transitions(), 0u);
  EXPECT_TRUE(trainer.TakeInserted().empty());
}

TEST(LearnerTrainer, TheLimiterKeepsSamplesPerInsertInItsBand) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  const TrainerSettings s = Settings(2.0);
  Trainer trainer(*agent, s);
  trainer.Start();
  for (uint64_t e = 1; e <= 6; ++e) trainer.Stage(Batch(7, e, 20));
  trainer.Stop();
  const RateLimiterCounters c = trainer.limiter_counters();
  EXPECT_EQ(c.inserts, 120u);
  EXPECT_EQ(c.samples, trainer.updates() * s.batch_size);
  EXPECT_GT(trainer.updates(), 0u);
  // Reverb's invariant: samples stay within error_buffer (ratio + batch +
  // 1) of (inserts - learning_starts) * ratio, both ways.
  const double error_buffer = 2.0 + static_cast<double>(s.batch_size) + 1;
  const double target = (120.0 - SmallDqn(1).learning_starts) * 2.0;
  EXPECT_LE(static_cast<double>(c.samples), target + error_buffer);
  EXPECT_GE(static_cast<double>(c.samples), target - error_buffer);
  ASSERT_TRUE(trainer.TakeLossMeans().has_value());
  EXPECT_FALSE(trainer.TakeLossMeans().has_value());  // nothing trained since
}

TEST(LearnerTrainer, WithoutALimiterEachReportBuysUpdatesPerEpisode) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  Trainer trainer(*agent, Settings(0));
  EXPECT_FALSE(trainer.has_limiter());
  EXPECT_EQ(trainer.samples_per_insert(), 0);
  trainer.Start();
  trainer.Stage(Batch(7, 1, 40));  // above learning_starts (16)
  trainer.OweUpdatesForOneReport();
  trainer.OweUpdatesForOneReport();
  trainer.Stop();
  EXPECT_EQ(trainer.updates(), 2u * static_cast<uint64_t>(SmallDqn(1).updates_per_episode));
  EXPECT_EQ(agent->updates(), trainer.updates());
}

TEST(LearnerTrainer, TheDerivedRatioFollowsTheEpisodeLengths) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  const TrainerSettings s = Settings(-1);
  Trainer trainer(*agent, s);
  const double per_episode = SmallDqn(1).updates_per_episode * static_cast<double>(s.batch_size);
  EXPECT_DOUBLE_EQ(trainer.samples_per_insert(), per_episode / 50);  // the start-up guess
  trainer.ObserveEpisodeLength(100);
  EXPECT_DOUBLE_EQ(trainer.samples_per_insert(), per_episode / 100);
  trainer.ObserveEpisodeLength(300);
  EXPECT_DOUBLE_EQ(trainer.samples_per_insert(), per_episode / 200);
  // The window holds the last 32 episodes.
  for (int i = 0; i < 32; ++i) trainer.ObserveEpisodeLength(64);
  EXPECT_DOUBLE_EQ(trainer.samples_per_insert(), per_episode / 64);
}

TEST(LearnerTrainer, ReplayLimiterAndRatioSurviveACheckpoint) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  const TrainerSettings s = Settings(-1);
  Trainer before(*agent, s);
  before.ObserveEpisodeLength(40);
  before.Start();
  for (uint64_t e = 1; e <= 3; ++e) before.Stage(Batch(7, e, 20));
  before.Stop();
  testing::SectionMessage<schema::TrainerSection> saved;
  before.Save(saved.Init());

  std::unique_ptr<PlacementAgent> agent2 = SmallAgent(1);
  Trainer after(*agent2, s);
  after.Load(saved.Read());
  EXPECT_EQ(after.replay_size(), 60u);
  EXPECT_EQ(after.replay_items(), 60u);
  EXPECT_DOUBLE_EQ(after.samples_per_insert(), before.samples_per_insert());
  EXPECT_EQ(after.limiter_counters().inserts, before.limiter_counters().inserts);
  EXPECT_EQ(after.limiter_counters().samples, before.limiter_counters().samples);
  // Saved again, the same bytes: nothing was lost or reordered.
  testing::SectionMessage<schema::TrainerSection> again;
  after.Save(again.Init());
  EXPECT_EQ(again.Bytes(), saved.Bytes());
}

TEST(LearnerTrainer, PrioritizedReplayKeepsItsPrioritiesAcrossACheckpoint) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  TrainerSettings s = Settings(2.0);
  s.prioritized = true;
  Trainer before(*agent, s);
  before.Start();
  for (uint64_t e = 1; e <= 3; ++e) before.Stage(Batch(7, e, 20));
  before.Stop();
  ASSERT_GT(before.prioritized_updates(), 0u);  // the priorities are not all the initial ones
  testing::SectionMessage<schema::TrainerSection> saved;
  before.Save(saved.Init());
  ASSERT_EQ(saved.Read().getReplay().getPriorities().size(), 60u);

  std::unique_ptr<PlacementAgent> agent2 = SmallAgent(1);
  Trainer after(*agent2, s);
  after.Load(saved.Read());
  EXPECT_EQ(after.replay_size(), 60u);
  EXPECT_EQ(after.replay_max_priority(), before.replay_max_priority());
  testing::SectionMessage<schema::TrainerSection> again;
  after.Save(again.Init());
  EXPECT_EQ(again.Bytes(), saved.Bytes());
}

// What ingest would never have let into replay does not come back from a
// checkpoint either: the trainer refuses it saying what is wrong.
class LearnerTrainerCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    Trainer before(*agent_, Settings(2.0));
    before.Start();
    before.Stage(Batch(7, 1, 20));
    before.Stop();
    before.Save(saved_.Init());
  }
  schema::Replay::Builder replay() { return saved_.Get().getReplay(); }
  // The error Load throws, "" if none.
  template <typename Error = CheckpointError>
  std::string Refusal() {
    Trainer after(*agent_, Settings(2.0));
    try {
      after.Load(saved_.Read());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  std::unique_ptr<PlacementAgent> agent_ = SmallAgent(1);
  testing::SectionMessage<schema::TrainerSection> saved_;
};

TEST_F(LearnerTrainerCheckpoint, ASavedReplayLoads) { EXPECT_EQ(Refusal(), ""); }

TEST_F(LearnerTrainerCheckpoint, ObservationsOfAnotherSizeAreRefused) {
  replay().getTransitions().initObservations(20 * (kObservationSize - 1));
  EXPECT_EQ(Refusal(), "the checkpoint's replay has " + std::to_string(20 * (kObservationSize - 1)) +
                           " observation floats for 20 transitions of " + std::to_string(kObservationSize));
}

TEST_F(LearnerTrainerCheckpoint, ColumnsOfDifferentLengthsAreRefused) {
  replay().getTransitions().initRewards(19);
  EXPECT_EQ(Refusal(), "the checkpoint's replay has 20 actions, 19 rewards and 20 done flags");
}

TEST_F(LearnerTrainerCheckpoint, AnActionThePlacementMdpDoesNotHaveIsRefused) {
  replay().getTransitions().getActions().set(3, 2);
  EXPECT_EQ(Refusal(), "the checkpoint's replay has an action 2");
}

TEST_F(LearnerTrainerCheckpoint, ARewardOrObservationThatIsNotFiniteIsRefused) {
  replay().getTransitions().getRewards().set(0, std::numeric_limits<float>::infinity());
  EXPECT_EQ(Refusal(), "the checkpoint's replay has a reward that is not finite");
  replay().getTransitions().getRewards().set(0, 0);
  replay().getTransitions().getNextObservations().set(5, std::nanf(""));
  EXPECT_EQ(Refusal(), "the checkpoint's replay has an observation that is not finite");
}

TEST_F(LearnerTrainerCheckpoint, AnUnknownReplayKindIsRefused) {
  replay().setKind(static_cast<schema::ReplayKind>(7));
  EXPECT_EQ(Refusal(), "the checkpoint's replay is of an unknown kind (7)");
}

TEST_F(LearnerTrainerCheckpoint, AReplayOfTheOtherKindBelongsToAnotherRun) {
  replay().setKind(schema::ReplayKind::PRIORITIZED);
  EXPECT_EQ(Refusal<std::invalid_argument>(), "the checkpoint holds a prioritized replay, not uniform");
}

TEST_F(LearnerTrainerCheckpoint, ARingThatDoesNotAddUpIsRefused) {
  replay().setNextSlot(3);  // 20 items in a ring of 100,000: the next slot is 20
  EXPECT_NE(Refusal().find("the checkpoint's replay does not fit: ReplayBuffer::Restore: next slot 3"),
            std::string::npos);
}

TEST_F(LearnerTrainerCheckpoint, ASamplingGeneratorThatDoesNotParseIsRefused) {
  saved_.Get().setSamplingRng("not a generator");
  EXPECT_EQ(Refusal(), "the checkpoint's sampling generator state does not parse");
}

TEST(LearnerTrainer, PrioritizedReplayNeedsAnAgentWithAPrioritisedUpdateAndTrainsOnIt) {
  std::unique_ptr<PlacementAgent> agent = SmallAgent(1);
  TrainerSettings s = Settings(2.0);
  s.prioritized = true;
  ASSERT_TRUE(agent->supports_prioritized_replay());
  Trainer trainer(*agent, s);
  trainer.Start();
  for (uint64_t e = 1; e <= 3; ++e) trainer.Stage(Batch(7, e, 20));
  trainer.Stop();
  EXPECT_GT(trainer.prioritized_updates(), 0u);
  EXPECT_EQ(trainer.prioritized_updates(), trainer.updates());
  EXPECT_GT(trainer.replay_max_priority(), 0);
}

TEST(LearnerTrainer, TheStartUpGuessLiesBetweenRandomAndDramFirstEpisodes) {
  const Workload w = testing::SmallWorkload();
  const EnvConfig env = testing::SmallEnv(w);
  PlacementEnv probe(w, env);
  const uint32_t dram_first = RunEpisode(probe, [](const Observation&) { return 0; }).steps;
  const uint32_t slow_first = RunEpisode(probe, [](const Observation&) { return 1; }).steps;
  ASSERT_NE(dram_first, slow_first);  // lengths depend on the policy here
  const size_t guess = StartupEpisodeSteps(w, env, 1);
  EXPECT_GT(guess, std::min(dram_first, slow_first) / 2);
  EXPECT_LT(guess, dram_first);
  EXPECT_EQ(guess, StartupEpisodeSteps(w, env, 1));  // seeded
  EnvConfig impossible = env;
  impossible.dram_limit_bytes = 0;
  EXPECT_ANY_THROW(StartupEpisodeSteps(w, impossible, 1));
}

}  // namespace
}  // namespace tensortier
