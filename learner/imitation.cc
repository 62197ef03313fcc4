#include "learner/imitation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "common/log.h"
#include "envs/demonstration.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

double CostOf(const EpisodeSummary& s) { return s.cost.total_ns; }

// Adds `fresh` to `pool`, keeping at most `cap` by reservoir sampling over
// everything ever offered (`seen` counts it).
void Aggregate(std::vector<Transition>& pool, std::vector<Transition> fresh, size_t cap, uint64_t& seen,
               std::mt19937_64& rng) {
  for (Transition& t : fresh) {
    ++seen;
    if (pool.size() < cap) {
      pool.push_back(std::move(t));
    } else {
      std::uniform_int_distribution<uint64_t> pick(0, seen - 1);
      const uint64_t slot = pick(rng);
      if (slot < cap) pool[slot] = std::move(t);
    }
  }
}

// The transitions a round trains on: the pool, where with `focus` the states
// the greedy policy gets wrong appear twice. The decisions that matter
// (evictions, prefetches) are a small share of 10^5-10^6 "keep" labels and
// uniform batches barely show them: Inception-v3 imitated AutoTM at heat
// order's level (25.8%) without this and at 32.2% with it, but ResNet-152
// fell from 43.1% to 35.0% (one seed each; rounds vary by 10 points), so it
// is off by default (docs/results/learning.md). Training on the mistakes and
// as many others only overcorrected (AlexNet 34.1% against 36.2%).
std::vector<Transition> RoundSet(const PlacementAgent& agent, const std::vector<Transition>& pool, bool focus,
                                 size_t* mistakes) {
  *mistakes = 0;
  if (!focus) return pool;
  std::vector<Transition> set = pool;
  for (const Transition& t : pool)
    if (agent.Greedy(t.observation.data()) != t.action) {
      set.push_back(t);
      ++*mistakes;
    }
  return set;
}

}  // namespace

ImitationResult LearnFromPlans(PlacementAgent& agent, PlacementEnv& env, const std::vector<PlacementPlan>& experts,
                               const ImitationConfig& config, std::mt19937_64& rng) {
  if (experts.empty()) throw std::invalid_argument("LearnFromPlans: no expert plan");
  if (!agent.supports_demonstrations())
    throw std::invalid_argument("LearnFromPlans: agent " + agent.name() + " does not learn from demonstrations");
  if (config.max_demonstrations == 0) throw std::invalid_argument("LearnFromPlans: max_demonstrations must be > 0");
  if (config.polish_updates < 0 || config.polish_chunk <= 0)
    throw std::invalid_argument("LearnFromPlans: polish_updates must be >= 0 and polish_chunk > 0");
  if (!(config.learning_rate_after >= 0) || !std::isfinite(config.learning_rate_after))
    throw std::invalid_argument("LearnFromPlans: learning_rate_after must be finite and >= 0");
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  ImitationResult result;
  const PlacementPlan* expert = nullptr;
  Demonstration shown;
  for (const PlacementPlan& plan : experts) {
    Demonstration d = DemonstratePlan(env, plan);
    if (!expert || FasterEpisode(d.summary, shown.summary)) {
      expert = &plan;
      shown = std::move(d);
    }
  }
  result.expert = expert->produced_by;
  result.expert_cost_ns = CostOf(shown.summary);

  // The polish set: the expert's states, sampled down to the cap.
  std::vector<Transition> expert_states;
  if (config.polish_updates > 0) {
    uint64_t offered = 0;
    Aggregate(expert_states, shown.transitions, config.max_demonstrations, offered, rng);
  }
  std::vector<Transition> pool;
  uint64_t seen = 0;
  Aggregate(pool, std::move(shown.transitions), config.max_demonstrations, seen, rng);
  agent.SetDemonstrations(pool);
  for (int u = 0; u < config.pretrain_updates; ++u) agent.PretrainStep(rng);
  result.updates += static_cast<uint64_t>(std::max(config.pretrain_updates, 0));

  auto greedy = [&](const Observation& o) { return agent.Greedy(o.data()); };
  std::string best_weights;
  // Rolls the current policy out, labelled by the expert: the evaluation of
  // these weights (kept when they are the fastest so far) and, in a DAgger
  // round, the next round's data in one episode.
  auto roll_out = [&](ImitationRound& r) {
    Demonstration visited = LabelRollout(env, *expert, greedy);
    r.greedy_cost_ns = CostOf(visited.summary);
    r.greedy_oom = visited.summary.oom;
    if (best_weights.empty() || FasterEpisode(visited.summary, result.best_greedy)) {
      best_weights = agent.SerializeWeights();
      result.best_cost_ns = r.greedy_cost_ns;
      result.best_round = r.round;
      result.best_greedy = visited.summary;
    }
    return visited;
  };
  auto out_of_time = [&] { return config.max_seconds > 0 && elapsed() >= config.max_seconds; };
  for (int round = 0;; ++round) {
    ImitationRound r;
    r.round = round;
    Demonstration visited = roll_out(r);
    if (round >= config.dagger_rounds || out_of_time()) {
      r.demonstrations = pool.size();
      r.seconds = elapsed();
      result.rounds.push_back(r);
      break;
    }
    Aggregate(pool, std::move(visited.transitions), config.max_demonstrations, seen, rng);
    agent.SetDemonstrations(RoundSet(agent, pool, config.focus_on_mistakes, &r.mistakes));
    for (int u = 0; u < config.updates_per_round; ++u) agent.PretrainStep(rng);
    result.updates += static_cast<uint64_t>(std::max(config.updates_per_round, 0));
    r.demonstrations = pool.size();
    r.seconds = elapsed();
    result.rounds.push_back(r);
  }
  // Polish: the expert's own states alone. Their labels are right (a DAgger
  // state's label is the plan's tier for a state the plan never reached),
  // and a policy that gets every one of them right replays the expert's plan.
  if (config.polish_updates > 0) {
    agent.SetDemonstrations(expert_states);
    const int chunk = config.polish_chunk;  // > 0, checked above
    for (int done = 0; done < config.polish_updates && !out_of_time(); done += chunk) {
      ImitationRound r;
      r.round = static_cast<int>(result.rounds.size());
      r.polish = true;
      for (const Transition& t : expert_states) r.mistakes += agent.Greedy(t.observation.data()) != t.action;
      if (r.mistakes == 0) break;  // the greedy plan is the expert's already
      for (int u = 0; u < chunk; ++u) agent.PretrainStep(rng);
      result.updates += static_cast<uint64_t>(chunk);
      roll_out(r);
      r.demonstrations = expert_states.size();
      r.seconds = elapsed();
      result.rounds.push_back(r);
    }
  }
  agent.LoadWeights(best_weights);
  agent.SyncTarget();
  if (config.learning_rate_after > 0) agent.SetLearningRate(config.learning_rate_after);
  agent.SetDemonstrations(std::move(pool));
  result.seconds = elapsed();
  LogInfo("imitation_finished").kv("expert", result.expert).kv("expert_runtime_ns", result.expert_cost_ns)
      .kv("best_round", result.best_round).kv("greedy_runtime_ns", result.best_cost_ns)
      .kv("rounds", result.rounds.size()).kv("updates", result.updates).kv("seconds", result.seconds);
  return result;
}

SelfImitationResult LearnFromOwnSearches(PlacementAgent& agent, PlacementEnv& env, const SelfImitationConfig& config,
                                         std::mt19937_64& rng) {
  if (config.rounds < 0) throw std::invalid_argument("LearnFromOwnSearches: rounds must be >= 0");
  if (!agent.supports_demonstrations())
    throw std::invalid_argument("LearnFromOwnSearches: agent " + agent.name() + " does not learn from demonstrations");
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  SelfImitationResult result;
  result.best_greedy = RunEpisode(env, [&](const Observation& o) { return agent.Greedy(o.data()); });
  result.start_cost_ns = CostOf(result.best_greedy);
  std::string best_weights = agent.SerializeWeights();
  for (int round = 0; round < config.rounds; ++round) {
    PlanSearchResult searched = SearchPlan(env, ScoresOf(agent), config.search);
    PlacementPlan target = std::move(searched.best.plan);
    target.produced_by = agent.name() + "-own-search";
    ImitationResult im = LearnFromPlans(agent, env, {target}, config.imitation, rng);
    SelfImitationRound r;
    r.searched_cost_ns = CostOf(searched.best);
    r.greedy_cost_ns = im.best_cost_ns;
    r.seconds = elapsed();
    result.rounds.push_back(r);
    if (FasterEpisode(im.best_greedy, result.best_greedy)) {
      result.best_greedy = im.best_greedy;
      best_weights = agent.SerializeWeights();
    }
  }
  agent.LoadWeights(best_weights);
  agent.SyncTarget();
  result.seconds = elapsed();
  LogInfo("self_imitation_finished").kv("rounds", result.rounds.size()).kv("start_runtime_ns", result.start_cost_ns)
      .kv("greedy_runtime_ns", CostOf(result.best_greedy)).kv("seconds", result.seconds);
  return result;
}

}  // namespace tensortier
