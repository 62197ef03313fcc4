#include "learner/checkpoint_summary.h"

#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agents/agent.h"
#include "common/files.h"
#include "envs/describe.h"
#include "learner/checkpoint_message.h"
#include "learner/checkpoint_sections.h"
#include "learner/scoreboard.h"

namespace tensortier {
namespace {

// The counters as the payload holds them (CheckpointedCounters' order).
struct NamedCounter {
  const char* name;
  uint64_t CheckpointedCounters::*field;
};
constexpr NamedCounter kCounters[] = {
    {"frames_received", &CheckpointedCounters::frames_received},
    {"malformed_frames", &CheckpointedCounters::malformed_frames},
    {"oversized_frames", &CheckpointedCounters::oversized_frames},
    {"wrong_version_frames", &CheckpointedCounters::wrong_version_frames},
    {"unknown_worker_frames", &CheckpointedCounters::unknown_worker_frames},
    {"duplicate_batches", &CheckpointedCounters::duplicate_batches},
    {"transitions_ingested", &CheckpointedCounters::transitions_ingested},
    {"workers_registered", &CheckpointedCounters::workers_registered},
    {"workers_expired", &CheckpointedCounters::workers_expired},
    {"heartbeats_received", &CheckpointedCounters::heartbeats_received},
    {"unexpected_messages", &CheckpointedCounters::unexpected_messages},
    {"worker_errors", &CheckpointedCounters::worker_errors},
    {"duplicate_reports", &CheckpointedCounters::duplicate_reports},
    {"episodes_acked", &CheckpointedCounters::episodes_acked},
    {"checkpoints_written", &CheckpointedCounters::checkpoints_written},
    {"checkpoints_rejected", &CheckpointedCounters::checkpoints_rejected},
    {"measurement_cache_hits", &CheckpointedCounters::measurement_cache_hits},
    {"measurement_cache_misses", &CheckpointedCounters::measurement_cache_misses},
    {"measurement_cache_redundant", &CheckpointedCounters::measurement_cache_redundant},
};
static_assert(sizeof(kCounters) / sizeof(kCounters[0]) * sizeof(uint64_t) == sizeof(CheckpointedCounters),
              "a counter of CheckpointedCounters is not named here");

std::string Row(const std::string& key, const std::string& value, int width = 15) {
  std::ostringstream out;
  out << std::left << std::setw(width) << key << ' ' << value << "\n";
  return out.str();
}

// The settings on one line.
std::string Compact(const std::string& json) {
  try {
    return nlohmann::json::parse(json).dump();
  } catch (const std::exception&) {
    return json;
  }
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Hex(uint64_t v) {
  std::ostringstream out;
  out << std::hex << v;
  return out.str();
}

// The agent of a state, for its family, updates and settings.
std::string DescribeAgentState(const std::string& state, const std::string& what) {
  std::unique_ptr<PlacementAgent> agent = LoadAgentState(state, "cpu", what);
  return Row("agent", agent->name()) + Row("updates", std::to_string(agent->updates())) +
         Row("settings", Compact(agent->config_json()));
}

}  // namespace

LearnerCheckpointHead ReadLearnerCheckpointHead(const std::string& payload) {
  return ReadCheckpoint(payload, [](schema::LearnerCheckpoint::Reader c) {
    RequireSection(c.hasAgent(), "agent");
    RequireSection(c.hasRun(), "run");
    RequireSection(c.hasCounters(), "counters");
    RequireSection(c.hasScoreboard(), "scoreboard");
    LearnerCheckpointHead h;
    AgentSection agent = LoadAgentSection(c.getAgent());
    h.agent = agent.agent;
    h.agent_config_json = agent.agent_config_json;
    h.agent_state = std::move(agent.agent_checkpoint);
    h.workload_signature = agent.workload_signature;
    h.dram_limit_bytes = agent.dram_limit_bytes;
    const schema::RunSection::Reader run = c.getRun();
    h.episodes = run.getEpisodes();
    h.weights_version = run.getWeightsVersion();
    h.evaluations = run.getEvaluations();
    h.seconds = run.getElapsedSeconds();
    h.records = LoadRecords(run.getRecords());
    h.counters = LoadCounters(c.getCounters());
    const Workload none;
    Scoreboard scores(none, 0, 0);
    scores.Load(c.getScoreboard());
    h.has_best_plan = scores.has_best_plan();
    h.best_plan = scores.best_plan();
    h.best_runtime_ns = scores.best_runtime_ns();
    return h;
  });
}

bool LooksLikeAgentCheckpoint(const std::string& head) { return head.rfind("TTAGNT", 0) == 0; }
bool LooksLikeLearnerCheckpoint(const std::string& head) { return head.rfind("TTCKPT", 0) == 0; }

std::string DescribeAgentCheckpoint(const std::string& path) {
  const std::string state = ReadAgentCheckpoint(path);  // verified
  return Row("agent checkpoint", path) + Row("size", FormatBytes(static_cast<double>(state.size()))) +
         DescribeAgentState(state, path);
}

std::string DescribeLearnerCheckpoint(const std::string& path) {
  const std::string payload = CheckpointStore::ReadVerified(path);
  LearnerCheckpointHead h;
  try {
    h = ReadLearnerCheckpointHead(payload);
  } catch (const std::exception& e) {
    throw CheckpointError(path + ": " + e.what());
  }
  std::ostringstream out;
  out << Row("learner checkpoint", path)
      << Row("payload", "format version " + std::to_string(kCheckpointFormatVersion) + ", " +
                            FormatBytes(static_cast<double>(payload.size())));
  out << DescribeAgentState(h.agent_state, path);
  out << Row("workload", "signature " + Hex(h.workload_signature))
      << Row("DRAM limit", FormatBytes(static_cast<double>(h.dram_limit_bytes)))
      << Row("episodes", std::to_string(h.episodes)) << Row("weights", "v" + std::to_string(h.weights_version))
      << Row("evaluations", std::to_string(h.evaluations)) << Row("wall time", Fixed(h.seconds, 1) + " s");
  out << "counters\n";
  for (const NamedCounter& c : kCounters) out << Row("  " + std::string(c.name), std::to_string(h.counters.*c.field), 30);
  if (h.has_best_plan) {
    out << Row("best plan", h.best_plan.produced_by + ", " + Fixed(h.best_runtime_ns / 1e6, 3) + " ms on the cost model");
    std::istringstream plan(DescribePlan(h.best_plan));
    for (std::string line; std::getline(plan, line);) out << "  " << line << "\n";
  } else {
    out << Row("best plan", "none yet");
  }
  std::set<uint32_t> workers;
  for (const EpisodeRecord& e : h.records) workers.insert(e.worker_id);
  out << Row("records", std::to_string(h.records.size()) + " episodes from " + std::to_string(workers.size()) +
                            " workers");
  const size_t shown = std::min<size_t>(h.records.size(), 5);
  if (shown) out << "  episode  worker  return     runtime ms  epsilon  backend\n";
  for (size_t i = h.records.size() - shown; i < h.records.size(); ++i) {
    const EpisodeRecord& e = h.records[i];
    char line[256];
    std::snprintf(line, sizeof line, "  %-8llu %-7u %-10.3f %-11.3f %-8.3f %s\n",
                  static_cast<unsigned long long>(e.episode), e.worker_id, e.step_reward_sum + e.episodic_reward,
                  e.runtime_ns / 1e6, e.epsilon, e.backend.c_str());
    out << line;
  }
  return out.str();
}

}  // namespace tensortier
