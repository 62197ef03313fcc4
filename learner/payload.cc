#include "learner/payload.h"

#include <stdexcept>

#include "learner/checkpoint_sections.h"

namespace tensortier {

std::string SavePayload(const LearnerParts& s, const LearnerConfig& config, double elapsed_seconds,
                        const std::string& checkpoint_dir) {
  // Episodes partly in replay as the checkpoint must store them: with the
  // rows of the batches the trainer has started on, which the saved replay
  // holds and the counters do not count yet.
  EpisodeRows partly = s.ingest.partly_in_replay();
  for (const auto& [key, rows] : s.trainer.RowsOfStartedBatches()) partly[key] += rows;
  LearnerCounters counters = s.result.counters;
  for (const auto& [key, rows] : partly) {
    auto counted = s.ingest.partly_in_replay().find(key);
    counters.transitions_ingested += rows - (counted == s.ingest.partly_in_replay().end() ? 0 : counted->second);
  }
  ByteWriter w;
  SaveAgentSection(w, s.agent, checkpoint_dir, config.workload.Signature(), config.env.dram_limit_bytes);
  w.U64(s.result.episodes);
  w.U64(s.weights.version());
  w.U64(s.result.evaluations);
  s.fleet.SaveNextIds(w);
  w.F64(elapsed_seconds);
  static_assert(sizeof(CheckpointedCounters) == 19 * sizeof(uint64_t), "the checkpoint payload's counters changed");
  w.Pod(static_cast<const CheckpointedCounters&>(counters));
  s.scores.SaveBestPlan(w);
  SaveRecords(w, s.result.records);
  w.String(ReplayKindName(config.replay));
  s.trainer.SaveReplay(w);
  s.ingest.SaveLedgers(w);
  s.fleet.SaveSlots(w);
  s.scores.SaveEvaluations(w);
  w.PodVector(s.result.workers_seen);
  s.trainer.SaveRng(w);
  s.measurements.Save(w);
  Ingest::SavePartlyInReplay(w, partly);
  return std::move(w.bytes());
}

double LoadPayload(const std::string& payload, const LearnerConfig& config, LearnerParts& s) {
  ByteReader r(payload);
  const uint64_t payload_version = LoadAgentSection(r).payload_version;
  s.result.episodes = r.U64();
  s.weights.Restore(r.U64());
  s.result.evaluations = r.U64();
  s.fleet.LoadNextIds(r);
  const double seconds = r.F64();
  static_cast<CheckpointedCounters&>(s.result.counters) = r.Pod<CheckpointedCounters>();
  s.scores.LoadBestPlan(r);
  s.result.records = LoadRecords(r);
  if (r.String() != ReplayKindName(config.replay)) throw std::invalid_argument("the checkpoint holds another kind of replay");
  s.trainer.LoadReplay(r, payload_version);
  s.ingest.LoadLedgers(r);
  s.fleet.LoadSlots(r);
  s.scores.LoadEvaluations(r);
  s.result.workers_seen = r.PodVector<uint32_t>();
  s.trainer.LoadRng(r);
  s.measurements.Load(r);
  s.ingest.LoadPartlyInReplay(r, payload_version);
  return seconds;
}

}  // namespace tensortier
