// Where the learned placement stands against the baselines, and what the
// network adds (issue #15): for each workload, on the cost model at one DRAM
// limit, in one run,
//   - the baselines' plans (first-touch, Sentinel, AutoTM, CA-LM, ...);
//   - the same MDP driven without a network: a constant action (DRAM, which
//     with clip-to-fit is the MDP's hottest-first fill, i.e. heat order alone,
//     and slow) and an untrained network;
//   - each baseline's plan replayed through the MDP (what a demonstration
//     keeps of the expert);
//   - a DQN agent trained in-process (no fleet) with the product's parts:
//     imitation of the baselines' best plan (learner/imitation.h: DQfD
//     pre-training and DAgger rounds), optionally its own episodes after
//     that, and the plan-time search its network guides (envs/plan_search.h);
//     the greedy plan, the searched plan and the best episode explored are
//     each labelled as what they are, and the untrained network goes through
//     the same search (the ablation);
//   - with --guided-ilp-shares, the ILP the network guides
//     (policies/guided_ilp.h), and the same ILP guided by the untrained
//     network and by no network (the constant DRAM action, its decisions
//     ranked by heat or at random);
//   - after imitation, on stderr, how the kept network imitates: its mistakes
//     on the expert's own states, whether a nearest-neighbour classifier on
//     the same features does better (are the labels a function of what the
//     network sees?), and where its greedy plan loses time to the expert's;
//   - with --refine-rounds, expert iteration with the guided ILP as the
//     improvement step (an experiment that did not pay: learning.md).
// docs/results/learning.md has the figures and the commands.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "replay/replay_buffer.h"
#include "envs/cost_model.h"
#include "envs/demonstration.h"
#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "envs/workload_spec.h"
#include "learner/imitation.h"
#include "policies/guided_ilp.h"
#include "policies/policy.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct Row {
  std::string workload;
  std::string plan;    // what produced the plan
  std::string source;  // baseline, mdp without network, demonstration, greedy policy, explored
  double percent = 0;  // all-DRAM time / plan time, cost model
  bool oom = false;
  double seconds = 0;  // time to the plan (training included for learned rows)
};

double Percent(const Workload& w, const PlacementPlan& plan, bool* oom) {
  CostReport r = EvaluatePlan(w, plan);
  if (oom) *oom = r.oom;
  return r.oom || r.total_ns <= 0 ? 0.0 : 100.0 * MinCostNs(w) / r.total_ns;
}

double SummaryPercent(const Workload& w, const EpisodeSummary& s) {
  return s.oom || s.cost.total_ns <= 0 ? 0.0 : 100.0 * MinCostNs(w) / s.cost.total_ns;
}

struct Options {
  double dram_fraction = 0.2;
  MigrationMode mode = MigrationMode::kSync;
  std::vector<std::string> baselines = {"first-touch", "sentinel", "autotm-sync", "ca-lm", "deeptm-heuristic"};
  std::vector<std::string> demos = {"autotm-sync", "sentinel"};
  int pretrain_updates = ImitationConfig{}.pretrain_updates;
  int dagger_rounds = ImitationConfig{}.dagger_rounds;
  bool focus_on_mistakes = false;
  PlanSearchOptions search{64, 16, 120};
  int dagger_updates = ImitationConfig{}.updates_per_round;
  int episodes = 0;
  int updates_per_episode = 64;
  double epsilon_start = 0.1;
  int eval_every = 10;
  double beta = 1.0;
  double learning_rate = 1e-3;
  double demo_fraction = 0.25;
  double demo_margin = 0.8;
  double demo_loss_weight = 1.0;
  double demo_class_balance = DqnConfig{}.demo_class_balance;
  double gamma = 0.99;
  double solver_seconds = 60;
  uint64_t seed = 1;
  bool policy_order = false;
  std::vector<int> hidden = {128, 128};
  DecisionScope scope = EnvConfig{}.scope;
  size_t max_demonstrations = ImitationConfig{}.max_demonstrations;
  int polish_updates = ImitationConfig{}.polish_updates;
  double polish_aggregate_share = ImitationConfig{}.polish_aggregate_share;
  std::string save_path;  // --holdout: the corpus network as an agent checkpoint (train --init takes it)
  std::vector<double> guided_ilp_shares;  // policies/guided_ilp.h: shares of the network's decisions fixed (none: no row)
  int self_rounds = 0;    // --holdout: rounds of search + imitation of the searched plan on each held-out model
  // After imitation: rounds of imitating the plan the guided ILP makes of the
  // network's own greedy plan with its surest `refine_share` fixed (expert
  // iteration with the ILP as the improvement step). The labels of the
  // decisions it fixes are the network's own choices, so the expert resolves
  // near-ties the network's way instead of CBC's.
  int refine_rounds = 0;
  double refine_share = 0.5;
};

ImitationConfig ImitationOf(const Options& o) {
  ImitationConfig ic;
  ic.pretrain_updates = o.pretrain_updates;
  ic.dagger_rounds = o.dagger_rounds;
  ic.updates_per_round = o.dagger_updates;
  ic.focus_on_mistakes = o.focus_on_mistakes;
  ic.max_demonstrations = o.max_demonstrations;
  ic.polish_updates = o.polish_updates;
  ic.polish_aggregate_share = o.polish_aggregate_share;
  return ic;
}

// Fine-tuning with no baseline plan (learner/imitation.h LearnFromOwnSearches).
// Returns the final greedy episode; *best_searched is the best searched
// plan's percentage over the rounds.
EpisodeSummary SelfImitate(PlacementAgent& agent, PlacementEnv& env, const Workload& w, const Options& o,
                           std::mt19937_64& rng, double* best_searched) {
  SelfImitationConfig c;
  c.rounds = o.self_rounds;
  c.search = o.search;
  SelfImitationResult r = LearnFromOwnSearches(agent, env, c, rng);
  *best_searched = 0;
  for (const SelfImitationRound& round : r.rounds) {
    *best_searched = std::max(*best_searched, 100.0 * MinCostNs(w) / round.searched_cost_ns);
    std::fprintf(stderr, "    self round: searched %.2f%%, greedy after %.2f%% (%.1f s)\n",
                 100.0 * MinCostNs(w) / round.searched_cost_ns, 100.0 * MinCostNs(w) / round.greedy_cost_ns,
                 round.seconds);
  }
  return RunEpisode(env, [&](const Observation& ob) { return agent.Greedy(ob.data()); });
}

// Whether the expert's labels are a function of the observation at all: the
// leave-one-out nearest-neighbour error on its own states (a label its
// nearest other state does not share), and for the states the network gets
// wrong, how far the nearest state with the other label is. A nearest-
// neighbour error near the network's mistake rate says the features, not the
// network's fit, stand between the greedy plan and the expert's.
void PrintLabelLocality(const std::vector<Transition>& states, const PlacementAgent& agent) {
  const size_t n = states.size();
  if (n < 2) return;
  std::vector<double> nearest_same(n, 1e30), nearest_other(n, 1e30);
  std::vector<size_t> other_of(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const float* a = states[i].observation.data();
    for (size_t j = i + 1; j < n; ++j) {
      const float* b = states[j].observation.data();
      double d = 0;
      for (size_t f = 0; f < states[i].observation.size(); ++f) d += double(a[f] - b[f]) * double(a[f] - b[f]);
      const bool same = states[i].action == states[j].action;
      std::vector<double>& to = same ? nearest_same : nearest_other;
      if (d < to[i]) to[i] = d, other_of[i] = same ? other_of[i] : j;
      if (d < to[j]) to[j] = d, other_of[j] = same ? other_of[j] : i;
    }
  }
  size_t nn_wrong = 0, nn_wrong_slow = 0, mistakes = 0, mistakes_nn_wrong = 0;
  std::vector<double> mistake_other;
  const size_t features = states[0].observation.size();
  std::vector<double> feature_gap(features, 0.0);  // mean |difference| to the nearest other-labelled state
  for (size_t i = 0; i < n; ++i) {
    const bool nn = nearest_other[i] < nearest_same[i];
    nn_wrong += nn;
    nn_wrong_slow += nn && states[i].action == 1;
    if (agent.Greedy(states[i].observation.data()) != states[i].action) {
      ++mistakes;
      mistakes_nn_wrong += nn;
      mistake_other.push_back(std::sqrt(nearest_other[i]));
      for (size_t f = 0; f < features; ++f)
        feature_gap[f] += std::fabs(states[i].observation[f] - states[other_of[i]].observation[f]);
    }
  }
  std::sort(mistake_other.begin(), mistake_other.end());
  auto quantile = [&](double q) {
    return mistake_other.empty() ? 0.0 : mistake_other[static_cast<size_t>(q * (mistake_other.size() - 1))];
  };
  std::fprintf(stderr,
               "    label locality: nearest-neighbour error %zu of %zu states (%zu of them slow); of the network's %zu "
               "mistakes %zu have a nearer state with the other label; distance to it (L2) p10 %.4f, median %.4f, "
               "p90 %.4f\n",
               nn_wrong, n, nn_wrong_slow, mistakes, mistakes_nn_wrong, quantile(0.1), quantile(0.5), quantile(0.9));
  if (mistakes == 0) return;
  std::fprintf(stderr, "    mean |difference| per feature, mistake to its nearest other-labelled state:");
  for (size_t f = 0; f < features; ++f) std::fprintf(stderr, " %zu:%.4f", f, feature_gap[f] / mistakes);
  std::fprintf(stderr, "\n");
}

// Where the greedy plan loses its time against the expert's: the cost
// model's per-kernel difference, the persistent tensors each plan ends in
// another tier than it starts (copied back after the last kernel), and the
// kernels that lose the most, with the tiers of what they access.
void PrintWhereTheGreedyPlanLoses(const Workload& w, const EpisodeSummary& greedy, const PlacementPlan& expert) {
  const CostReport& g = greedy.cost;
  const CostReport e = EvaluatePlan(w, expert);
  std::vector<double> diff(g.kernel_ns.size());
  double total = 0;
  for (size_t k = 0; k < diff.size() && k < e.kernel_ns.size(); ++k) total += diff[k] = g.kernel_ns[k] - e.kernel_ns[k];
  std::vector<double> sorted = diff;
  std::sort(sorted.rbegin(), sorted.rend());
  double top20 = 0, top100 = 0, positive = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i < 20) top20 += sorted[i];
    if (i < 100) top100 += sorted[i];
    positive += std::max(0.0, sorted[i]);
  }
  std::fprintf(stderr,
               "    greedy - expert: total %.1f ms (exec %.1f, copies %.1f; to DRAM %u vs %u copies, to slow %u vs "
               "%u); kernels slower %.1f ms, the 20 worst %.1f ms, the 100 worst %.1f ms\n",
               total / 1e6, (g.exec_ns - e.exec_ns) / 1e6, (g.migration_ns - e.migration_ns) / 1e6,
               g.migrations_to_dram, e.migrations_to_dram, g.migrations_to_slow, e.migrations_to_slow,
               positive / 1e6, top20 / 1e6, top100 / 1e6);
  std::vector<size_t> worst(diff.size());
  for (size_t k = 0; k < worst.size(); ++k) worst[k] = k;
  std::sort(worst.begin(), worst.end(), [&](size_t a, size_t b) { return diff[a] > diff[b]; });
  const auto gt = greedy.plan.TierTimeline(w);
  const auto et = expert.TierTimeline(w);
  for (const PlacementPlan* plan : {&greedy.plan, &expert}) {
    const std::vector<EndsElsewhereTensor> moved = EndsElsewhere(w, *plan);
    size_t started_slow = 0;
    double bytes = 0;
    for (const EndsElsewhereTensor& t : moved)
      started_slow += t.start == Tier::kSlow, bytes += static_cast<double>(w.tensors[t.tensor].size_bytes);
    std::fprintf(stderr, "      %s: %zu persistent tensors end in another tier than they start (%zu of them "
                 "started slow), %.1f MB\n", plan == &expert ? "expert" : "greedy", moved.size(), started_slow,
                 bytes / 1e6);
  }
  for (size_t i = 0; i < 6 && i < worst.size(); ++i) {
    const size_t k = worst[i];
    std::fprintf(stderr, "      kernel %zu %s: +%.2f ms (DRAM time %.2f ms); accessed, greedy/expert tier:", k,
                 w.kernels[k].name.c_str(), diff[k] / 1e6, w.kernels[k].dram_time_ns / 1e6);
    for (uint32_t a : w.accesses_of_kernel(k)) {
      const uint32_t t = w.accesses[a].tensor;
      std::fprintf(stderr, " [%s %.1f MB %c/%c]", w.tensors[t].name.c_str(), w.tensors[t].size_bytes / 1e6,
                   gt[k][t] == Tier::kDram ? 'D' : 's', et[k][t] == Tier::kDram ? 'D' : 's');
    }
    std::fprintf(stderr, "\n");
  }
}

std::vector<Row> RunWorkload(const std::string& spec, const Options& o) {
  std::vector<Row> rows;
  Workload w = LoadWorkloadSpec(spec);
  const std::string name = w.name.empty() ? spec : w.name;
  const uint64_t limit = static_cast<uint64_t>(o.dram_fraction * static_cast<double>(w.peak_live_bytes()));
  auto add = [&](std::string plan, std::string source, double percent, bool oom, double seconds) {
    rows.push_back({name, std::move(plan), std::move(source), percent, oom, seconds});
    const Row& r = rows.back();
    std::fprintf(stderr, "  %-34s %-22s %6.1f%%%s  %.1f s\n", r.plan.c_str(), r.source.c_str(), r.percent,
                 r.oom ? " OOM" : "", r.seconds);
  };
  std::fprintf(stderr, "%s: %zu kernels, %zu tensors, DRAM %.2f x peak (%llu B), %s\n", name.c_str(),
               w.num_kernels(), w.num_tensors(), o.dram_fraction, static_cast<unsigned long long>(limit),
               MigrationModeName(o.mode));

  PolicyContext ctx;
  ctx.dram_limit_bytes = limit;
  ctx.mode = o.mode;
  ctx.seed = o.seed;
  ctx.solver_time_limit_seconds = o.solver_seconds;
  std::vector<std::pair<std::string, PlacementPlan>> plans;
  for (const std::string& b : o.baselines) {
    PolicyResult r;
    try {
      r = MakePolicy(b)->Decide(w, ctx);
    } catch (const std::runtime_error& e) {  // a solver that found nothing: the row says so, the rest goes on
      std::fprintf(stderr, "  %s failed: %s\n", b.c_str(), e.what());
      add(b + " (failed: " + e.what() + ")", "baseline", 0, true, 0);
      continue;
    }
    bool oom = false;
    double pct = Percent(w, r.plan, &oom);
    std::string label = b;
    if (r.solver) label += " (" + r.solver->status + ")";
    add(label, "baseline", pct, oom, r.decision_seconds);
    plans.emplace_back(b, std::move(r.plan));
  }

  EnvConfig ec;
  ec.dram_limit_bytes = limit;
  ec.mode = o.mode;
  ec.beta = o.beta;
  ec.scope = o.scope;
  PlacementEnv env(w, ec);
  auto t0 = Clock::now();
  EpisodeSummary s = RunEpisode(env, [](const Observation&) { return 0; });
  add("constant DRAM (heat order, clip)", "mdp, no network", SummaryPercent(w, s), s.oom, Seconds(t0));
  t0 = Clock::now();
  s = RunEpisode(env, [](const Observation&) { return 1; });
  add("constant slow", "mdp, no network", SummaryPercent(w, s), s.oom, Seconds(t0));

  DqnConfig dc;
  dc.hidden = o.hidden;
  dc.learning_rate = o.learning_rate;
  dc.gamma = o.gamma;
  dc.target_update_interval = 200;
  dc.learning_starts = 512;
  dc.seed = o.seed;
  dc.device = "cpu";
  dc.demo_fraction = o.demo_fraction;
  dc.demo_margin = o.demo_margin;
  dc.demo_loss_weight = o.demo_loss_weight;
  dc.demo_class_balance = o.demo_class_balance;
  std::unique_ptr<PlacementAgent> agent_owner = MakeAgent("dqn", dc.ToJson());
  PlacementAgent& agent = *agent_owner;
  std::mt19937_64 rng(o.seed);
  auto greedy = [&](const Observation& ob) { return agent.Greedy(ob.data()); };
  if (o.policy_order) {
    const ActionScores scores = ScoresOf(agent);
    env.SetDecisionPriority([scores](const std::vector<Observation>& obs, std::vector<float>& priority) {
      for (size_t i = 0; i < obs.size(); ++i) {
        auto [dram, slow] = scores(obs[i]);
        priority[i] = dram - slow;
      }
    });
  }
  t0 = Clock::now();
  s = RunEpisode(env, greedy);
  add("untrained network, greedy", "mdp, network", SummaryPercent(w, s), s.oom, Seconds(t0));
  auto search = [&](const std::string& label) {
    if (o.search.max_rollouts <= 1) return;
    PlanSearchResult r = SearchPlan(env, ScoresOf(agent), o.search);
    add(label + " + search (" + std::to_string(r.rollouts) + " rollouts, " + std::to_string(r.replays) +
            " replays, " + std::to_string(r.pair_replays) + " pair replays, " + std::to_string(r.blocker_replays) +
            " blocker replays (" + std::to_string(r.blocker_improvements) + " better), " +
            std::to_string(r.cyclic_replays) + " cyclic replays (" + std::to_string(r.cyclic_improvements) + " better), " +
            std::to_string(r.room_replays) + " room replays (" + std::to_string(r.room_improvements) + " better), " +
            std::to_string(r.tensor_replays) + " tensor replays (" + std::to_string(r.tensor_improvements) + " better), " +
            std::to_string(r.improvements) + " improvements, " +
            std::to_string(r.deviations) +
            " deviations)",
        "plan-time search", SummaryPercent(w, r.best), r.best.oom, r.seconds);
  };
  search("untrained network");
  // `in` is the environment to play in: `env` (whose decision order the
  // network sets, with --policy-order) for the network's rows, one without
  // that order for the rows with no network.
  auto guided_ilp = [&](const std::string& label, const ActionScores& scores, PlacementEnv& in) {
    if (o.guided_ilp_shares.empty()) return;
    GuidedIlpOptions g;
    g.fixed_shares = o.guided_ilp_shares;
    g.time_limit_seconds = o.solver_seconds;
    GuidedIlpResult r = SolveGuidedIlp(in, scores, g);
    std::string detail = " + ILP (" + r.formulation + ", " + std::to_string(r.location_variables) + " locations;";
    for (const GuidedIlpSolve& solve : r.solves) {
      char what[48];
      if (solve.window_first >= 0)
        std::snprintf(what, sizeof what, "kernels %d-%d", solve.window_first, solve.window_last);
      else
        std::snprintf(what, sizeof what, "%.0f%%", 100 * solve.fixed_share);
      char one[200];
      std::snprintf(one, sizeof one, " %s %s: %d fixed, %s, gap %.2f%%, %.1f s%s;",
                    solve.formulation == "synchronous" ? "sync" : "async", what, solve.fixed_variables,
                    solve.mip.status.c_str(), 100 * solve.mip.gap, solve.mip.seconds, solve.improved ? ", better" : "");
      detail += one;
    }
    detail.back() = ')';
    add(label + detail, "plan-time ILP", Percent(w, r.plan, nullptr), r.cost.oom, r.seconds);
  };
  guided_ilp("untrained network", ScoresOf(agent), env);
  PlacementEnv heat_order_env(w, ec);  // heat orders each kernel's decisions, as in heat+ilp
  // The same pipeline with no network at all (issue #15, criterion 3): the
  // constant DRAM action, whose plan is heat order with clip-to-fit, and
  // the decisions it fixes ranked by heat (the hottest surest), or at
  // random (what fixing alone, without any ranking, is worth).
  guided_ilp("constant DRAM (heat order), ranked by heat",
             HeatOrderScores(), heat_order_env);
  {
    std::mt19937_64 rank_rng(o.seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    guided_ilp("constant DRAM (heat order), ranked at random",
               [&](const Observation&) { return std::make_pair(1.0f + u(rank_rng), 0.0f); }, heat_order_env);
  }

  std::vector<PlacementPlan> experts;
  for (const auto& [b, plan] : plans) {
    if (std::find(o.demos.begin(), o.demos.end(), b) == o.demos.end()) continue;
    Demonstration d = DemonstratePlan(env, plan);
    add(b + " replayed in the mdp", "demonstration", SummaryPercent(w, d.summary), d.summary.oom, 0);
    std::fprintf(stderr, "    %zu transitions, %u clipped DRAM requests\n", d.transitions.size(), d.clipped);
    experts.push_back(plan);
    experts.back().produced_by = b;
  }
  const auto train_start = Clock::now();
  const std::string tag = experts.empty() ? "dqn" : "dqn+demos";
  if (!experts.empty()) {
    const ImitationConfig ic = ImitationOf(o);
    ImitationResult im = LearnFromPlans(agent, env, experts, ic, rng);
    const double all_dram = MinCostNs(w);
    for (const ImitationRound& r : im.rounds)
      std::fprintf(stderr, "    imitation round %d: greedy %.1f%%, %zu demonstrations, %zu mistakes, %.1f s\n",
                   r.round, r.greedy_oom ? 0.0 : 100.0 * all_dram / r.greedy_cost_ns, r.demonstrations, r.mistakes,
                   r.seconds);
    {  // how well the kept network imitates: its disagreements on the expert's own states
      const auto expert = std::find_if(experts.begin(), experts.end(),
                                       [&](const PlacementPlan& p) { return p.produced_by == im.expert; });
      const Demonstration shown = DemonstratePlan(env, *expert);
      size_t wrong_dram = 0, wrong_slow = 0, slow_labels = 0;
      for (const Transition& t : shown.transitions) {
        slow_labels += t.action == 1;
        if (agent.Greedy(t.observation.data()) != t.action) (t.action == 0 ? wrong_slow : wrong_dram) += 1;
      }
      // States no network can get right: the same observation with both labels.
      std::map<std::vector<float>, int> labels;
      for (const Transition& t : shown.transitions) labels[t.observation] |= 1 << t.action;
      size_t aliased = 0;
      for (const Transition& t : shown.transitions) aliased += labels[t.observation] == 3;
      std::fprintf(stderr, "    on the expert's %zu states (%zu slow): %zu wrong DRAM, %zu wrong slow; %zu aliased\n",
                   shown.transitions.size(), slow_labels, wrong_dram, wrong_slow, aliased);
      PrintLabelLocality(shown.transitions, agent);
      std::fprintf(stderr, "    the kept greedy plan: %u decisions, %u DRAM choices clipped to the slow tier\n",
                   im.best_greedy.steps, im.best_greedy.spills);
      PrintWhereTheGreedyPlanLoses(w, im.best_greedy, *expert);
    }
    add(tag + " (imitating " + im.expert + ", best of " + std::to_string(im.rounds.size()) + " rounds)",
        "greedy policy", im.best_greedy.oom ? 0.0 : 100.0 * all_dram / im.best_cost_ns, im.best_greedy.oom,
        Seconds(train_start));
    for (int r = 0; r < o.refine_rounds; ++r) {
      const auto round_start = Clock::now();
      GuidedIlpOptions g;
      g.fixed_shares = {o.refine_share};
      g.time_limit_seconds = o.solver_seconds;
      g.final_mip_gap = 0;
      GuidedIlpResult refined = SolveGuidedIlp(env, ScoresOf(agent), g);
      PlacementPlan expert_plan = refined.plan;
      expert_plan.produced_by = "dqn+ilp " + std::to_string(r);
      ImitationConfig ic = ImitationOf(o);
      const std::string before = agent.SerializeWeights();
      const double before_pct = SummaryPercent(w, RunEpisode(env, greedy));
      ImitationResult im = LearnFromPlans(agent, env, {expert_plan}, ic, rng);
      const double after_pct = im.best_greedy.oom ? 0.0 : 100.0 * MinCostNs(w) / im.best_cost_ns;
      size_t wrong = 0;
      const Demonstration shown = DemonstratePlan(env, expert_plan);
      for (const Transition& t : shown.transitions) wrong += agent.Greedy(t.observation.data()) != t.action;
      std::fprintf(stderr,
                   "    refine round %d: expert (%.0f%% fixed) %.1f%%, greedy before %.1f%%, after %.1f%%, "
                   "%zu of %zu expert states wrong, %.1f s\n",
                   r, 100 * o.refine_share, Percent(w, expert_plan, nullptr), before_pct, after_pct, wrong,
                   shown.transitions.size(), Seconds(round_start));
      if (after_pct < before_pct) agent.LoadWeights(before);
    }
    if (o.refine_rounds > 0) {
      s = RunEpisode(env, greedy);
      add(tag + " after " + std::to_string(o.refine_rounds) + " ILP-refined rounds", "greedy policy",
          SummaryPercent(w, s), s.oom, Seconds(train_start));
    }
    search(tag);
    guided_ilp(tag, ScoresOf(agent), env);
    if (o.self_rounds > 0) {
      const auto self_start = Clock::now();
      double best_searched = 0;
      s = SelfImitate(agent, env, w, o, rng, &best_searched);
      add(tag + " after " + std::to_string(o.self_rounds) + " self rounds", "greedy policy", SummaryPercent(w, s),
          s.oom, Seconds(self_start));
      add(tag + " best searched plan of the self rounds", "plan-time search", best_searched, false, Seconds(self_start));
    }
  }
  ReplayBuffer replay(static_cast<size_t>(dc.replay_capacity));
  std::string best_weights;
  double best_explored = 0, best_greedy = 0;
  int best_greedy_episode = -1;
  for (int e = 0; e < o.episodes; ++e) {
    const double eps = o.epsilon_start * std::max(0.0, 1.0 - static_cast<double>(e) / (0.8 * o.episodes));
    Observation ob = env.Reset();
    while (!env.done()) {
      int a = agent.Act(ob.data(), eps, rng);
      StepResult r = env.Step(a);
      replay.Add({std::vector<float>(ob.begin(), ob.end()), static_cast<uint8_t>(a), static_cast<float>(r.reward),
                  std::vector<float>(r.observation.begin(), r.observation.end()), r.done});
      ob = r.observation;
    }
    best_explored = std::max(best_explored, SummaryPercent(w, env.summary()));
    if (replay.size() >= static_cast<size_t>(dc.learning_starts))
      for (int u = 0; u < o.updates_per_episode; ++u) agent.Update(replay, rng);
    if ((e + 1) % o.eval_every == 0 || e + 1 == o.episodes) {
      s = RunEpisode(env, [&](const Observation& x) { return agent.Act(x.data(), 0.0, rng); });
      double pct = SummaryPercent(w, s);
      std::fprintf(stderr, "    episode %d: greedy %.1f%%, best explored %.1f%%\n", e + 1, pct, best_explored);
      if (pct > best_greedy) best_greedy = pct, best_greedy_episode = e + 1, best_weights = agent.SerializeWeights();
    }
  }
  if (o.episodes > 0) {
    s = RunEpisode(env, [&](const Observation& ob) { return agent.Act(ob.data(), 0.0, rng); });
    add(tag + " final", "greedy policy", SummaryPercent(w, s), s.oom, Seconds(train_start));
    add(tag + " best evaluation (ep " + std::to_string(best_greedy_episode) + ")", "greedy policy (snapshot)",
        best_greedy, false, Seconds(train_start));
    add(tag + " best explored episode", "explored, not a policy", best_explored, false, Seconds(train_start));
  }
  if (o.episodes > 0 && !best_weights.empty()) {
    agent.LoadWeights(best_weights);
    search(tag + " best evaluation");
  }
  return rows;
}

// One network for many models (issue #15, criterion 5): DQN imitates the
// fastest of `demos` on every `train` workload at once (one aggregate:
// pre-training, DAgger rounds over all of them, then the experts' own states),
// the weights with the best mean greedy percentage over the corpus are kept,
// and it places each `holdout` workload, which it never saw, with no training.
std::vector<Row> RunTransfer(const std::vector<std::string>& train, const std::vector<std::string>& holdout,
                             const Options& o) {
  std::vector<Row> rows;
  struct Task {
    std::string name;
    std::unique_ptr<Workload> w;  // the env holds a reference: it must not move
    std::unique_ptr<PlacementEnv> env;
    PlacementPlan expert;
  };
  auto load = [&](const std::string& spec, bool with_expert) {
    Task t;
    t.w = std::make_unique<Workload>(LoadWorkloadSpec(spec));
    t.name = t.w->name.empty() ? spec : t.w->name;
    const uint64_t limit = static_cast<uint64_t>(o.dram_fraction * static_cast<double>(t.w->peak_live_bytes()));
    PolicyContext ctx;
    ctx.dram_limit_bytes = limit;
    ctx.mode = o.mode;
    ctx.seed = o.seed;
    ctx.solver_time_limit_seconds = o.solver_seconds;
    EnvConfig ec;
    ec.dram_limit_bytes = limit;
    ec.mode = o.mode;
    ec.beta = o.beta;
    ec.scope = o.scope;
    t.env = std::make_unique<PlacementEnv>(*t.w, ec);
    double fastest = 0;
    for (const std::string& b : o.baselines) {
      PolicyResult r = MakePolicy(b)->Decide(*t.w, ctx);
      bool oom = false;
      const double pct = Percent(*t.w, r.plan, &oom);
      std::string label = b;
      if (r.solver) label += " (" + r.solver->status + ")";
      rows.push_back({t.name, label, "baseline", pct, oom, r.decision_seconds});
      std::fprintf(stderr, "  %s: %s %.1f%% (%.1f s)\n", t.name.c_str(), label.c_str(), pct, r.decision_seconds);
      if (with_expert && std::find(o.demos.begin(), o.demos.end(), b) != o.demos.end() && pct > fastest) {
        fastest = pct;
        t.expert = std::move(r.plan);
        t.expert.produced_by = b;
      }
    }
    if (with_expert && fastest == 0) throw std::invalid_argument(spec + ": no --demos plan among --baselines");
    return t;
  };
  std::vector<Task> corpus, unseen;
  for (const std::string& spec : train) corpus.push_back(load(spec, true));
  for (const std::string& spec : holdout) unseen.push_back(load(spec, false));

  DqnConfig dc;
  dc.hidden = o.hidden;
  dc.learning_rate = o.learning_rate;
  dc.gamma = o.gamma;
  dc.seed = o.seed;
  dc.device = "cpu";
  dc.demo_fraction = o.demo_fraction;
  dc.demo_margin = o.demo_margin;
  dc.demo_loss_weight = o.demo_loss_weight;
  std::unique_ptr<PlacementAgent> agent = MakeAgent("dqn", dc.ToJson());
  std::mt19937_64 rng(o.seed);
  auto greedy = [&](const Observation& ob) { return agent->Greedy(ob.data()); };
  const auto start = Clock::now();
  // The product's corpus imitation (`tensortier pretrain`), with this bench's settings.
  const ImitationConfig ic = ImitationOf(o);
  std::vector<ImitationTask> tasks;
  for (Task& t : corpus) tasks.push_back({t.env.get(), {t.expert}, t.name});
  const CorpusImitationResult im = LearnFromCorpus(*agent, tasks, ic, rng);
  for (size_t k = 0; k < im.tasks[0].rounds.size(); ++k) {
    double sum = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
      const ImitationRound& r = im.tasks[i].rounds[k];
      sum += r.greedy_oom ? 0 : 100.0 * MinCostNs(*corpus[i].w) / r.greedy_cost_ns;
    }
    std::fprintf(stderr, "    corpus %s %d: mean greedy %.1f%% (%.1f s)\n",
                 im.tasks[0].rounds[k].polish ? "polish" : "dagger round", im.tasks[0].rounds[k].round,
                 sum / static_cast<double>(corpus.size()), im.tasks[0].rounds[k].seconds);
  }
  const std::string best_weights = agent->SerializeWeights();
  const double train_seconds = Seconds(start);
  if (!o.save_path.empty()) agent->SaveCheckpoint(o.save_path);
  auto place = [&](Task& t, const std::string& label) {
    EpisodeSummary s = RunEpisode(*t.env, greedy);
    rows.push_back({t.name, "dqn greedy (" + label + ")", "greedy policy", SummaryPercent(*t.w, s), s.oom,
                    train_seconds});
    if (o.search.max_rollouts > 1) {
      PlanSearchResult r = SearchPlan(*t.env, ScoresOf(*agent), o.search);
      rows.push_back({t.name, "dqn + search (" + label + ")", "plan-time search", SummaryPercent(*t.w, r.best),
                      r.best.oom, r.seconds});
    }
  };
  for (Task& t : corpus) place(t, "trained on the corpus");
  for (Task& t : unseen) place(t, "never saw it, no training");
  // Fine-tuning on the new model with no baseline plan of it (SelfImitate).
  if (o.self_rounds > 0) {
    for (Task& t : unseen) {
      agent->LoadWeights(best_weights);
      const auto tuned_start = Clock::now();
      double best_pct = 0;
      std::fprintf(stderr, "  %s:\n", t.name.c_str());
      EpisodeSummary g = SelfImitate(*agent, *t.env, *t.w, o, rng, &best_pct);
      rows.push_back({t.name, "dqn greedy after " + std::to_string(o.self_rounds) + " self rounds", "greedy policy",
                      SummaryPercent(*t.w, g), g.oom, Seconds(tuned_start)});
      rows.push_back({t.name, "best searched plan of those rounds", "plan-time search", best_pct, false,
                      Seconds(tuned_start)});
    }
  }
  return rows;
}

int Main(int argc, char** argv) {
  CLI::App app{"The learned placement against the baselines, with ablations, on the cost model (issue #15)"};
  std::vector<std::string> workloads = {"synthetic:vgg:8", "synthetic:resnet:8", "synthetic:mobilenet:8"};
  Options o;
  std::string mode = "sync", csv_path;
  app.add_option("--workloads", workloads, "Workload specs (synthetic:SHAPE:LAYERS) or profiled .ttwl files");
  app.add_option("--dram-fraction", o.dram_fraction, "DRAM limit as a fraction of peak live bytes")
      ->check(CLI::Range(1e-6, 1.0));
  app.add_option("--mode", mode, "Copies: sync or async")->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--baselines", o.baselines, "Baseline policies to compare with");
  app.add_option("--demos", o.demos, "Baselines whose plans become demonstrations (none: plain DQN)");
  app.add_option("--pretrain-updates", o.pretrain_updates, "Gradient steps on demonstrations alone")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dagger-rounds", o.dagger_rounds,
                 "After pre-training: rounds of greedy rollouts labelled by the demonstrating plan (DAgger)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--refine-rounds", o.refine_rounds,
                 "After imitation: rounds of imitating the guided ILP's plan made from the network's own "
                 "(its surest --refine-share fixed)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--refine-share", o.refine_share, "Share of the network's surest decisions the refining ILP fixes")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--search-rollouts", o.search.max_rollouts,
                 "Plan-time search: rollouts of a limited-discrepancy search guided by the final network (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-replays", o.search.max_replays,
                 "Plan-time search: after the rollouts, single flips of the incumbent's doubtful decisions that keep its "
                 "other decisions (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-pair-replays", o.search.max_pair_replays,
                 "Plan-time search: when single flips stop improving, episodes that flip two decisions of opposite "
                 "directions over overlapping kernels (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-tensor-replays", o.search.max_tensor_replays,
                 "Plan-time search: when single and pair flips stop improving, episodes that put every decision of one "
                 "tensor in one tier, the least sure tensors first (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-room-replays", o.search.max_room_replays,
                 "Plan-time search: when single and pair flips stop improving, episodes that take one of the costliest "
                 "slow-tier uses to DRAM and evict tensors kept through their gap over its kernel until they free its "
                 "size (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-window-replays", o.search.max_window_replays,
                 "Plan-time search: when no other move improves, episodes that keep one tensor in the slow tier over a "
                 "stretch of its uses and in DRAM elsewhere, or the other way round (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag_callback("--no-window-pricing", [&o] { o.search.price_windows = false; },
                        "Plan-time search: play every window replay instead of skipping those priced at no gain");
  app.add_option("--search-move-turn-share", o.search.move_turn_share,
                 "Plan-time search: each move's pass is a turn of at most this share of the time limit (0: to its end)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--search-cyclic-replays", o.search.max_cyclic_replays,
                 "Plan-time search, after the rollouts: each persistent tensor the plan ends in another tier than it "
                 "starts kept in its starting or its last tier all the iteration (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-blocker-replays", o.search.max_blocker_replays,
                 "Plan-time search, then: evictions of the least sure DRAM choices holding the room of a clipped "
                 "DRAM choice (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--search-candidates", o.search.candidates_per_round,
                 "Plan-time search: least-sure decisions tried before giving up on an incumbent")
      ->check(CLI::PositiveNumber);
  app.add_option("--guided-ilp-shares", o.guided_ilp_shares,
                 "Plan-time ILP guided by the network: shares of its surest decisions fixed, one solve each, "
                 "descending (none: no such row; the product's default is " +
                     SharesText(GuidedIlpOptions{}.fixed_shares) + ")")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--search-seconds", o.search.max_seconds, "Plan-time search: time limit (0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--focus-on-mistakes", o.focus_on_mistakes,
                 "DAgger rounds count the states the policy gets wrong twice (true) or train on the aggregate as it is "
                 "(false)");
  app.add_option("--polish-updates", o.polish_updates,
                 "After the DAgger rounds: steps on the expert's own states alone, scored every 1,500 (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--polish-aggregate-share", o.polish_aggregate_share,
                 "Share of the polish set drawn from the DAgger rounds' visited states (0: the expert's states alone)")
      ->check(CLI::Range(0.0, 0.95));
  app.add_option("--dagger-updates", o.dagger_updates, "Pre-training steps after each DAgger round")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--episodes", o.episodes, "Episodes of the agent's own play after pre-training")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--updates-per-episode", o.updates_per_episode, "Gradient steps per episode")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--epsilon-start", o.epsilon_start, "Exploration at the first episode (decays to 0)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--eval-every", o.eval_every, "Greedy evaluation every N episodes")->check(CLI::PositiveNumber);
  app.add_option("--beta", o.beta, "Reward weight of performance against memory price (1: performance only)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lr", o.learning_rate, "DQN learning rate")->check(CLI::PositiveNumber);
  app.add_option("--gamma", o.gamma, "Discount")->check(CLI::Range(0.0, 1.0));
  app.add_option("--demo-fraction", o.demo_fraction, "Share of each batch drawn from demonstrations")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--demo-margin", o.demo_margin, "DQfD margin")->check(CLI::NonNegativeNumber);
  app.add_option("--demo-loss-weight", o.demo_loss_weight, "DQfD large-margin loss weight")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--demo-class-balance", o.demo_class_balance,
                 "Share of demonstration rows drawn class-balanced (0: uniform)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--solver-seconds", o.solver_seconds, "ILP time limit per solve")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "Seed");
  app.add_option("--max-demonstrations", o.max_demonstrations, "Cap of the imitation's aggregate of labelled states")
      ->check(CLI::PositiveNumber);
  app.add_option("--policy-order", o.policy_order, "The network orders each kernel's decisions (true) or heat does");
  std::string scope = DecisionScopeName(o.scope);
  app.add_option("--scope", scope, "Which live tensors of a bottleneck kernel get a decision (docs/mdp.md)")
      ->check(CLI::Validator(
          [](std::string& v) {
            try {
              ParseDecisionScope(v);
              return std::string();
            } catch (const std::invalid_argument& e) {
              return std::string(e.what());
            }
          },
          "SCOPE"));
  app.add_option("--hidden", o.hidden, "Hidden layer sizes of the Q-network")->check(CLI::PositiveNumber);
  app.add_option("--csv", csv_path, "Also write the rows as CSV here");
  std::vector<std::string> holdout;
  app.add_option("--self-rounds", o.self_rounds,
                 "Rounds of imitating the network's own searched plan (no baseline plan is used): after imitation, "
                 "and with --holdout on each held-out model")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--save", o.save_path, "With --holdout: write the corpus network here (an agent checkpoint for train --init)");
  app.add_option("--holdout", holdout,
                 "Transfer: train one network on all --workloads together, then place these workloads with it and "
                 "no training");
  CLI11_PARSE(app, argc, argv);
  o.mode = mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync;
  o.scope = ParseDecisionScope(scope);

  std::vector<Row> all;
  if (!holdout.empty()) {
    try {
      all = RunTransfer(workloads, holdout, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_learning: %s\n", e.what());
      return 2;
    }
    workloads.clear();
  }
  for (const std::string& spec : workloads) {
    try {
      std::vector<Row> rows = RunWorkload(spec, o);
      all.insert(all.end(), rows.begin(), rows.end());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_learning: %s: %s\n", spec.c_str(), e.what());
      return 2;
    }
  }
  std::printf("| workload | plan | source | %% of all-DRAM | seconds |\n|---|---|---|---:|---:|\n");
  for (const Row& r : all)
    std::printf("| %s | %s | %s | %.1f%%%s | %.1f |\n", r.workload.c_str(), r.plan.c_str(), r.source.c_str(),
                r.percent, r.oom ? " (OOM)" : "", r.seconds);
  if (!csv_path.empty()) {
    std::ofstream csv(csv_path);
    csv << "workload,plan,source,percent_of_all_dram,oom,seconds\n";
    // RFC 4180: every text field quoted (sources hold commas too), quotes doubled.
    auto quoted = [](const std::string& text) {
      std::string q = "\"";
      for (char c : text) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      return q + "\"";
    };
    for (const Row& r : all)
      csv << quoted(r.workload) << "," << quoted(r.plan) << "," << quoted(r.source) << "," << r.percent << ","
          << r.oom << "," << r.seconds << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) { return tensortier::Main(argc, argv); }
