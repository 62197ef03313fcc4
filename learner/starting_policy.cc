#include "learner/starting_policy.h"

#include <filesystem>
#include <random>
#include <stdexcept>
#include <utility>

#include "agents/agent_kind.h"
#include "agents/policy_portfolio.h"
#include "common/log.h"
#include "learner/checkpoint_store.h"
#include "learner/imitation.h"

namespace tensortier {
namespace {

// The network config.init_checkpoint names: the checkpoint, or of a
// portfolio (a directory of them) the member whose greedy plan is the
// fastest on this workload (agents/policy_portfolio.h). `path` gets the file.
// With a portfolio and self-imitation rounds, `first_starts` gets the plan of
// the best of the searches from its fastest members
// (SelfImitationConfig::portfolio_search_starts above 1), for the first
// round's search to start from.
std::unique_ptr<PlacementAgent> InitialNetwork(const LearnerConfig& config, PlacementEnv& env, std::string& path,
                                               std::vector<PlacementPlan>& first_starts) {
  path = config.init_checkpoint;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return LoadAgentCheckpoint(path);
  std::vector<PortfolioMember> members = LoadPortfolio({path});
  const PortfolioChoice choice = FastestGreedy(env, members);
  path = members[choice.member].path;
  LogInfo("initialized_from_portfolio").kv("portfolio", config.init_checkpoint).kv("members", members.size())
      .kv("member", path).kv("greedy_runtime_ns", choice.greedy[choice.member].cost.total_ns)
      .kv("first_member_runtime_ns", choice.greedy[0].cost.total_ns).kv("seconds", choice.seconds);
  const SelfImitationConfig& si = config.self_imitation;
  if (si.rounds > 0 && si.portfolio_search_starts > 1 && members.size() > 1) {
    PortfolioSearch searched = SearchFromFastest(env, members, choice, si.search, si.portfolio_search_starts);
    LogInfo("portfolio_search").kv("searches", searched.searches).kv("member", members[searched.member].path)
        .kv("runtime_ns", searched.best.best.cost.total_ns).kv("seconds", searched.seconds);
    PlacementPlan plan = std::move(searched.best.best_episode_plan);
    plan.produced_by = "portfolio-search";
    first_starts.push_back(std::move(plan));
  }
  return std::move(members[choice.member].agent);
}

// A fresh agent, or one with the network of config.init_checkpoint (a
// portfolio's members are played in `env`, the run's workload and budget).
std::unique_ptr<PlacementAgent> FirstAgent(LearnerConfig& config, PlacementEnv& env, std::string& init_file,
                                           std::vector<PlacementPlan>& first_starts) {
  if (config.init_checkpoint.empty()) return BuildAgent(config);
  const std::string& path = config.init_checkpoint;
  std::unique_ptr<PlacementAgent> from;
  try {
    from = InitialNetwork(config, env, init_file, first_starts);
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
  std::string init_file;
  std::vector<PlacementPlan> first_starts;
  PlacementEnv env(config.workload, config.env);
  start.agent = FirstAgent(config, env, init_file, first_starts);
  PlacementAgent& agent = *start.agent;
  auto hold = [&](EpisodeSummary greedy, const std::string& phase) {
    greedy.plan.produced_by = agent.name() + "-" + phase;
    start.candidates.push_back({std::move(greedy), agent.SerializeWeights()});
  };
  if (!config.init_checkpoint.empty()) {
    EpisodeSummary greedy = RunEpisode(env, [&](const Observation& o) { return agent.Greedy(o.data()); });
    result.initialized_from = init_file;
    result.initialized_runtime_ns = greedy.oom ? 0 : greedy.cost.total_ns;
    LogInfo("initialized").kv("checkpoint", init_file).kv("agent", agent.name())
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
    result.self_imitation = LearnFromOwnSearches(agent, env, config.self_imitation, rng, first_starts);
    hold(result.self_imitation.best_greedy, "self-imitation");
  }
  return start;
}

}  // namespace tensortier
