#include "learner/imitation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "common/log.h"
#include "envs/cost_model.h"
#include "envs/demonstration.h"
#include "envs/plan_polish.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

double CostOf(const EpisodeSummary& s) { return s.cost.total_ns; }

// An episode's plan as the plan-time pipelines finish it (FinishEpisodePlan:
// async copies scheduled, the polish within `seconds`): what
// ExpertChoice::kFinished ranks experts and rounds by.
double FinishedCostNs(const Workload& w, const PlacementPlan& episode_plan, double seconds) {
  PlanPolishOptions polish;
  polish.max_seconds = seconds;
  return FinishEpisodePlan(w, episode_plan, true, &polish).cost.total_ns;
}

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

// Whether the greedy plans of `a` beat those of `b` across a corpus: fewer
// out-of-memory episodes, then a higher mean of all-DRAM time / plan time
// (models of any size count alike). For one model: FasterEpisode.
struct CorpusScore {
  int oom = 0;
  double mean_relative = 0;
  bool Beats(const CorpusScore& b) const {
    if (oom != b.oom) return oom < b.oom;
    return mean_relative > b.mean_relative * (1 + 1e-12);
  }
};

// A task's expert states as the polish counts its mistakes on them: the
// observations back to back and the expert's actions, where a Transition
// holds two heap vectors per state (with the rollouts streamed into the pool,
// 2.41 -> 2.29 GB on a 60-task corpus; the tasks' environments hold the rest).
struct LabelledStates {
  size_t width = 0;
  std::vector<float> observations;
  std::vector<uint8_t> actions;

  LabelledStates() = default;
  explicit LabelledStates(const std::vector<Transition>& states) {
    if (states.empty()) return;
    width = states.front().observation.size();
    observations.reserve(width * states.size());
    actions.reserve(states.size());
    for (const Transition& t : states) {
      observations.insert(observations.end(), t.observation.begin(), t.observation.end());
      actions.push_back(t.action);
    }
  }
  size_t Mistakes(const PlacementAgent& agent) const {
    size_t wrong = 0;
    for (size_t i = 0; i < actions.size(); ++i) wrong += agent.Greedy(observations.data() + i * width) != actions[i];
    return wrong;
  }
};

CorpusImitationResult LearnFromCorpus(PlacementAgent& agent, const std::vector<ImitationTask>& tasks,
                                      const ImitationConfig& config, std::mt19937_64& rng,
                                      const ImitationProgress& on_round) {
  if (tasks.empty()) throw std::invalid_argument("LearnFromPlans: no workload to imitate on");
  size_t learned_from = 0;
  for (const ImitationTask& t : tasks) {
    if (!t.env) throw std::invalid_argument("LearnFromPlans: a task without an environment");
    if (t.validation) continue;
    ++learned_from;
    if (t.experts.empty()) throw std::invalid_argument("LearnFromPlans: no expert plan" +
                                                       (t.name.empty() ? std::string() : " for " + t.name));
  }
  if (learned_from == 0) throw std::invalid_argument("LearnFromPlans: every task is a validation task");
  const bool validated = learned_from < tasks.size();
  if (!agent.supports_demonstrations())
    throw std::invalid_argument("LearnFromPlans: agent " + agent.name() + " does not learn from demonstrations");
  if (config.max_demonstrations == 0) throw std::invalid_argument("LearnFromPlans: max_demonstrations must be > 0");
  if (config.polish_updates < 0 || config.polish_chunk <= 0)
    throw std::invalid_argument("LearnFromPlans: polish_updates must be >= 0 and polish_chunk > 0");
  if (!(config.polish_aggregate_share >= 0 && config.polish_aggregate_share < 1))
    throw std::invalid_argument("LearnFromPlans: polish_aggregate_share must be in [0, 1)");
  if (!(config.learning_rate_after >= 0) || !std::isfinite(config.learning_rate_after))
    throw std::invalid_argument("LearnFromPlans: learning_rate_after must be finite and >= 0");
  if (config.portfolio_size < 1) throw std::invalid_argument("LearnFromPlans: portfolio_size must be >= 1");
  if (!(config.expert_finish_seconds >= 0) || !std::isfinite(config.expert_finish_seconds))
    throw std::invalid_argument("LearnFromPlans: expert_finish_seconds must be finite and >= 0");
  if (config.weight_mean_from_round < -1)
    throw std::invalid_argument("LearnFromPlans: weight_mean_from_round must be -1 (off) or a round >= 0");
  if (config.weight_mean_from_round >= 0 && !agent.supports_weight_mean())
    throw std::invalid_argument("LearnFromPlans: agent " + agent.name() + " keeps no mean of its weights");
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  // A task whose environment comes with its decision slots released takes
  // turns: its slots are built for each of its episodes and freed after,
  // which bounds a large corpus's memory (the caller chooses which tasks;
  // PretrainOnCorpus: those past CorpusPretrainingOptions::resident_slot_bytes)
  // at the price of building them again (docs/results/learning.md, session
  // thirty-four).
  std::vector<uint8_t> takes_turns(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) takes_turns[i] = !tasks[i].env->decision_slots_built();
  CorpusImitationResult corpus;
  corpus.tasks.resize(tasks.size());
  std::vector<const PlacementPlan*> expert(tasks.size(), nullptr);
  std::vector<std::vector<Transition>> shown_states(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].validation) continue;
    Demonstration shown;
    double shown_finished_ns = 0;
    for (const PlacementPlan& plan : tasks[i].experts) {
      Demonstration d = DemonstratePlan(*tasks[i].env, plan);
      double finished_ns = 0;
      bool faster = !expert[i];
      if (config.expert_choice == ExpertChoice::kFinished && !d.summary.oom) {
        finished_ns = FinishedCostNs(tasks[i].env->workload(), d.summary.plan, config.expert_finish_seconds);
        LogInfo("imitation_expert")
            .kv("workload", tasks[i].name)
            .kv("expert", plan.produced_by)
            .kv("replay_runtime_ns", CostOf(d.summary))
            .kv("finished_runtime_ns", finished_ns);
        faster = faster || shown.summary.oom || finished_ns < shown_finished_ns;
      } else {
        faster = faster || FasterEpisode(d.summary, shown.summary);
      }
      if (faster) {
        expert[i] = &plan;
        shown = std::move(d);
        shown_finished_ns = finished_ns;
      }
    }
    corpus.tasks[i].expert = expert[i]->produced_by;
    corpus.tasks[i].expert_cost_ns = CostOf(shown.summary);
    corpus.tasks[i].expert_finished_cost_ns = shown_finished_ns;
    shown_states[i] = std::move(shown.transitions);
    if (takes_turns[i]) tasks[i].env->ReleaseDecisionSlots();
  }

  // The polish set: the experts' states, sampled down to the cap.
  std::vector<Transition> expert_states;
  if (config.polish_updates > 0) {
    uint64_t offered = 0;
    for (const std::vector<Transition>& states : shown_states)
      Aggregate(expert_states, states, config.max_demonstrations, offered, rng);
  }
  std::vector<Transition> pool;
  uint64_t seen = 0;
  for (const std::vector<Transition>& states : shown_states)
    Aggregate(pool, states, config.max_demonstrations, seen, rng);
  // From here on only the polish reads every expert state, to count mistakes.
  std::vector<LabelledStates> expert_labels(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (config.polish_updates > 0) expert_labels[i] = LabelledStates(shown_states[i]);
    std::vector<Transition>().swap(shown_states[i]);
  }
  agent.SetDemonstrations(pool);
  for (int u = 0; u < config.pretrain_updates; ++u) agent.PretrainStep(rng);
  corpus.updates += static_cast<uint64_t>(std::max(config.pretrain_updates, 0));

  auto greedy = [&](const Observation& o) { return agent.Greedy(o.data()); };
  RolloutLabels rollout_labels;
  rollout_labels.price_room = config.room_labels;
  rollout_labels.mark_crowding = config.repeat_crowding_mistakes;
  bool scored = false;
  CorpusScore best_score;
  // The portfolio: the best-scored rounds, best first (a stable order: an
  // earlier round stays ahead of a later one with the same score). Its
  // first member is the best round's weights, the ones the agent ends with.
  std::vector<std::pair<CorpusScore, CorpusImitationResult::PortfolioRound>> portfolio;
  auto keep_in_portfolio = [&](int round, const CorpusScore& score, double learned_relative,
                             double validation_relative) {
    auto at = std::find_if(portfolio.begin(), portfolio.end(), [&](const auto& p) { return score.Beats(p.first); });
    if (static_cast<int>(at - portfolio.begin()) >= config.portfolio_size) return;
    CorpusImitationResult::PortfolioRound kept;
    kept.round = round;
    kept.mean_relative = learned_relative;
    kept.validation_relative = validation_relative;
    kept.weights = agent.SerializeWeights();
    portfolio.insert(at, {score, std::move(kept)});
    if (static_cast<int>(portfolio.size()) > config.portfolio_size) portfolio.pop_back();
  };
  // Rolls the current policy out on every task, labelled by its expert: the
  // evaluation of these weights (kept when they are the best so far) and, in
  // a DAgger round, the next round's data, each task's added to the pool as
  // it is played (the same draws as adding all of them after the round, in
  // a task's memory instead of the corpus's). Appends the round to every task.
  auto roll_out = [&](const ImitationRound& r, bool aggregate) {
    CorpusScore learned, validation;
    ImitationRound told = r;  // the corpus's round: the labels' counts summed over the tasks
    std::vector<EpisodeSummary> greedy_plans(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
      EpisodeSummary played;
      ImitationRound tr = r;
      if (tasks[i].validation) {
        played = RunEpisode(*tasks[i].env, greedy);
      } else {
        Demonstration d = LabelRollout(*tasks[i].env, *expert[i], greedy, rollout_labels);
        played = std::move(d.summary);
        tr.clipped_labels = d.clipped;
        tr.room_relabelled = d.room_relabelled;
        tr.crowding_mistakes = static_cast<uint32_t>(d.crowding.size());
        if (aggregate) {
          for (size_t at : d.crowding) d.transitions.push_back(d.transitions[at]);
          Aggregate(pool, std::move(d.transitions), config.max_demonstrations, seen, rng);
        }
      }
      if (takes_turns[i]) tasks[i].env->ReleaseDecisionSlots();
      tr.greedy_cost_ns = CostOf(played);
      tr.greedy_oom = played.oom;
      told.clipped_labels += tr.clipped_labels;
      told.room_relabelled += tr.room_relabelled;
      told.crowding_mistakes += tr.crowding_mistakes;
      corpus.tasks[i].rounds.push_back(tr);
      CorpusScore& score = tasks[i].validation ? validation : learned;
      score.oom += played.oom;
      score.mean_relative += played.oom ? 0 : MinCostNs(tasks[i].env->workload()) / tr.greedy_cost_ns;
      greedy_plans[i] = std::move(played);
    }
    learned.mean_relative /= static_cast<double>(learned_from);
    if (validated) validation.mean_relative /= static_cast<double>(tasks.size() - learned_from);
    if (on_round) {
      told.seconds = elapsed();
      on_round(told, learned.mean_relative, validation.mean_relative);
    }
    const CorpusScore& score = validated ? validation : learned;
    keep_in_portfolio(r.round, score, learned.mean_relative, validated ? validation.mean_relative : 0);
    if (!scored || score.Beats(best_score)) {
      scored = true;
      best_score = score;
      corpus.best_round = r.round;
      for (size_t i = 0; i < tasks.size(); ++i) {
        corpus.tasks[i].best_cost_ns = CostOf(greedy_plans[i]);
        corpus.tasks[i].best_greedy = std::move(greedy_plans[i]);
      }
    }
  };
  auto out_of_time = [&] { return config.max_seconds > 0 && elapsed() >= config.max_seconds; };
  // Every task's newest round: the aggregate's size after it, and when it ended.
  auto stamp_round = [&] {
    for (ImitationResult& t : corpus.tasks) {
      t.rounds.back().demonstrations = pool.size();
      t.rounds.back().seconds = elapsed();
    }
  };
  const bool averaging = config.weight_mean_from_round >= 0;
  if (averaging) agent.ClearWeightMean();
  auto fold = [&](int round) {
    if (averaging && round >= config.weight_mean_from_round) agent.FoldWeightsIntoMean();
  };
  for (int round = 0;; ++round) {
    ImitationRound r;
    r.round = round;
    const bool last = round >= config.dagger_rounds || out_of_time();
    roll_out(r, !last);
    fold(r.round);
    if (!last) {
      size_t mistakes = 0;
      agent.SetDemonstrations(RoundSet(agent, pool, config.focus_on_mistakes, &mistakes));
      for (int u = 0; u < config.updates_per_round; ++u) agent.PretrainStep(rng);
      corpus.updates += static_cast<uint64_t>(std::max(config.updates_per_round, 0));
      for (ImitationResult& t : corpus.tasks) t.rounds.back().mistakes = mistakes;
    }
    stamp_round();
    if (last) break;
  }
  // Polish: the experts' own states alone. Their labels are right (a DAgger
  // state's label is the plan's tier for a state the plan never reached),
  // and a policy that gets every one of them right replays the experts' plans.
  if (config.polish_updates > 0) {
    if (config.polish_aggregate_share > 0 && !pool.empty()) {
      const double share = config.polish_aggregate_share;
      const size_t extra = static_cast<size_t>(std::llround(share / (1 - share) * static_cast<double>(expert_states.size())));
      std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
      std::vector<Transition> set = expert_states;
      set.reserve(set.size() + extra);
      for (size_t i = 0; i < extra; ++i) set.push_back(pool[pick(rng)]);
      agent.SetDemonstrations(std::move(set));
    } else {
      agent.SetDemonstrations(expert_states);
    }
    const int chunk = config.polish_chunk;  // > 0, checked above
    for (int done = 0; done < config.polish_updates && !out_of_time(); done += chunk) {
      // Mistakes before the chunk, on each task's own states.
      std::vector<size_t> mistakes(tasks.size(), 0);
      size_t all_mistakes = 0;
      for (size_t i = 0; i < tasks.size(); ++i) {
        mistakes[i] = expert_labels[i].Mistakes(agent);
        all_mistakes += mistakes[i];
      }
      if (all_mistakes == 0) break;  // the greedy plans are the experts' already
      for (int u = 0; u < chunk; ++u) agent.PretrainStep(rng);
      corpus.updates += static_cast<uint64_t>(chunk);
      ImitationRound r;
      r.round = static_cast<int>(corpus.tasks[0].rounds.size());
      r.polish = true;
      roll_out(r, false);
      fold(r.round);
      for (size_t i = 0; i < tasks.size(); ++i) {
        ImitationRound& done_round = corpus.tasks[i].rounds.back();
        done_round.mistakes = mistakes[i];
        done_round.demonstrations = expert_states.size();
        done_round.seconds = elapsed();
      }
    }
  }
  if (averaging && agent.weights_folded() > 0) {
    ImitationRound r;
    r.round = static_cast<int>(corpus.tasks[0].rounds.size());
    r.weight_mean = true;
    r.weights_folded = agent.weights_folded();
    agent.LoadWeightMean();
    corpus.weight_mean = agent.SerializeWeights();
    roll_out(r, false);
    stamp_round();
    agent.ClearWeightMean();
  }
  // ExpertChoice::kFinished: the rounds kept are ranked again by their greedy
  // plans finished as the experts were (FinishEpisodePlan), the plans the
  // "+polish" pipeline makes: the round whose MDP episode is fastest need not
  // be the one the polish takes furthest (default-scale AlexNet, async: the
  // best round's episode 0.01% faster than its expert's replay, finished
  // 0.4% slower; docs/results/learning.md, session fifty-two).
  if (config.expert_choice == ExpertChoice::kFinished && portfolio.size() > 1) {
    std::vector<std::pair<CorpusScore, size_t>> finished;
    for (size_t k = 0; k < portfolio.size(); ++k) {
      agent.LoadWeights(portfolio[k].second.weights);
      CorpusScore score;
      size_t counted = 0;
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (tasks[i].validation != validated) continue;  // the tasks the rounds were scored on
        EpisodeSummary played = RunEpisode(*tasks[i].env, greedy);
        if (takes_turns[i]) tasks[i].env->ReleaseDecisionSlots();
        ++counted;
        if (played.oom) {
          ++score.oom;
          continue;
        }
        const Workload& w = tasks[i].env->workload();
        score.mean_relative += MinCostNs(w) / FinishedCostNs(w, played.plan, config.expert_finish_seconds);
      }
      score.mean_relative /= static_cast<double>(std::max<size_t>(counted, 1));
      portfolio[k].second.finished_relative = score.mean_relative;
      LogInfo("imitation_round_finished")
          .kv("round", portfolio[k].second.round)
          .kv("mean_relative", validated ? portfolio[k].second.validation_relative : portfolio[k].second.mean_relative)
          .kv("finished_relative", score.mean_relative);
      finished.push_back({score, k});
    }
    std::stable_sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.first.Beats(b.first); });
    std::vector<std::pair<CorpusScore, CorpusImitationResult::PortfolioRound>> ranked;
    for (const auto& [score, k] : finished) ranked.push_back(std::move(portfolio[k]));
    portfolio = std::move(ranked);
    if (portfolio.front().second.round != corpus.best_round) {
      corpus.best_round = portfolio.front().second.round;
      agent.LoadWeights(portfolio.front().second.weights);
      for (size_t i = 0; i < tasks.size(); ++i) {
        corpus.tasks[i].best_greedy = RunEpisode(*tasks[i].env, greedy);
        if (takes_turns[i]) tasks[i].env->ReleaseDecisionSlots();
        corpus.tasks[i].best_cost_ns = CostOf(corpus.tasks[i].best_greedy);
      }
    }
  }
  agent.LoadWeights(portfolio.front().second.weights);
  agent.SyncTarget();
  if (config.learning_rate_after > 0) agent.SetLearningRate(config.learning_rate_after);
  agent.SetDemonstrations(std::move(pool));
  for (auto& [score, kept] : portfolio) corpus.portfolio.push_back(std::move(kept));
  corpus.seconds = elapsed();
  for (size_t i = 0; i < tasks.size(); ++i) {
    ImitationResult& t = corpus.tasks[i];
    t.best_round = corpus.best_round;
    t.updates = corpus.updates;
    t.seconds = corpus.seconds;
    LogInfo("imitation_finished").kv("workload", tasks[i].name).kv("expert", t.expert)
        .kv("expert_runtime_ns", t.expert_cost_ns).kv("expert_finished_runtime_ns", t.expert_finished_cost_ns)
        .kv("best_round", t.best_round)
        .kv("greedy_runtime_ns", t.best_cost_ns).kv("rounds", t.rounds.size()).kv("updates", t.updates)
        .kv("seconds", t.seconds);
  }
  return corpus;
}

ImitationResult LearnFromPlans(PlacementAgent& agent, PlacementEnv& env, const std::vector<PlacementPlan>& experts,
                               const ImitationConfig& config, std::mt19937_64& rng) {
  return std::move(LearnFromCorpus(agent, {ImitationTask{&env, experts, env.workload().name}}, config, rng).tasks[0]);
}

SelfImitationResult LearnFromOwnSearches(PlacementAgent& agent, PlacementEnv& env, const SelfImitationConfig& config,
                                         std::mt19937_64& rng, const std::vector<PlacementPlan>& first_starts) {
  if (config.rounds < 0) throw std::invalid_argument("LearnFromOwnSearches: rounds must be >= 0");
  if (!agent.supports_demonstrations())
    throw std::invalid_argument("LearnFromOwnSearches: agent " + agent.name() + " does not learn from demonstrations");
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  SelfImitationResult result;
  result.best_greedy = RunEpisode(env, [&](const Observation& o) { return agent.Greedy(o.data()); });
  result.start_cost_ns = CostOf(result.best_greedy);
  std::string best_weights = agent.SerializeWeights();
  const std::vector<PlacementPlan> no_starts;
  for (int round = 0; round < config.rounds; ++round) {
    PlanSearchResult searched = SearchPlan(env, ScoresOf(agent), config.search, round == 0 ? first_starts : no_starts);
    // The episode's own plan: the MDP cannot say when a copy starts.
    PlacementPlan target = std::move(searched.best_episode_plan);
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
