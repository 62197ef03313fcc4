// Ingest: what the network thread does with a registered worker's
// transitions before the trainer sees them. It checks each batch (worker,
// shape, priorities), drops duplicates, assembles chunked episodes (in any
// order), skips the rows a resumed replay already holds, and keeps the
// ledgers that decide when an episode is acknowledged: once its transitions
// are in replay and its report is counted. It sends nothing and counts
// nothing itself: the learner answers each Outcome. Network thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "learner/checkpoint.capnp.h"
#include "learner/episode_ledger.h"
#include "learner/fleet_registry.h"
#include "learner/staged_batch.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace tensortier {

class Ingest {
 public:
  enum class Verdict {
    kStaged,            // `ready` holds the episode's batches, in order, for the trainer
    kChunkHeld,         // a chunk of an episode whose other chunks are still to come
    kDuplicateEpisode,  // the episode was taken already: acknowledge it again if complete
    kDuplicateChunk,    // a chunk already held
    kWrongWorker,       // the batch names another worker (reason says so)
    kMalformed,         // refused (reason says why)
  };
  struct Outcome {
    Verdict verdict = Verdict::kStaged;
    std::string reason;               // kWrongWorker, kMalformed
    std::vector<StagedBatch> ready;   // kStaged
  };

  // A batch in wire form (rows stay in the frame until the trainer copies them).
  Outcome OnFrame(const WorkerState& worker, std::unique_ptr<TransitionBatchFrame> frame);
  // A batch decoded into Transitions.
  Outcome OnBatch(const WorkerState& worker, TransitionBatchMsg& batch);

  // Records an episode report; false if that episode's report was counted already.
  bool OnReport(uint64_t incarnation, uint64_t episode) { return reports_in_.Insert(incarnation, episode); }
  // Books a batch the trainer put into replay; true when it completed its episode.
  bool OnInserted(const InsertedBatch& b);
  // Whether the episode is in replay and its report counted.
  bool Acknowledgeable(uint64_t incarnation, uint64_t episode) const {
    return batches_inserted_.Contains(incarnation, episode) && reports_in_.Contains(incarnation, episode);
  }

  // Rows of episodes replay holds in part (of their inserted batches).
  const EpisodeRows& partly_in_replay() const { return partly_in_replay_; }

  // Checkpoint section: the ledgers of episodes in replay and of reports,
  // and the episodes replay holds in part: `partly_in_replay` with the rows
  // of the batches the trainer has started on. What was staged but not yet
  // in replay is not in the checkpoint: a resend after a resume is taken again.
  void Save(schema::IngestSection::Builder out, const EpisodeRows& partly_in_replay) const;
  void Load(schema::IngestSection::Reader in);

  // Partial episodes kept per incarnation: flow control keeps a worker to
  // two episodes in flight, so more were abandoned (the worker restarted
  // and will resend whole episodes).
  static constexpr size_t kMaxAssembling = 4;

 private:
  Outcome Accept(uint32_t chunk_index, uint32_t chunk_count, StagedBatch batch);
  void SkipWhatReplayHolds(const std::vector<StagedBatch*>& chunks);
  void DropStaleAssemblies(uint64_t incarnation);
  static Outcome Refuse(Verdict v, std::string reason) { return Outcome{v, std::move(reason), {}}; }
  static bool PrioritiesValid(const std::vector<float>& priorities, size_t transitions, std::string& reason);

  // By (incarnation, episode): batches taken (staged or in replay), batches
  // in replay, reports counted.
  EpisodeLedger batches_in_, batches_inserted_, reports_in_;
  // By (incarnation, episode): how many of an episode's transitions replay
  // holds while the rest still waits on the rate limiter. A checkpoint
  // saves it, so that when the worker resends the episode after a resume
  // those rows are skipped, not inserted twice (resends are the same
  // transitions in the same order: the worker keeps them until acknowledged).
  EpisodeRows partly_in_replay_;
  struct Assembly {  // an episode's chunks as they arrive
    std::vector<std::unique_ptr<StagedBatch>> chunks;
    uint32_t received = 0;
    uint64_t transitions = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Assembly> assembling_;  // (incarnation, episode)
};

}  // namespace tensortier
