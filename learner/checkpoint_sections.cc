#include "learner/checkpoint_sections.h"

#include <cstdio>
#include <stdexcept>

#include "common/files.h"
#include "common/log.h"

namespace tensortier {

void SaveAgentSection(ByteWriter& w, const PlacementAgent& agent, const std::string& checkpoint_dir,
                      uint64_t workload_signature, uint64_t dram_limit_bytes) {
  // The agent's own checkpoint file stays where `tensortier export` looks
  // (checkpoints/<agent>.ckpt); the learner's checkpoint embeds its state.
  const std::string state = agent.SaveState();
  WriteAgentCheckpoint(checkpoint_dir + "/" + agent.name() + ".ckpt", state);
  w.U64(kCheckpointPayloadVersion);
  w.String(agent.name());
  w.String(agent.config_json());
  w.String(state);
  w.U64(workload_signature);
  w.U64(dram_limit_bytes);
}

AgentSection LoadAgentSection(ByteReader& r) {
  AgentSection s;
  s.payload_version = r.U64();
  if (s.payload_version < 1 || s.payload_version > kCheckpointPayloadVersion)
    throw CheckpointError("checkpoint payload version " + std::to_string(s.payload_version) +
                          "; this learner reads 1 to " + std::to_string(kCheckpointPayloadVersion));
  s.agent = r.String();
  s.agent_config_json = r.String();
  s.agent_checkpoint = r.String();
  s.workload_signature = r.U64();
  s.dram_limit_bytes = r.U64();
  return s;
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

void SaveRecords(ByteWriter& w, const std::vector<EpisodeRecord>& records) {
  w.U64(records.size());
  for (const EpisodeRecord& r : records) {
    w.U64(r.episode);
    w.Pod(r.worker_id);
    w.U64(r.worker_episode);
    w.U64(r.policy_version);
    w.Pod(r.steps);
    for (double v : {r.step_reward_sum, r.episodic_reward, r.normalised_cost, r.runtime_ns}) w.F64(v);
    w.Bool(r.oom);
    for (double v : {r.epsilon, r.loss, r.mean_q, r.best_runtime_ns, r.wall_seconds}) w.F64(v);
    w.String(r.backend);
  }
}

std::vector<EpisodeRecord> LoadRecords(ByteReader& r) {
  std::vector<EpisodeRecord> records;
  for (uint64_t n = r.U64(); n > 0; --n) {
    EpisodeRecord e;
    e.episode = r.U64();
    e.worker_id = r.Pod<uint32_t>();
    e.worker_episode = r.U64();
    e.policy_version = r.U64();
    e.steps = r.Pod<uint32_t>();
    e.step_reward_sum = r.F64();
    e.episodic_reward = r.F64();
    e.normalised_cost = r.F64();
    e.runtime_ns = r.F64();
    e.oom = r.Bool();
    e.epsilon = r.F64();
    e.loss = r.F64();
    e.mean_q = r.F64();
    e.best_runtime_ns = r.F64();
    e.wall_seconds = r.F64();
    e.backend = r.String();
    records.push_back(std::move(e));
  }
  return records;
}

FoundCheckpoint FindCheckpoint(const LearnerConfig& config, const std::string& checkpoint_dir) {
  if (config.run_dir.empty()) throw std::invalid_argument("resume needs a run directory");
  CheckpointStore store(checkpoint_dir);
  FoundCheckpoint found;
  std::string mismatch;  // a good checkpoint of another run says more than "none usable"
  for (const std::string& path : store.List()) {
    try {
      std::string payload = CheckpointStore::ReadVerified(path);
      ByteReader r(payload);
      LearnerConfig probe_config = config;
      RestoreAgent(LoadAgentSection(r), probe_config, checkpoint_dir);  // throws on a payload that does not load
      found.path = path;
      found.payload = std::move(payload);
      return found;
    } catch (const std::invalid_argument& e) {
      ++found.rejected;
      mismatch = path + ": " + e.what();
      LogWarn("checkpoint_rejected").kv("path", path).kv("detail", e.what());
    } catch (const std::exception& e) {
      ++found.rejected;
      LogWarn("checkpoint_rejected").kv("path", path).kv("detail", e.what());
    }
  }
  // The run directory does not hold what --resume needs: bad input (CheckpointError), not a failure.
  if (!mismatch.empty()) throw CheckpointError("cannot resume: " + mismatch);
  if (found.rejected == 0)
    throw CheckpointError("no checkpoint in " + checkpoint_dir +
                          " (the run ended before its first one): start it again with --force instead of --resume");
  throw CheckpointError("no usable checkpoint in " + checkpoint_dir);
}

}  // namespace tensortier
