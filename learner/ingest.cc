#include "learner/ingest.h"

#include <algorithm>
#include <cmath>

#include "common/log.h"
#include "envs/placement_env.h"

namespace tensortier {

Ingest::Outcome Ingest::OnFrame(const WorkerState& worker, std::unique_ptr<TransitionBatchFrame> frame) {
  if (frame->worker_id() != worker.id) return Refuse(Verdict::kWrongWorker, "batch names another worker");
  const uint64_t episode_id = frame->episode_id();
  if (batches_in_.Contains(worker.incarnation, episode_id)) return Refuse(Verdict::kDuplicateEpisode, "");
  if (frame->size() > 0 &&
      (frame->observation_floats() != static_cast<size_t>(kObservationSize) || frame->max_action() >= 2))
    return Refuse(Verdict::kMalformed, "transition of the wrong shape");
  std::string reason;
  if (!PrioritiesValid(frame->priorities(), frame->size(), reason)) return Refuse(Verdict::kMalformed, reason);
  StagedBatch batch;
  batch.worker_id = worker.id;
  batch.incarnation = worker.incarnation;
  batch.episode_id = episode_id;
  batch.size = frame->size();
  const uint32_t chunk_index = frame->chunk_index(), chunk_count = frame->chunk_count();
  batch.frame = std::move(frame);
  return Accept(chunk_index, chunk_count, std::move(batch));
}

Ingest::Outcome Ingest::OnBatch(const WorkerState& worker, TransitionBatchMsg& msg) {
  if (msg.worker_id != worker.id) return Refuse(Verdict::kWrongWorker, "batch names another worker");
  if (batches_in_.Contains(worker.incarnation, msg.episode_id)) return Refuse(Verdict::kDuplicateEpisode, "");
  const size_t obs_size = static_cast<size_t>(kObservationSize);
  for (const Transition& t : msg.transitions)
    if (t.observation.size() != obs_size || t.next_observation.size() != obs_size || t.action >= 2)
      return Refuse(Verdict::kMalformed, "transition of the wrong shape");
  std::string reason;
  if (!PrioritiesValid(msg.priorities, msg.transitions.size(), reason)) return Refuse(Verdict::kMalformed, reason);
  StagedBatch batch;
  batch.worker_id = worker.id;
  batch.incarnation = worker.incarnation;
  batch.episode_id = msg.episode_id;
  batch.size = msg.transitions.size();
  batch.transitions = std::move(msg.transitions);
  batch.priorities = std::move(msg.priorities);
  return Accept(msg.chunk_index, std::max<uint32_t>(1, msg.chunk_count), std::move(batch));
}

bool Ingest::PrioritiesValid(const std::vector<float>& priorities, size_t transitions, std::string& reason) {
  if (!priorities.empty() && priorities.size() != transitions) {
    reason = "priorities do not match the transitions";
    return false;
  }
  for (float p : priorities)
    if (!(p >= 0) || !std::isfinite(p)) {
      reason = "a priority is negative or not finite";
      return false;
    }
  return true;
}

// Stages a whole episode's batch now, or a chunk of one once all of its
// chunks are here (in any order; a resent chunk counts as a duplicate).
Ingest::Outcome Ingest::Accept(uint32_t chunk_index, uint32_t chunk_count, StagedBatch batch) {
  if (chunk_count > kMaxBatchChunks || chunk_index >= chunk_count)
    return Refuse(Verdict::kMalformed, "chunk " + std::to_string(chunk_index) + " of " +
                                           std::to_string(chunk_count) + " is out of range");
  const uint64_t incarnation = batch.incarnation, episode_id = batch.episode_id;
  Outcome out;
  if (chunk_count == 1) {
    batches_in_.Insert(incarnation, episode_id);
    batch.episode_transitions = batch.size;
    SkipWhatReplayHolds({&batch});
    out.ready.push_back(std::move(batch));
    return out;
  }
  const auto key = std::make_pair(incarnation, episode_id);
  auto it = assembling_.find(key);
  if (it == assembling_.end()) {
    DropStaleAssemblies(incarnation);
    it = assembling_.emplace(key, Assembly{}).first;
    it->second.chunks.resize(chunk_count);
  }
  Assembly& a = it->second;
  if (a.chunks.size() != chunk_count) {
    assembling_.erase(it);
    return Refuse(Verdict::kMalformed,
                  "the chunks of episode " + std::to_string(episode_id) + " disagree on their count");
  }
  if (a.chunks[chunk_index]) return Refuse(Verdict::kDuplicateChunk, "");
  a.transitions += batch.size;
  a.chunks[chunk_index] = std::make_unique<StagedBatch>(std::move(batch));
  if (++a.received < chunk_count) return Refuse(Verdict::kChunkHeld, "");
  batches_in_.Insert(incarnation, episode_id);
  const uint64_t transitions = a.transitions;
  std::vector<std::unique_ptr<StagedBatch>> chunks = std::move(a.chunks);
  assembling_.erase(it);
  std::vector<StagedBatch*> in_order;
  for (size_t i = 0; i < chunks.size(); ++i) {
    chunks[i]->completes_episode = i + 1 == chunks.size();
    chunks[i]->episode_transitions = transitions;
    in_order.push_back(chunks[i].get());
  }
  SkipWhatReplayHolds(in_order);
  for (auto& chunk : chunks) out.ready.push_back(std::move(*chunk));
  return out;
}

// An episode resent after a resume whose first transitions the
// checkpointed replay already holds: those rows are marked inserted.
void Ingest::SkipWhatReplayHolds(const std::vector<StagedBatch*>& chunks) {
  if (chunks.empty()) return;
  auto it = partly_in_replay_.find({chunks.front()->incarnation, chunks.front()->episode_id});
  if (it == partly_in_replay_.end()) return;
  uint64_t skip = it->second;
  if (skip > chunks.front()->episode_transitions) {
    LogWarn("partial_episode_mismatch").kv("incarnation", it->first.first).kv("episode", it->first.second)
        .kv("in_replay", skip).kv("resent", chunks.front()->episode_transitions);
    skip = chunks.front()->episode_transitions;
    it->second = skip;
  }
  for (StagedBatch* b : chunks) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(skip, b->size));
    b->next = b->already_in_replay = n;
    skip -= n;
  }
}

void Ingest::DropStaleAssemblies(uint64_t incarnation) {
  auto first = assembling_.lower_bound({incarnation, 0});
  size_t n = 0;
  for (auto it = first; it != assembling_.end() && it->first.first == incarnation; ++it) ++n;
  while (n-- >= kMaxAssembling) {
    LogWarn("partial_episode_dropped").kv("incarnation", incarnation).kv("episode", first->first.second)
        .kv("chunks_received", first->second.received).kv("chunks", first->second.chunks.size());
    first = assembling_.erase(first);
  }
}

bool Ingest::OnInserted(const InsertedBatch& b) {
  if (!b.completes_episode) {
    partly_in_replay_[{b.incarnation, b.episode_id}] += b.transitions;
    return false;
  }
  partly_in_replay_.erase({b.incarnation, b.episode_id});
  batches_inserted_.Insert(b.incarnation, b.episode_id);
  return true;
}

void Ingest::Save(schema::IngestSection::Builder out, const EpisodeRows& partly_in_replay) const {
  batches_inserted_.Save(out.initEpisodesInReplay());
  reports_in_.Save(out.initReportsCounted());
  auto partly = out.initPartlyInReplay(static_cast<unsigned>(partly_in_replay.size()));
  unsigned i = 0;
  for (const auto& [key, rows] : partly_in_replay) {
    schema::PartialEpisode::Builder p = partly[i++];
    p.setIncarnation(key.first);
    p.setEpisode(key.second);
    p.setRowsInReplay(rows);
  }
}

void Ingest::Load(schema::IngestSection::Reader in) {
  // What was staged but not in replay is not in the checkpoint: the
  // episodes in replay are all that was taken.
  batches_in_.Load(in.getEpisodesInReplay());
  batches_inserted_ = batches_in_;
  reports_in_.Load(in.getReportsCounted());
  partly_in_replay_.clear();
  for (schema::PartialEpisode::Reader p : in.getPartlyInReplay())
    partly_in_replay_[{p.getIncarnation(), p.getEpisode()}] = p.getRowsInReplay();
}

}  // namespace tensortier
