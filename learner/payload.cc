#include "learner/payload.h"

#include "learner/checkpoint_message.h"
#include "learner/checkpoint_sections.h"

namespace tensortier {
namespace {

// Episodes partly in replay as the checkpoint must store them: with the
// rows of the batches the trainer has started on, which the saved replay
// holds and the counters do not count yet.
EpisodeRows PartlyInReplay(const LearnerParts& s, LearnerCounters& counters) {
  EpisodeRows partly = s.ingest.partly_in_replay();
  for (const auto& [key, rows] : s.trainer.RowsOfStartedBatches()) partly[key] += rows;
  for (const auto& [key, rows] : partly) {
    auto counted = s.ingest.partly_in_replay().find(key);
    counters.transitions_ingested += rows - (counted == s.ingest.partly_in_replay().end() ? 0 : counted->second);
  }
  return partly;
}

void SaveRun(const LearnerParts& s, double elapsed_seconds, schema::RunSection::Builder out) {
  out.setEpisodes(s.result.episodes);
  out.setWeightsVersion(s.weights.version());
  out.setEvaluations(s.result.evaluations);
  out.setElapsedSeconds(elapsed_seconds);
  FillList(s.result.workers_seen, out.initWorkersSeen(s.result.workers_seen.size()));
  SaveRecords(s.result.records, out.initRecords(s.result.records.size()));
}

double LoadRun(schema::RunSection::Reader in, LearnerParts& s) {
  s.result.episodes = in.getEpisodes();
  s.weights.Restore(in.getWeightsVersion());
  s.result.evaluations = in.getEvaluations();
  s.result.workers_seen = VectorOf(in.getWorkersSeen());
  s.result.records = LoadRecords(in.getRecords());
  return in.getElapsedSeconds();
}

void RequireEverySection(schema::LearnerCheckpoint::Reader c) {
  RequireSection(c.hasAgent(), "agent");
  RequireSection(c.hasRun(), "run");
  RequireSection(c.hasCounters(), "counters");
  RequireSection(c.hasFleet(), "fleet");
  RequireSection(c.hasTrainer(), "trainer");
  RequireSection(c.hasIngest(), "ingest");
  RequireSection(c.hasScoreboard(), "scoreboard");
  RequireSection(c.hasMeasurements(), "measurements");
}

}  // namespace

std::string SavePayload(const LearnerParts& s, const LearnerConfig& config, double elapsed_seconds,
                        const std::string& checkpoint_dir) {
  LearnerCounters counters = s.result.counters;
  const EpisodeRows partly = PartlyInReplay(s, counters);
  capnp::MallocMessageBuilder message;
  schema::LearnerCheckpoint::Builder c = message.initRoot<schema::LearnerCheckpoint>();
  SaveAgentSection(c.initAgent(), s.agent, checkpoint_dir, config.workload.Signature(), config.env.dram_limit_bytes);
  SaveRun(s, elapsed_seconds, c.initRun());
  SaveCounters(counters, c.initCounters());
  s.fleet.Save(c.initFleet());
  s.trainer.Save(c.initTrainer());
  s.ingest.Save(c.initIngest(), partly);
  s.scores.Save(c.initScoreboard());
  s.measurements.Save(c.initMeasurements());
  return PayloadOf(message);
}

double LoadPayload(const std::string& payload, LearnerParts& s) {
  return ReadCheckpoint(payload, [&](schema::LearnerCheckpoint::Reader c) {
    RequireEverySection(c);
    const double seconds = LoadRun(c.getRun(), s);
    static_cast<CheckpointedCounters&>(s.result.counters) = LoadCounters(c.getCounters());
    s.fleet.Load(c.getFleet());
    s.trainer.Load(c.getTrainer());
    s.ingest.Load(c.getIngest());
    s.scores.Load(c.getScoreboard());
    s.measurements.Load(c.getMeasurements());
    return seconds;
  });
}

}  // namespace tensortier
