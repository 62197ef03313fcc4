// The training loop and the Algorithm 1 comparison of the heat-weight agent.
// The agent itself (networks, updates, checkpoints) is in
// heat_weight_agent.cc.
#include "agents/heat_weight_agent.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

namespace tensortier {

EpisodeSummary RunHeatWeightAgent(HeatWeightEnv& env, const HeatWeightAgent& agent, double* episode_return) {
  std::mt19937_64 unused(0);
  HeatObservation obs = env.Reset();
  while (!env.done()) {
    std::vector<float> a = agent.Act(obs.data(), /*deterministic=*/true, unused);
    HeatAction action{};
    std::copy(a.begin(), a.begin() + kHeatActionSize, action.begin());
    obs = env.Step(action).observation;
  }
  if (episode_return) *episode_return = env.episode_return();
  return env.summary();
}

HeatObservation StepIntoReplay(HeatWeightEnv& env, const HeatObservation& obs, const std::vector<float>& a,
                               ContinuousReplay& replay) {
  HeatAction action{};
  std::copy(a.begin(), a.end(), action.begin());
  HeatStepResult r = env.Step(action);
  replay.Add({std::vector<float>(obs.begin(), obs.end()), a, static_cast<float>(r.reward),
              std::vector<float>(r.observation.begin(), r.observation.end()), r.done});
  return r.observation;
}

HeatTrainingResult TrainHeatWeightAgent(HeatWeightEnv& env, HeatWeightAgent& agent,
                                        const HeatTrainingOptions& options, std::mt19937_64& rng) {
  if (agent.config().observation_size != kHeatObservationSize || agent.config().action_size != kHeatActionSize)
    throw std::invalid_argument("TrainHeatWeightAgent: the agent's sizes do not match HeatWeightEnv");
  const auto start = std::chrono::steady_clock::now();
  HeatTrainingResult result;
  result.best_return = -std::numeric_limits<double>::infinity();
  ContinuousReplay replay(options.replay_capacity);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int e = 0; e < options.episodes; ++e) {
    HeatObservation obs = env.Reset();
    while (!env.done()) {
      std::vector<float> a(kHeatActionSize);
      if (e < options.random_episodes) {
        for (float& x : a) x = uniform(rng);
      } else {
        a = agent.Act(obs.data(), /*deterministic=*/false, rng);
      }
      obs = StepIntoReplay(env, obs, a, replay);
      if (replay.size() >= options.learning_starts)
        for (int u = 0; u < options.updates_per_step; ++u) agent.Update(replay, rng);
    }
    result.returns.push_back(env.episode_return());
    if (env.episode_return() > result.best_return) {
      result.best_return = env.episode_return();
      result.best = env.summary();
    }
  }
  result.greedy = RunHeatWeightAgent(env, agent, &result.greedy_return);
  if (result.greedy_return > result.best_return) {
    result.best_return = result.greedy_return;
    result.best = result.greedy;
  }
  result.updates = agent.updates();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

HeatComparison CompareWithAlgorithm1(HeatWeightEnv& env, const HeatWeightAgent& agent) {
  HeatComparison c;
  c.agent = RunHeatWeightAgent(env, agent, &c.agent_return);
  c.algorithm1 = RunAlgorithm1(env, &c.algorithm1_return);
  c.speedup = c.agent.cost.total_ns > 0 ? c.algorithm1.cost.total_ns / c.agent.cost.total_ns : 0.0;
  return c;
}

std::string HeatComparison::ToJson() const {
  auto side = [](std::ostringstream& os, const EpisodeSummary& s, double ret) {
    os << "{\"return\": " << ret << ", \"episodic_reward\": " << s.episodic_reward
       << ", \"total_ns\": " << s.cost.total_ns << ", \"normalised_cost\": " << s.normalised_cost
       << ", \"dram_peak_bytes\": " << s.cost.dram_peak_bytes << ", \"migrations\": "
       << (s.cost.migrations_to_slow + s.cost.migrations_to_dram) << ", \"spills\": " << s.spills
       << ", \"oom\": " << (s.oom ? "true" : "false") << "}";
  };
  std::ostringstream os;
  os << "{\"agent\": ";
  side(os, agent, agent_return);
  os << ", \"algorithm1\": ";
  side(os, algorithm1, algorithm1_return);
  os << ", \"speedup\": " << speedup << "}";
  return os.str();
}

}  // namespace tensortier
