#include "learner/starting_policy.h"

#include <random>
#include <stdexcept>
#include <utility>

#include "agents/agent_kind.h"
#include "common/log.h"
#include "learner/checkpoint_store.h"
#include "learner/imitation.h"

namespace tensortier {
namespace {

// A fresh agent, or one with the network of config.init_checkpoint.
std::unique_ptr<PlacementAgent> FirstAgent(LearnerConfig& config) {
  if (config.init_checkpoint.empty()) return BuildAgent(config);
  const std::string& path = config.init_checkpoint;
  std::unique_ptr<PlacementAgent> from;
  try {
    from = LoadAgentCheckpoint(path);
  } catch (const std::exception& e) {
    throw CheckpointError("--init " + path + ": " + e.what());
  }
  const std::string family = AgentKindName(config.agent);
  if (from->name() != family)
    throw std::invalid_argument("--init " + path + ": a " + from->name() + " checkpoint, and this run trains " +
                                family + " (--agent)");
  if (config.agent == AgentKind::kSac)
    config.sac.hidden = SacConfig::FromJson(from->config_json()).hidden;
  else
    config.dqn.hidden = DqnConfig::FromJson(from->config_json()).hidden;
  std::unique_ptr<PlacementAgent> agent = BuildAgent(config);
  agent->LoadWeights(from->SerializeWeights());
  agent->SyncTarget();
  return agent;
}

}  // namespace

std::unique_ptr<PlacementAgent> BuildAgent(LearnerConfig& config) {
  config.dqn.observation_size = config.sac.observation_size = kObservationSize;
  config.dqn.num_actions = config.sac.num_actions = 2;
  if (config.agent == AgentKind::kSac) return MakeAgent("sac", config.sac.ToJson());
  return MakeAgent("dqn", config.dqn.ToJson());
}

StartingPolicy StartPolicy(LearnerConfig& config, LearnerResult& result) {
  StartingPolicy start;
  start.agent = FirstAgent(config);
  PlacementAgent& agent = *start.agent;
  PlacementEnv env(config.workload, config.env);
  auto hold = [&](EpisodeSummary greedy, const std::string& phase) {
    greedy.plan.produced_by = agent.name() + "-" + phase;
    start.candidates.push_back({std::move(greedy), agent.SerializeWeights()});
  };
  if (!config.init_checkpoint.empty()) {
    EpisodeSummary greedy = RunEpisode(env, [&](const Observation& o) { return agent.Greedy(o.data()); });
    result.initialized_from = config.init_checkpoint;
    result.initialized_runtime_ns = greedy.oom ? 0 : greedy.cost.total_ns;
    LogInfo("initialized").kv("checkpoint", config.init_checkpoint).kv("agent", agent.name())
        .kv("greedy_runtime_ns", greedy.cost.total_ns).kv("oom", greedy.oom);
    hold(std::move(greedy), "init");
  }
  if (!config.expert_plans.empty()) {
    std::mt19937_64 rng(config.dqn.seed ^ 0x1d7a7e5eedull);
    result.imitation = LearnFromPlans(agent, env, config.expert_plans, config.imitation, rng);
    result.imitated = true;
    hold(result.imitation.best_greedy, "imitation");
  }
  if (config.self_imitation.rounds > 0) {
    std::mt19937_64 rng(config.dqn.seed ^ 0x5e1f5ea4c4ull);
    result.self_imitation = LearnFromOwnSearches(agent, env, config.self_imitation, rng);
    hold(result.self_imitation.best_greedy, "self-imitation");
  }
  return start;
}

}  // namespace tensortier
