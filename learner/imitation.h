// Learning from the incumbent before learning alone: the best plan of other
// policies (an ILP, Sentinel, ...) is played through the placement MDP as
// demonstrations (envs/demonstration.h); the agent is pre-trained on them
// with DQfD's large-margin loss (Hester et al. 2018), then DAgger rounds
// (Ross et al. 2011) roll its greedy policy out, label every state it visits
// with the expert plan's tier for that tensor at that kernel, and train on
// the aggregate. The weights of the round whose greedy plan the cost model
// scores best are kept. Without this, the networks learned a constant action
// (docs/results/learning.md): with 10^3-10^6 decisions an episode and
// clip-to-fit making "DRAM" always safe, random play gave them nothing to
// tell apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "common/named_enum.h"
#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/plan_search.h"

namespace tensortier {

// Which of a task's demonstrations it imitates (ImitationConfig::expert_choice).
enum class ExpertChoice { kEpisode, kFinished };
inline constexpr EnumName<ExpertChoice> kExpertChoiceNames[] = {{ExpertChoice::kEpisode, "episode"},
                                                                {ExpertChoice::kFinished, "finished"}};
inline ExpertChoice ParseExpertChoice(const std::string& name) {
  return ParseEnumName(kExpertChoiceNames, "expert choice", name);
}
inline std::string ExpertChoiceName(ExpertChoice choice) { return NameOfEnum(kExpertChoiceNames, choice); }

struct ImitationConfig {
  int pretrain_updates = 3000;   // steps on the expert's own episode before the first DAgger round
  // 24: with decisions per access gap a round takes 0.1-0.4 s on the zoo,
  // and more rounds helped a little (8 -> 24: Inception-v3 36.4 -> 37.9%,
  // AlexNet 36.3 -> 36.8%, the others within 0.2; docs/results/learning.md).
  int dagger_rounds = 24;
  int updates_per_round = 1500;
  // The aggregate of labelled states is capped (reservoir sampling): long
  // episodes (MobileNetV2: 7x10^5 decisions) would otherwise hold gigabytes.
  size_t max_demonstrations = 200000;
  double max_seconds = 0;        // 0 = no limit; checked between rounds
  // DAgger rounds train on the aggregate with the states where the policy
  // disagrees with the expert counted twice (imitation.cc). Off: it helped
  // Inception-v3 (+5.7 points) and cost ResNet-152 8 (docs/results/learning.md).
  bool focus_on_mistakes = false;
  // Workers' epsilon schedule starts here instead of DqnConfig::epsilon_start
  // once the agent imitated (DQfD explores little after pre-training): random
  // actions at 0.9 threw the imitated policy's episodes back to random play.
  double epsilon_start = 0.1;
  // The agent's learning rate once imitation is over (0 keeps its own).
  // At DQN's 1e-3 TD updates pull the live policy off the expert (AlexNet
  // greedy 36.4% -> 31.3% in 100 episodes; make run's final network 26.8%)
  // but on the way pass better policies, which the run keeps as its fastest
  // (make run: 35.9%, the imitated one 34.4%); at 1e-4 the live network
  // drifted less (31.3%) and no evaluation beat the imitated one (33.5%), so
  // the final plan was worse (34.1% against 36.5%). One run each
  // (docs/results/learning.md): kept off by default.
  double learning_rate_after = 0.0;
  // After the DAgger rounds, steps on the expert's own states alone, in
  // chunks of polish_chunk, each chunk's greedy plan scored like a round
  // (stops early once the policy gets all of them right). The DAgger
  // aggregate dilutes them (24 rounds: 1 state in 25) and its other labels
  // are the plan's tiers for states the plan never reached; 30,000 steps
  // took the kept greedy plan 0.5-1.1 points closer to AutoTM-sync's on
  // MobileNetV2, Inception-v3 and ResNet-152 (docs/results/learning.md).
  // A decaying learning rate, class-balanced draws, a 4x large-margin
  // weight and 256-256 units did not fit them better. 150,000: the chunks'
  // greedy plans scatter, and more of them find better ones (default-scale
  // ResNet-152, sync: 61.29 -> 61.76% of all-DRAM, searched 61.72 ->
  // 61.86%; async 60.08 -> 61.40%; MobileNetV2 async 61.64 -> 62.08%; the
  // others' best chunk came early; 256-256 units and more copies of the
  // mistaken states did not help; docs/results/learning.md, section 3,
  // session twenty-five). A policy that gets every expert state right stops
  // at once, as the synthetic graphs of the tests do.
  int polish_updates = 150000;
  int polish_chunk = 1500;
  // Share of the polish set drawn from the DAgger aggregate (the states the
  // rollouts visited), the rest the experts' own states; 0: those alone.
  // On ResNet-152 most polish chunks' greedy plans fall to 45-47%; at 0.5
  // they stayed at 58-61% with seed 1 (best 61.1 against 60.9%) but not with
  // seed 2 (best 58.2% either way), and Inception-v3 fell 48.8 -> 47.9%
  // (docs/results/learning.md), so off.
  double polish_aggregate_share = 0.0;
  // DAgger labels that price the room (RolloutLabels::price_room): where a
  // rollout's kept tensors crowd out a DRAM label, the cheapest of them to
  // evict are labelled slow (docs/results/learning.md, section 3, session
  // thirty-six).
  bool room_labels = false;
  // DAgger: the states where the policy kept a tensor the expert evicts and
  // its room crowded out a clipped DRAM label (Demonstration::crowding)
  // enter the aggregate twice: the mistakes that cost the most, where
  // focus_on_mistakes repeats every mistake (session thirty-six).
  bool repeat_crowding_mistakes = false;
  // From this round on (DAgger rounds and polish chunks alike), the weights
  // each round evaluated are folded into a running mean
  // (PlacementAgent::FoldWeightsIntoMean), and after the last round the mean
  // is evaluated as one more round (ImitationRound::weight_mean) that
  // competes with the snapshots for the best score. -1: off.
  int weight_mean_from_round = -1;
  // LearnFromCorpus keeps the weights of this many rounds, those with the
  // best scores (the validation tasks' where there are any), the best first:
  // a portfolio whose members' greedy plans a model none of them saw
  // chooses among by its own cost model (agents/policy_portfolio.h): the
  // eight best-validated rounds of a corpus, within 2 points of each other
  // on its validation tasks, were 13 apart on a row GRU none saw
  // (docs/results/learning.md, session thirty-eight). 1: the best round alone.
  int portfolio_size = 8;
  // Of a task's demonstrations, the one imitated: the fastest as the MDP
  // replays it (kEpisode), or the fastest once that replay is finished as the
  // plan-time pipelines finish the greedy plan (kFinished: FinishEpisodePlan,
  // async copies scheduled and the polish, within expert_finish_seconds
  // each). The replay loses the copy timing a plan was made with, and the
  // polish gains back different amounts from different replays.
  ExpertChoice expert_choice = ExpertChoice::kEpisode;
  double expert_finish_seconds = 5;
};

struct ImitationRound {
  int round = 0;                 // 0: after pre-training
  double greedy_cost_ns = 0;     // cost model, the greedy policy's plan
  bool greedy_oom = false;
  size_t demonstrations = 0;     // in the aggregate after the round
  // DAgger rounds: states of the aggregate the policy got wrong before the
  // round's training (focus_on_mistakes only); polish rounds: of the
  // expert's own states.
  size_t mistakes = 0;
  bool polish = false;           // a polish round (ImitationConfig::polish_updates)
  bool weight_mean = false;      // the mean of the snapshots' weights (weight_mean_from_round)
  uint64_t weights_folded = 0;   // weight_mean rounds: how many snapshots it averages
  uint32_t clipped_labels = 0;   // DRAM labels of the round's rollouts the MDP would clip
  uint32_t room_relabelled = 0;  // labels of the round's rollouts the room turned slow (room_labels)
  uint32_t crowding_mistakes = 0;  // states of the round's rollouts repeated (repeat_crowding_mistakes)
  double seconds = 0;            // since the phase began
};

struct ImitationResult {
  std::string expert;            // produced_by of the plan demonstrated
  double expert_cost_ns = 0;     // the plan as the MDP replays it
  double expert_finished_cost_ns = 0;  // that replay finished (ExpertChoice::kFinished; 0 with kEpisode)
  std::vector<ImitationRound> rounds;
  int best_round = 0;            // whose weights the agent holds at the end
  double best_cost_ns = 0;
  EpisodeSummary best_greedy;    // that round's greedy episode
  uint64_t updates = 0;
  double seconds = 0;
};

// Demonstrates the cheapest of `experts` (by the MDP's replay, cost model)
// and trains `agent` on it; the agent ends with the best round's weights and
// keeps the aggregate as its demonstrations (DQfD mixes them into later
// updates). `env` is reset repeatedly and left done. Throws
// std::invalid_argument when there is no expert or the agent does not learn
// from demonstrations.
ImitationResult LearnFromPlans(PlacementAgent& agent, PlacementEnv& env, const std::vector<PlacementPlan>& experts,
                               const ImitationConfig& config, std::mt19937_64& rng);

// One network for many models (issue #15, criterion 5): the same phases on
// a corpus, every model's expert states in one aggregate, each DAgger round
// and polish chunk rolled out on every model; the weights kept are those
// whose greedy plans have the fewest out-of-memory episodes, then the highest
// mean of all-DRAM time / plan time. LearnFromPlans is a corpus of one.
//
// Validation tasks are not learned from: each round's greedy plan is played
// on them too, and when there are any, they alone choose the weights kept.
// The rounds of a corpus scatter by several points on models outside it
// while their mean on the corpus barely moves, so the round that fits the
// corpus best is not the one that places a new model best
// (docs/results/learning.md, session thirty-one).
struct ImitationTask {
  // Reset repeatedly and left done. One whose decision slots come released
  // (PlacementEnv::ReleaseDecisionSlots) has them built for each episode and
  // released after: a corpus's memory bounded, at the price of the builds.
  PlacementEnv* env = nullptr;
  std::vector<PlacementPlan> experts;      // the cheapest (ImitationConfig::expert_choice) is imitated; none for validation
  std::string name;                        // for the log
  bool validation = false;
};

struct CorpusImitationResult {
  // One per task, in order: its expert, its greedy plan each round, and at
  // the corpus's best round (best_round, updates and seconds are the corpus's).
  // A validation task has no expert (expert empty, expert_cost_ns 0).
  std::vector<ImitationResult> tasks;
  int best_round = 0;
  uint64_t updates = 0;
  double seconds = 0;
  // The mean of the weights (weight_mean_from_round), whether it was the
  // best round or not (PlacementAgent::SerializeWeights' blob; empty: off).
  std::string weight_mean;
  // ImitationConfig::portfolio_size rounds' weights, the best score first
  // (portfolio[0] is best_round's, the agent's weights at the end).
  struct PortfolioRound {
    int round = 0;
    double mean_relative = 0;        // the score it was ranked by
    double validation_relative = 0;  // 0 without validation tasks
    double finished_relative = 0;    // ExpertChoice::kFinished: its greedy plans finished, the score it was ranked by last
    std::string weights;             // PlacementAgent::SerializeWeights
  };
  std::vector<PortfolioRound> portfolio;
};

// `on_round` (progress) is told each round's mean of all-DRAM time / greedy
// plan time over the tasks learned from and over the validation tasks (0
// when there are none); out-of-memory plans count 0.
using ImitationProgress =
    std::function<void(const ImitationRound& round, double mean_relative, double validation_relative)>;
CorpusImitationResult LearnFromCorpus(PlacementAgent& agent, const std::vector<ImitationTask>& tasks,
                                      const ImitationConfig& config, std::mt19937_64& rng,
                                      const ImitationProgress& on_round = {});

// Learning from its own search (expert iteration): each round searches from
// the agent's greedy plan (envs/plan_search.h, guided by its network) and
// imitates the searched plan (LearnFromPlans with `imitation`). Needs no plan
// of the workload from any baseline: it fine-tunes a network trained on
// other models (`train --init`). Measured (docs/results/learning.md): 10
// rounds took a corpus network's greedy plan on three models it never saw
// from 43.1 / 45.3 / 34.4% to 45.8 / 47.7 / 43.9% of all-DRAM, still 4-11
// points below AutoTM-sync's.
struct SelfImitationConfig {
  int rounds = 0;  // 0: none
  // Not PlanTimeSearch(): the plan found here is a training target, and
  // the fine-tuning results of docs/results/learning.md were measured with
  // 120 s a round.
  PlanSearchOptions search{64, 16, 120};
  // With a portfolio to start from (train --init DIR): the first round's
  // search also starts from the best of the searches from this many of its
  // members' greedy plans (agents/policy_portfolio.h SearchFromFastest);
  // 1: from the chosen member's network alone.
  int portfolio_search_starts = 8;
  ImitationConfig imitation = Small();

  static ImitationConfig Small() {
    ImitationConfig c;
    c.pretrain_updates = 500;
    c.dagger_rounds = 2;
    c.updates_per_round = 500;
    // A searched plan of one model needs a longer polish to be held: from a
    // portfolio's best search on the column LSTM, 3,000 updates left the
    // greedy plan at 68.9% of all-DRAM against the 70.2% imitated, 12,000
    // at 70.5% (docs/results/learning.md, session thirty-nine). The polish
    // stops early once the network agrees with every state of the plan.
    c.polish_updates = 12000;
    return c;
  }
};

struct SelfImitationRound {
  double searched_cost_ns = 0;  // the plan imitated
  double greedy_cost_ns = 0;    // the greedy plan after the round
  double seconds = 0;           // since the phase began
};

struct SelfImitationResult {
  std::vector<SelfImitationRound> rounds;
  double start_cost_ns = 0;  // the greedy plan before the first round
  EpisodeSummary best_greedy;  // of the weights the agent holds at the end (the fastest greedy plan seen)
  double seconds = 0;
};

// Runs config.rounds rounds; the agent ends with the weights whose greedy
// plan was the fastest, those it started with included, so it never ends
// worse than it began. Throws std::invalid_argument for an agent that does
// not learn from demonstrations or rounds < 0.
// `first_starts`: plans the first round's search also starts from (SearchPlan's
// starting_plans), e.g. the best of a portfolio's searches.
SelfImitationResult LearnFromOwnSearches(PlacementAgent& agent, PlacementEnv& env, const SelfImitationConfig& config,
                                         std::mt19937_64& rng, const std::vector<PlacementPlan>& first_starts = {});

}  // namespace tensortier
