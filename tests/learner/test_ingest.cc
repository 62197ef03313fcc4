// Ingest on its own: what a registered worker's batches become (staged,
// held, duplicate, refused) without sockets, how chunked episodes are
// assembled, when an episode may be acknowledged, and how rows a resumed
// replay holds are skipped on a resend.
#include <gtest/gtest.h>

#include "learner/ingest.h"
#include "protocol/codec.h"
#include "tests/learner/learner_parts.h"

namespace tensortier {
namespace {

using Verdict = Ingest::Verdict;

WorkerState Worker(uint32_t id, uint64_t incarnation) {
  WorkerState w;
  w.id = id;
  w.incarnation = incarnation;
  return w;
}

TransitionBatchMsg Batch(uint32_t worker, uint64_t episode, size_t transitions, uint32_t chunk_index = 0,
                         uint32_t chunk_count = 1) {
  TransitionBatchMsg b;
  b.worker_id = worker;
  b.episode_id = episode;
  b.chunk_index = chunk_index;
  b.chunk_count = chunk_count;
  for (size_t i = 0; i < transitions; ++i) b.transitions.push_back(testing::Row(0.5f, static_cast<uint8_t>(i & 1)));
  return b;
}

InsertedBatch Inserted(const StagedBatch& b) {
  return {b.worker_id, b.incarnation, b.episode_id, b.size - b.already_in_replay, b.completes_episode,
          b.episode_transitions};
}

TEST(LearnerIngest, AnEpisodeIsStagedOnceAndAcknowledgedWhenInReplayAndReported) {
  Ingest ingest;
  const WorkerState w = Worker(1, 77);
  TransitionBatchMsg msg = Batch(1, 5, 12);
  Ingest::Outcome out = ingest.OnBatch(w, msg);
  ASSERT_EQ(out.verdict, Verdict::kStaged);
  ASSERT_EQ(out.ready.size(), 1u);
  EXPECT_EQ(out.ready[0].size, 12u);
  EXPECT_EQ(out.ready[0].incarnation, 77u);
  EXPECT_EQ(out.ready[0].episode_transitions, 12u);
  EXPECT_EQ(out.ready[0].next, 0u);
  TransitionBatchMsg again = Batch(1, 5, 12);
  EXPECT_EQ(ingest.OnBatch(w, again).verdict, Verdict::kDuplicateEpisode);

  EXPECT_FALSE(ingest.Acknowledgeable(77, 5));  // staged is not in replay
  EXPECT_TRUE(ingest.OnInserted(Inserted(out.ready[0])));
  EXPECT_FALSE(ingest.Acknowledgeable(77, 5));  // no report yet
  EXPECT_TRUE(ingest.OnReport(77, 5));
  EXPECT_FALSE(ingest.OnReport(77, 5));
  EXPECT_TRUE(ingest.Acknowledgeable(77, 5));
  EXPECT_FALSE(ingest.Acknowledgeable(78, 5));  // another incarnation's episode 5
}

TEST(LearnerIngest, WrongWorkersShapesAndPrioritiesAreRefused) {
  Ingest ingest;
  const WorkerState w = Worker(1, 77);
  TransitionBatchMsg other = Batch(2, 1, 3);
  EXPECT_EQ(ingest.OnBatch(w, other).verdict, Verdict::kWrongWorker);
  TransitionBatchMsg shape = Batch(1, 1, 3);
  shape.transitions[1].observation.pop_back();
  Ingest::Outcome out = ingest.OnBatch(w, shape);
  EXPECT_EQ(out.verdict, Verdict::kMalformed);
  EXPECT_EQ(out.reason, "transition of the wrong shape");
  TransitionBatchMsg action = Batch(1, 1, 3);
  action.transitions[0].action = 2;
  EXPECT_EQ(ingest.OnBatch(w, action).verdict, Verdict::kMalformed);
  TransitionBatchMsg count = Batch(1, 1, 3);
  count.priorities = {1, 2};
  EXPECT_EQ(ingest.OnBatch(w, count).reason, "priorities do not match the transitions");
  TransitionBatchMsg negative = Batch(1, 1, 3);
  negative.priorities = {1, -2, 3};
  EXPECT_EQ(ingest.OnBatch(w, negative).reason, "a priority is negative or not finite");
  // None of them was taken: the episode can still come.
  TransitionBatchMsg good = Batch(1, 1, 3);
  good.priorities = {1, 2, 3};
  out = ingest.OnBatch(w, good);
  ASSERT_EQ(out.verdict, Verdict::kStaged);
  EXPECT_EQ(out.ready[0].priority(2), 3.0);
}

TEST(LearnerIngest, ChunksAreHeldUntilAllArriveThenStagedInOrder) {
  Ingest ingest;
  const WorkerState w = Worker(1, 77);
  TransitionBatchMsg c2 = Batch(1, 9, 4, 2, 3), c0 = Batch(1, 9, 5, 0, 3), c0_again = Batch(1, 9, 5, 0, 3),
                     c1 = Batch(1, 9, 6, 1, 3);
  EXPECT_EQ(ingest.OnBatch(w, c2).verdict, Verdict::kChunkHeld);
  EXPECT_EQ(ingest.OnBatch(w, c0).verdict, Verdict::kChunkHeld);
  EXPECT_EQ(ingest.OnBatch(w, c0_again).verdict, Verdict::kDuplicateChunk);
  Ingest::Outcome out = ingest.OnBatch(w, c1);
  ASSERT_EQ(out.verdict, Verdict::kStaged);
  ASSERT_EQ(out.ready.size(), 3u);
  EXPECT_EQ(out.ready[0].size, 5u);
  EXPECT_EQ(out.ready[1].size, 6u);
  EXPECT_EQ(out.ready[2].size, 4u);
  for (const StagedBatch& b : out.ready) EXPECT_EQ(b.episode_transitions, 15u);
  EXPECT_FALSE(out.ready[0].completes_episode);
  EXPECT_FALSE(out.ready[1].completes_episode);
  EXPECT_TRUE(out.ready[2].completes_episode);
  // Only the last chunk, once in replay, completes the episode.
  EXPECT_FALSE(ingest.OnInserted(Inserted(out.ready[0])));
  EXPECT_EQ(ingest.partly_in_replay().at({77, 9}), 5u);
  EXPECT_FALSE(ingest.OnInserted(Inserted(out.ready[1])));
  EXPECT_TRUE(ingest.OnInserted(Inserted(out.ready[2])));
  EXPECT_TRUE(ingest.partly_in_replay().empty());
}

TEST(LearnerIngest, ChunkCountsOutOfRangeOrInDisagreementAreRefused) {
  Ingest ingest;
  const WorkerState w = Worker(1, 77);
  TransitionBatchMsg past_end = Batch(1, 3, 2, 2, 2);
  EXPECT_EQ(ingest.OnBatch(w, past_end).reason, "chunk 2 of 2 is out of range");
  TransitionBatchMsg too_many = Batch(1, 3, 2, 0, kMaxBatchChunks + 1);
  EXPECT_EQ(ingest.OnBatch(w, too_many).verdict, Verdict::kMalformed);
  TransitionBatchMsg first = Batch(1, 3, 2, 0, 2), other_count = Batch(1, 3, 2, 1, 3);
  EXPECT_EQ(ingest.OnBatch(w, first).verdict, Verdict::kChunkHeld);
  EXPECT_EQ(ingest.OnBatch(w, other_count).reason, "the chunks of episode 3 disagree on their count");
  // The disagreeing assembly was dropped: the episode starts over.
  TransitionBatchMsg second = Batch(1, 3, 2, 1, 2);
  EXPECT_EQ(ingest.OnBatch(w, second).verdict, Verdict::kChunkHeld);
}

TEST(LearnerIngest, AbandonedPartialEpisodesAreDropped) {
  Ingest ingest;
  const WorkerState w = Worker(1, 77);
  for (uint64_t e = 1; e <= Ingest::kMaxAssembling; ++e) {
    TransitionBatchMsg c = Batch(1, e, 2, 0, 2);
    ASSERT_EQ(ingest.OnBatch(w, c).verdict, Verdict::kChunkHeld);
  }
  // A fifth partial episode drops the oldest: its second chunk starts a new assembly.
  TransitionBatchMsg fifth = Batch(1, 5, 2, 0, 2), oldest_rest = Batch(1, 1, 2, 1, 2),
                     newest_rest = Batch(1, 5, 2, 1, 2);
  EXPECT_EQ(ingest.OnBatch(w, fifth).verdict, Verdict::kChunkHeld);
  EXPECT_EQ(ingest.OnBatch(w, newest_rest).verdict, Verdict::kStaged);
  EXPECT_EQ(ingest.OnBatch(w, oldest_rest).verdict, Verdict::kChunkHeld);
}

TEST(LearnerIngest, ACheckpointKeepsLedgersAndSkipsRowsReplayHoldsOnAResend) {
  Ingest before;
  const WorkerState w = Worker(1, 77);
  TransitionBatchMsg whole = Batch(1, 1, 10);
  Ingest::Outcome out = before.OnBatch(w, whole);
  before.OnInserted(Inserted(out.ready[0]));
  before.OnReport(77, 1);
  TransitionBatchMsg staged_only = Batch(1, 2, 10);
  before.OnBatch(w, staged_only);  // staged, not in replay when the checkpoint is written
  testing::SectionMessage<schema::IngestSection> section;
  const EpisodeRows partly = {{{77, 3}, 7}};  // 7 rows of episode 3 in the saved replay
  before.Save(section.Init(), partly);

  Ingest after;
  after.Load(section.Read());
  EXPECT_EQ(after.partly_in_replay(), partly);
  EXPECT_TRUE(after.Acknowledgeable(77, 1));
  TransitionBatchMsg resent1 = Batch(1, 1, 10), resent2 = Batch(1, 2, 10), resent3 = Batch(1, 3, 5, 0, 2),
                     resent3b = Batch(1, 3, 5, 1, 2);
  EXPECT_EQ(after.OnBatch(w, resent1).verdict, Verdict::kDuplicateEpisode);
  EXPECT_EQ(after.OnBatch(w, resent2).verdict, Verdict::kStaged);  // taken again
  after.OnBatch(w, resent3);
  out = after.OnBatch(w, resent3b);
  ASSERT_EQ(out.ready.size(), 2u);
  EXPECT_EQ(out.ready[0].next, 5u);  // the first chunk is all in replay
  EXPECT_EQ(out.ready[0].already_in_replay, 5u);
  EXPECT_EQ(out.ready[1].next, 2u);  // and two rows of the second
  EXPECT_EQ(Inserted(out.ready[1]).transitions, 3u);
}

TEST(LearnerIngest, FramesInWireFormAreCheckedLikeDecodedBatches) {
  Ingest ingest;
  const WorkerState w = Worker(1, 77);
  const std::string bytes = EncodeMessage(Batch(1, 4, 6));
  Ingest::Outcome out = ingest.OnFrame(w, TransitionBatchFrame::Open(bytes.data(), bytes.size()));
  ASSERT_EQ(out.verdict, Verdict::kStaged);
  ASSERT_NE(out.ready[0].frame, nullptr);
  EXPECT_EQ(out.ready[0].size, 6u);
  EXPECT_EQ(ingest.OnFrame(w, TransitionBatchFrame::Open(bytes.data(), bytes.size())).verdict,
            Verdict::kDuplicateEpisode);
  const std::string other = EncodeMessage(Batch(2, 5, 6));
  EXPECT_EQ(ingest.OnFrame(w, TransitionBatchFrame::Open(other.data(), other.size())).verdict, Verdict::kWrongWorker);
}

}  // namespace
}  // namespace tensortier
