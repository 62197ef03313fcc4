#include "learner/checkpoint_sections.h"

#include <stdexcept>

#include "common/log.h"
#include "envs/workload_capnp.h"
#include "learner/checkpoint_message.h"

namespace tensortier {

void SaveAgentSection(schema::AgentSection::Builder out, const PlacementAgent& agent,
                      const std::string& checkpoint_dir, uint64_t workload_signature, uint64_t dram_limit_bytes) {
  // The agent's own checkpoint file stays where `tensortier export` looks
  // (checkpoints/<agent>.ckpt); the learner's checkpoint embeds its state.
  const std::string state = agent.SaveState();
  WriteAgentCheckpoint(checkpoint_dir + "/" + agent.name() + ".ckpt", state);
  out.setAgent(StringToText(agent.name()));
  out.setConfigJson(StringToText(agent.config_json()));
  out.setState(BytesToData(state));
  out.setWorkloadSignature(workload_signature);
  out.setDramLimitBytes(dram_limit_bytes);
}

AgentSection LoadAgentSection(schema::AgentSection::Reader in) {
  AgentSection s;
  s.agent = TextToString(in.getAgent());
  s.agent_config_json = TextToString(in.getConfigJson());
  s.agent_checkpoint = DataToBytes(in.getState());
  s.workload_signature = in.getWorkloadSignature();
  s.dram_limit_bytes = in.getDramLimitBytes();
  return s;
}

AgentSection ReadAgentSection(const std::string& payload) {
  return ReadCheckpoint(payload, [](schema::LearnerCheckpoint::Reader checkpoint) {
    RequireSection(checkpoint.hasAgent(), "agent");
    return LoadAgentSection(checkpoint.getAgent());
  });
}

std::unique_ptr<PlacementAgent> RestoreAgent(const AgentSection& s, LearnerConfig& c,
                                             const std::string& checkpoint_dir) {
  if (s.agent != AgentKindName(c.agent))
    throw std::invalid_argument("the checkpoint holds a " + s.agent + " agent, not " + AgentKindName(c.agent));
  if (s.workload_signature != c.workload.Signature())
    throw std::invalid_argument("the checkpoint was trained on another workload");
  if (s.dram_limit_bytes != c.env.dram_limit_bytes)
    throw std::invalid_argument("the checkpoint was trained with another DRAM limit");
  const std::string device = s.agent == "sac" ? c.sac.device : c.dqn.device;
  std::unique_ptr<PlacementAgent> a = MakeAgent(s.agent, s.agent_config_json, device);
  a->LoadState(s.agent_checkpoint);
  // The run goes on with the checkpoint's network and training settings.
  if (s.agent == "sac") {
    c.sac = SacConfig::FromJson(s.agent_config_json);
    c.sac.device = device;
  } else {
    c.dqn = DqnConfig::FromJson(s.agent_config_json);
    c.dqn.device = device;
  }
  return a;
}

void SaveCounters(const CheckpointedCounters& c, schema::Counters::Builder out) {
  out.setFramesReceived(c.frames_received);
  out.setMalformedFrames(c.malformed_frames);
  out.setOversizedFrames(c.oversized_frames);
  out.setWrongVersionFrames(c.wrong_version_frames);
  out.setUnknownWorkerFrames(c.unknown_worker_frames);
  out.setDuplicateBatches(c.duplicate_batches);
  out.setTransitionsIngested(c.transitions_ingested);
  out.setWorkersRegistered(c.workers_registered);
  out.setWorkersExpired(c.workers_expired);
  out.setHeartbeatsReceived(c.heartbeats_received);
  out.setUnexpectedMessages(c.unexpected_messages);
  out.setWorkerErrors(c.worker_errors);
  out.setDuplicateReports(c.duplicate_reports);
  out.setEpisodesAcked(c.episodes_acked);
  out.setCheckpointsWritten(c.checkpoints_written);
  out.setCheckpointsRejected(c.checkpoints_rejected);
  out.setMeasurementCacheHits(c.measurement_cache_hits);
  out.setMeasurementCacheMisses(c.measurement_cache_misses);
  out.setMeasurementCacheRedundant(c.measurement_cache_redundant);
}

CheckpointedCounters LoadCounters(schema::Counters::Reader in) {
  CheckpointedCounters c;
  c.frames_received = in.getFramesReceived();
  c.malformed_frames = in.getMalformedFrames();
  c.oversized_frames = in.getOversizedFrames();
  c.wrong_version_frames = in.getWrongVersionFrames();
  c.unknown_worker_frames = in.getUnknownWorkerFrames();
  c.duplicate_batches = in.getDuplicateBatches();
  c.transitions_ingested = in.getTransitionsIngested();
  c.workers_registered = in.getWorkersRegistered();
  c.workers_expired = in.getWorkersExpired();
  c.heartbeats_received = in.getHeartbeatsReceived();
  c.unexpected_messages = in.getUnexpectedMessages();
  c.worker_errors = in.getWorkerErrors();
  c.duplicate_reports = in.getDuplicateReports();
  c.episodes_acked = in.getEpisodesAcked();
  c.checkpoints_written = in.getCheckpointsWritten();
  c.checkpoints_rejected = in.getCheckpointsRejected();
  c.measurement_cache_hits = in.getMeasurementCacheHits();
  c.measurement_cache_misses = in.getMeasurementCacheMisses();
  c.measurement_cache_redundant = in.getMeasurementCacheRedundant();
  return c;
}

void SaveRecords(const std::vector<EpisodeRecord>& records, capnp::List<schema::EpisodeRecord>::Builder out) {
  for (size_t i = 0; i < records.size(); ++i) {
    const EpisodeRecord& r = records[i];
    schema::EpisodeRecord::Builder o = out[i];
    o.setEpisode(r.episode);
    o.setWorkerId(r.worker_id);
    o.setWorkerEpisode(r.worker_episode);
    o.setPolicyVersion(r.policy_version);
    o.setSteps(r.steps);
    o.setStepRewardSum(r.step_reward_sum);
    o.setEpisodicReward(r.episodic_reward);
    o.setNormalisedCost(r.normalised_cost);
    o.setRuntimeNs(r.runtime_ns);
    o.setOom(r.oom);
    o.setEpsilon(r.epsilon);
    o.setLoss(r.loss);
    o.setMeanQ(r.mean_q);
    o.setBestRuntimeNs(r.best_runtime_ns);
    o.setWallSeconds(r.wall_seconds);
    o.setBackend(StringToText(r.backend));
  }
}

std::vector<EpisodeRecord> LoadRecords(capnp::List<schema::EpisodeRecord>::Reader in) {
  std::vector<EpisodeRecord> records;
  records.reserve(in.size());
  for (schema::EpisodeRecord::Reader r : in) {
    EpisodeRecord e;
    e.episode = r.getEpisode();
    e.worker_id = r.getWorkerId();
    e.worker_episode = r.getWorkerEpisode();
    e.policy_version = r.getPolicyVersion();
    e.steps = r.getSteps();
    e.step_reward_sum = r.getStepRewardSum();
    e.episodic_reward = r.getEpisodicReward();
    e.normalised_cost = r.getNormalisedCost();
    e.runtime_ns = r.getRuntimeNs();
    e.oom = r.getOom();
    e.epsilon = r.getEpsilon();
    e.loss = r.getLoss();
    e.mean_q = r.getMeanQ();
    e.best_runtime_ns = r.getBestRuntimeNs();
    e.wall_seconds = r.getWallSeconds();
    e.backend = TextToString(r.getBackend());
    records.push_back(std::move(e));
  }
  return records;
}

FoundCheckpoint FindCheckpoint(const LearnerConfig& config, const std::string& checkpoint_dir) {
  if (config.run_dir.empty()) throw std::invalid_argument("resume needs a run directory");
  CheckpointStore store(checkpoint_dir);
  FoundCheckpoint found;
  std::string mismatch;  // a good checkpoint of another run says more than "none usable"
  std::string newest_refusal;
  for (const std::string& path : store.List()) {
    try {
      std::string payload = CheckpointStore::ReadVerified(path);
      LearnerConfig probe_config = config;
      RestoreAgent(ReadAgentSection(payload), probe_config, checkpoint_dir);  // throws on a payload that does not load
      found.path = path;
      found.payload = std::move(payload);
      return found;
    } catch (const std::invalid_argument& e) {
      ++found.rejected;
      mismatch = path + ": " + e.what();
      LogWarn("checkpoint_rejected").kv("path", path).kv("detail", e.what());
    } catch (const std::exception& e) {
      if (found.rejected++ == 0) newest_refusal = e.what();
      LogWarn("checkpoint_rejected").kv("path", path).kv("detail", e.what());
    }
  }
  // The run directory does not hold what --resume needs: bad input (CheckpointError), not a failure.
  if (!mismatch.empty()) throw CheckpointError("cannot resume: " + mismatch);
  if (found.rejected == 0)
    throw CheckpointError("no checkpoint in " + checkpoint_dir +
                          " (the run ended before its first one): start it again with --force instead of --resume");
  throw CheckpointError("no usable checkpoint in " + checkpoint_dir + "; the newest: " + newest_refusal);
}

}  // namespace tensortier
