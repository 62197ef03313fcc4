#include "evaluation/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "agents/agent.h"
#include "agents/policy_portfolio.h"
#include "common/stats.h"
#include "common/files.h"
#include "common/log.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/plan_polish.h"
#include "executor/executor.h"
#include "hostrt/apply/plan_from_lookup.h"
#include "hostrt/tensortier_lookup.hpp"
#include "policies/policy.h"
#include "policies/relaxation.h"
#include "report/report.h"

namespace tensortier {
namespace {

constexpr double kDramPricePerGb = 23.81;
constexpr double kSlowPricePerGb = 7.85;

// What a learned policy's name asks for at plan time: "dqn" its greedy plan,
// "dqn+search" the plan-time search its network guides, "dqn+ilp" the ILP its
// network guides (policies/guided_ilp.h), "dqn+ilp+measured" that ILP's
// candidate plans measured on this host's real iterations, the fastest kept,
// "dqn+ilp+search" the plan-time search started from the policy's own
// episodes and from that ILP's plan, whichever is faster; "dqn+relax+search"
// the same search from the relaxation's plan (policies/relaxation.h) in the
// ILP's place.
enum class PlanTime { kGreedy, kPolish, kPolishSearch, kSearch, kIlp, kIlpMeasured, kIlpSearch, kRelaxSearch };
constexpr const char* kSearchSuffix = "+search";
// The greedy plan with no search move: its async copies scheduled and the
// polish (edits of the plan itself, best responses), within the search's
// time limit. The network's part with nothing that searches through it.
constexpr const char* kPolishSuffix = "+polish";
// That plan, polished with half the limit, as a start of the search, which
// has the rest. Heat order's 5 s search leaves its polish half a second, and
// its plan needs hundreds of edits: so started, paper-scale async
// Inception-v3 60.47 -> 79.64% of all-DRAM, the network's search -0.67
// (docs/results/learning.md, session fifty-one). The fairer ablation of the
// network's search at a short limit.
constexpr const char* kPolishSearchSuffix = "+polish+search";
constexpr double kPolishFirstShare = 0.5;
constexpr const char* kIlpSuffix = "+ilp";
constexpr const char* kIlpMeasuredSuffix = "+ilp+measured";
constexpr const char* kIlpSearchSuffix = "+ilp+search";
constexpr const char* kRelaxSearchSuffix = "+relax+search";
// The same measured choice over the ILP that heat order guides (heat+ilp,
// policies/guided_ilp.h): what the network adds to it.
constexpr const char* kHeatIlpMeasured = "heat+ilp+measured";
// The plan-time search with heat order in the network's place (the constant
// DRAM action, decisions in heat order): what the network adds to it.
constexpr const char* kHeatSearch = "heat+search";
// And the greedy pipeline so: the MDP's episode with the constant DRAM action
// (heat order, clipped to fit), beside "dqn" and "untrained-dqn".
constexpr const char* kHeat = "heat";
constexpr const char* kHeatPolish = "heat+polish";
constexpr const char* kHeatPolishSearch = "heat+polish+search";
constexpr const char* kHeatIlpSearch = "heat+ilp+search";
constexpr const char* kHeatRelaxSearch = "heat+relax+search";
// "dqn+portfolio": the fastest of the portfolio's greedy plans (its members
// are BenchmarkOptions::portfolio), "dqn+portfolio+search" the search from it
// (agents/policy_portfolio.h); "sac+" the same for a portfolio of SAC actors.
constexpr const char* kPortfolioSuffix = "+portfolio";
constexpr const char* kPortfolioSearchSuffix = "+portfolio+search";
// "untrained-dqn+search": the checkpoint's network as it was before training
// (the same architecture and seed, fresh weights) in the same pipeline.
constexpr const char* kUntrainedPrefix = "untrained-";

bool HasSuffix(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

PlanTime PlanTimeOf(const std::string& name) {
  if (HasSuffix(name, kIlpMeasuredSuffix)) return PlanTime::kIlpMeasured;
  if (HasSuffix(name, kIlpSearchSuffix)) return PlanTime::kIlpSearch;
  if (HasSuffix(name, kRelaxSearchSuffix)) return PlanTime::kRelaxSearch;
  if (HasSuffix(name, kPolishSearchSuffix)) return PlanTime::kPolishSearch;
  if (HasSuffix(name, kSearchSuffix)) return PlanTime::kSearch;
  if (HasSuffix(name, kIlpSuffix)) return PlanTime::kIlp;
  if (HasSuffix(name, kPolishSuffix)) return PlanTime::kPolish;
  return PlanTime::kGreedy;
}

// "dqn+search" -> "dqn".
std::string AgentKind(const std::string& name) {
  switch (PlanTimeOf(name)) {
    case PlanTime::kSearch: return name.substr(0, name.size() - std::string(kSearchSuffix).size());
    case PlanTime::kPolish: return name.substr(0, name.size() - std::string(kPolishSuffix).size());
    case PlanTime::kPolishSearch: return name.substr(0, name.size() - std::string(kPolishSearchSuffix).size());
    case PlanTime::kIlp: return name.substr(0, name.size() - std::string(kIlpSuffix).size());
    case PlanTime::kIlpMeasured: return name.substr(0, name.size() - std::string(kIlpMeasuredSuffix).size());
    case PlanTime::kIlpSearch: return name.substr(0, name.size() - std::string(kIlpSearchSuffix).size());
    case PlanTime::kRelaxSearch: return name.substr(0, name.size() - std::string(kRelaxSearchSuffix).size());
    case PlanTime::kGreedy: break;
  }
  return name;
}

// Given plans measured on real iterations at plan time: the fastest (the
// median over `o.plan_time_rounds` rounds of its ratio to the all-DRAM
// runs beside it). These rounds are the decision's own: the row's
// measured figure comes from the bench's rounds that follow, so the choice's
// luck does not carry into it.
size_t FastestMeasured(const Workload& w, const BenchmarkOptions& o, RealWorkloadRunner& runner,
                       const std::vector<GuidedIlpCandidate>& candidates);

// The guided ILP's plan, or (measured) the fastest of its candidates on
// this host; `plan.produced_by` says which.
PlacementPlan GuidedIlpPlan(PlacementEnv& placement, const ActionScores& scores, const std::string& name,
                            const Workload& w, const BenchmarkOptions& o, RealWorkloadRunner* runner) {
  GuidedIlpOptions ilp = o.guided_ilp;
  ilp.time_limit_seconds = o.solver_time_limit_seconds;
  ilp.mip_gap = o.mip_gap;
  ilp.keep_candidates = runner != nullptr;
  GuidedIlpResult solved = SolveGuidedIlp(placement, scores, ilp);
  if (!runner) {
    solved.plan.produced_by = name;
    return std::move(solved.plan);
  }
  const size_t chosen = FastestMeasured(w, o, *runner, solved.candidates);
  PlacementPlan plan = std::move(solved.candidates[chosen].plan);
  plan.produced_by = name + " (" + solved.candidates[chosen].source + ")";
  return plan;
}

// The MDP a policy plans in at a budget: the bench's mode, and the scope a
// network was trained in.
EnvConfig PlanningEnv(const BenchmarkOptions& o, uint64_t dram_limit) {
  EnvConfig env;
  env.dram_limit_bytes = dram_limit;
  env.mode = o.mode;
  env.scope = o.scope;
  return env;
}

// The plan-time search that `scores` guide, named `name` in the log and on
// the plan; from `starting_plans` too where given.
void LogSearch(const PlanSearchResult& searched, const std::string& name, const Workload& w) {
  LogInfo("plan_search")
      .kv("workload", w.name)
      .kv("policy", name)
      .kv("greedy_runtime_ns", searched.greedy.cost.total_ns)
      .kv("starting_plan", searched.starting_plan)
      .kv("restarted", searched.restarted)
      .kv("polished_restarts", searched.polished_restarts)
      .kv("kicks", searched.kicks)
      .kv("kick_improvements", searched.kick_improvements)
      .kv("runtime_ns", searched.best.cost.total_ns)
      .kv("rollouts", searched.rollouts)
      .kv("replays", searched.replays)
      .kv("replay_improvements", searched.replay_improvements)
      .kv("pair_replays", searched.pair_replays)
      .kv("pair_improvements", searched.pair_improvements)
      .kv("blocker_replays", searched.blocker_replays)
      .kv("cyclic_replays", searched.cyclic_replays)
      .kv("tensor_replays", searched.tensor_replays)
      .kv("tensor_improvements", searched.tensor_improvements)
      .kv("room_replays", searched.room_replays)
      .kv("room_improvements", searched.room_improvements)
      .kv("window_replays", searched.window_replays)
      .kv("window_improvements", searched.window_improvements)
      .kv("windows_priced_out", searched.windows_priced_out)
      .kv("polish_edits", searched.polish_edits)
      .kv("polish_saved_ns", searched.polish_saved_ns)
      .kv("polish_seconds", searched.polish_seconds)
      .kv("shortening_mismatches", searched.shortening_mismatches)
      .kv("improvements", searched.improvements)
      .kv("copies_moved", searched.copies_moved)
      .kv("copy_schedule_saved_ns", searched.copy_schedule_saved_ns)
      .kv("seconds", searched.seconds);
}

PlacementPlan SearchedPlan(PlacementEnv& placement, const ActionScores& scores, const std::string& name,
                           const Workload& w, const BenchmarkOptions& o,
                           const std::vector<PlacementPlan>& starting_plans = {}) {
  PlanSearchResult searched = SearchPlan(placement, scores, o.search, starting_plans);
  LogSearch(searched, name, w);
  PlacementPlan plan = std::move(searched.best.plan);
  plan.produced_by = name;
  return plan;
}

// The "+polish" pipeline: the episode `act` plays (the greedy plan), its
// async copies moved to where they are exposed least, then the polish, as
// the search ends (envs/plan_search.h) but with the search's whole time
// limit, since nothing else runs.
PlacementPlan PolishedPlan(PlacementEnv& placement, const std::function<int(const Observation&)>& act,
                           const std::string& name, const Workload& w, const BenchmarkOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  EpisodeSummary greedy = RunEpisode(placement, act);
  PlanPolishOptions options;
  options.max_seconds = o.search.max_seconds;
  PlanPolishResult polished = FinishEpisodePlan(w, greedy.plan, o.mode == MigrationMode::kAsync && o.search.schedule_async_copies,
                                                o.search.polish_plan ? &options : nullptr);
  PlacementPlan plan = std::move(polished.plan);
  LogInfo("plan_polish")
      .kv("workload", w.name)
      .kv("policy", name)
      .kv("greedy_runtime_ns", greedy.cost.total_ns)
      .kv("copies_moved", polished.copies_moved)
      .kv("polish_edits", polished.edits_kept + polished.tensors_responded)
      .kv("polish_saved_ns", polished.saved_ns)
      .kv("seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  plan.produced_by = name;
  return plan;
}

// The "+polish+search" pipeline: the greedy plan of `scores` polished
// (PolishedPlan) within kPolishFirstShare of the limit, then the search
// they guide from their own episodes and from it with the rest; both are
// decision time.
PlacementPlan PolishedSearchedPlan(PlacementEnv& placement, const ActionScores& scores, const std::string& name,
                                   const Workload& w, const BenchmarkOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  BenchmarkOptions first = o;
  first.search.max_seconds = kPolishFirstShare * o.search.max_seconds;
  const auto greedy = [&](const Observation& x) {
    const auto [dram, slow] = scores(x);
    return dram >= slow ? 0 : 1;
  };
  const PlacementPlan polished = PolishedPlan(placement, greedy, name, w, first);
  BenchmarkOptions rest = o;
  if (o.search.max_seconds > 0) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rest.search.max_seconds = std::max(0.1 * o.search.max_seconds, o.search.max_seconds - spent);
  }
  return SearchedPlan(placement, scores, name, w, rest, {polished});
}

// The ILP that `scores` guide, then the plan-time search they guide from
// their own episodes and from the ILP's plan; both are decision time.
PlacementPlan IlpSearchedPlan(PlacementEnv& placement, const ActionScores& scores, const std::string& name,
                              const Workload& w, const BenchmarkOptions& o) {
  const PlacementPlan ilp = GuidedIlpPlan(placement, scores, name, w, o, nullptr);
  return SearchedPlan(placement, scores, name, w, o, {ilp});
}

// What a baseline policy is given at a budget: the bench's mode, seed and
// solver limits.
PolicyContext BaselineContext(const BenchmarkOptions& o, uint64_t dram_limit) {
  PolicyContext ctx;
  ctx.dram_limit_bytes = dram_limit;
  ctx.mode = o.mode;
  ctx.seed = o.seed;
  ctx.solver_time_limit_seconds = o.solver_time_limit_seconds;
  ctx.mip_gap = o.mip_gap;
  return ctx;
}

// The relaxation's plan (no network; within the ILPs' time limit; in async
// mode without the bound, which the search does not use), then the
// plan-time search that `scores` guide from their own episodes and from it;
// both are decision time.
PlacementPlan RelaxSearchedPlan(PlacementEnv& placement, const ActionScores& scores, const std::string& name,
                                const Workload& w, const BenchmarkOptions& o, uint64_t dram_limit) {
  const PlacementPlan relaxed = DecideRelaxationPlan(w, BaselineContext(o, dram_limit)).plan;
  return SearchedPlan(placement, scores, name, w, o, {relaxed});
}

// The agent of a checkpoint, rolled out greedily on the workload at the
// given budget: the learned policy as a baseline-like decision; improved by
// the plan-time search or the ILP its network guides where the name asks.
// `label`: the agent's name in the row ("dqn", "untrained-dqn").
// `runner`: this host's real iterations, for the measured choice.
PlacementPlan LearnedPlan(const PlacementAgent& agent, const std::string& label, const Workload& w,
                          uint64_t dram_limit, const BenchmarkOptions& o, PlanTime plan_time,
                          RealWorkloadRunner* runner) {
  PlacementEnv placement(w, PlanningEnv(o, dram_limit));
  PlacementPlan plan;
  switch (plan_time) {
    case PlanTime::kSearch: return SearchedPlan(placement, ScoresOf(agent), label + kSearchSuffix, w, o);
    case PlanTime::kIlp: return GuidedIlpPlan(placement, ScoresOf(agent), label + kIlpSuffix, w, o, nullptr);
    case PlanTime::kIlpMeasured:
      return GuidedIlpPlan(placement, ScoresOf(agent), label + kIlpMeasuredSuffix, w, o, runner);
    case PlanTime::kIlpSearch: return IlpSearchedPlan(placement, ScoresOf(agent), label + kIlpSearchSuffix, w, o);
    case PlanTime::kRelaxSearch:
      return RelaxSearchedPlan(placement, ScoresOf(agent), label + kRelaxSearchSuffix, w, o, dram_limit);
    case PlanTime::kPolishSearch:
      return PolishedSearchedPlan(placement, ScoresOf(agent), label + kPolishSearchSuffix, w, o);
    case PlanTime::kPolish:
      return PolishedPlan(
          placement, [&](const Observation& x) { return agent.Greedy(x.data()); }, label + kPolishSuffix, w, o);
    case PlanTime::kGreedy: break;
  }
  plan = RunEpisode(placement, [&](const Observation& x) { return agent.Greedy(x.data()); }).plan;
  plan.produced_by = label;
  return plan;
}

// "dqn+portfolio" and "dqn+portfolio+search" -> "dqn"; "" for other names.
std::string PortfolioKind(const std::string& name) {
  for (const char* suffix : {kPortfolioSearchSuffix, kPortfolioSuffix})
    if (HasSuffix(name, suffix)) {
      const std::string kind = name.substr(0, name.size() - std::string(suffix).size());
      if (kind == "dqn" || kind == "sac") return kind;
    }
  return "";
}

// The portfolio's plan at a budget: every member's greedy episode, the
// fastest kept, then (+search) the search that member's network guides from
// it, or, with portfolio_search_starts > 1, the searches from that many of
// the fastest members' episodes in turn, each guided by its own network,
// while the search's time limit lasts, the fastest result kept: the first
// search has the whole limit, as with one start, so more starts never lose
// (a search on a small model stops by itself in seconds). The plan names
// the member it came from.
PlacementPlan PortfolioPlan(const std::vector<PortfolioMember>& members, const std::string& name, const Workload& w,
                            uint64_t dram_limit, const BenchmarkOptions& o) {
  const std::string kind = PortfolioKind(name);
  if (members.empty()) throw std::invalid_argument("policy " + name + " needs --portfolio (checkpoints or a directory of them)");
  if (members[0].agent->name() != kind)
    throw std::invalid_argument("policy " + name + ": --portfolio holds " + members[0].agent->name() + " networks");
  PlacementEnv placement(w, PlanningEnv(o, dram_limit));
  const PortfolioChoice choice = FastestGreedy(placement, members);
  const PortfolioMember& chosen = members[choice.member];
  // The path as given: a portfolio may span several directories (pretrain
  // runs of several seeds) whose file names repeat.
  const std::string& member = chosen.path;
  LogInfo("portfolio_choice")
      .kv("workload", w.name)
      .kv("policy", name)
      .kv("members", members.size())
      .kv("member", member)
      .kv("greedy_runtime_ns", choice.greedy[choice.member].cost.total_ns)
      .kv("primary_runtime_ns", choice.greedy[0].cost.total_ns)
      .kv("seconds", choice.seconds);
  if (!HasSuffix(name, kPortfolioSearchSuffix)) {
    PlacementPlan plan = choice.greedy[choice.member].plan;
    plan.produced_by = name + " (" + member + ", " + std::to_string(choice.member + 1) + " of " +
                       std::to_string(members.size()) + ")";
    return plan;
  }
  const PortfolioSearch searched = SearchFromFastest(
      placement, members, choice, o.search, o.portfolio_search_starts,
      [&](const PlanSearchResult& r) { LogSearch(r, name, w); });
  LogInfo("portfolio_search")
      .kv("workload", w.name)
      .kv("policy", name)
      .kv("searches", searched.searches)
      .kv("member", members[searched.member].path)
      .kv("runtime_ns", searched.best.best.cost.total_ns)
      .kv("seconds", searched.seconds);
  PlacementPlan plan = searched.best.best.plan;
  plan.produced_by = name + " (" + members[searched.member].path + ", " + std::to_string(searched.member + 1) + " of " +
                     std::to_string(members.size()) +
                     (searched.searches > 1 ? ", best of " + std::to_string(searched.searches) + " searches" : "") + ")";
  return plan;
}

// "untrained-dqn" -> "dqn"; other kinds unchanged.
std::string TrainedKind(const std::string& kind) {
  return kind.rfind(kUntrainedPrefix, 0) == 0 ? kind.substr(std::string(kUntrainedPrefix).size()) : kind;
}

bool IsLearnedPolicy(const std::string& name) {
  const std::string kind = TrainedKind(AgentKind(name));
  return kind == "dqn" || kind == "sac" || name == "learned";
}

// The checkpoints that apply to workload `w`, by agent kind: one named for
// the workload wins over one given for every workload.
std::map<std::string, std::shared_ptr<PlacementAgent>> AgentsFor(const Workload& w, const BenchmarkOptions& o) {
  std::map<std::string, std::shared_ptr<PlacementAgent>> general, specific;
  for (const std::string& spec : o.checkpoints) {
    const size_t eq = spec.find('=');
    const std::string workload = eq == std::string::npos ? "" : spec.substr(0, eq);
    const std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
    if (!workload.empty() && workload != w.name) continue;
    std::shared_ptr<PlacementAgent> agent = LoadAgentCheckpoint(path);
    (workload.empty() ? general : specific)[agent->name()] = agent;
  }
  for (auto& [kind, agent] : general) specific.emplace(kind, agent);
  return specific;
}

bool IsLookupPolicy(const std::string& name) { return name.rfind(kLookupPolicyPrefix, 0) == 0; }

std::string LookupPathOf(const std::string& name) { return name.substr(std::string(kLookupPolicyPrefix).size()); }

// Opens every lookup the policies name, refusing up front what could give no
// row: a file the runtime rejects (corrupt, truncated, another format), and
// a generalised lookup of another build's MDP (another observation size)
// when the file has no plan table for this workload to fall back on.
std::map<std::string, lookup::Lookup> OpenLookups(const Workload& w, const std::vector<std::string>& policies) {
  std::map<std::string, lookup::Lookup> out;
  for (const std::string& name : policies) {
    if (!IsLookupPolicy(name) || out.count(name)) continue;
    const std::string path = LookupPathOf(name);
    if (path.empty()) throw std::invalid_argument("policy lookup: needs a file (lookup:FILE or --lookup FILE)");
    lookup::Lookup l = lookup::Lookup::Open(path);
    const tt_lookup* h = l.handle();
    const uint32_t obs = tt_lookup_observation_size(h);
    if (tt_lookup_has_generalised(h) && obs != static_cast<uint32_t>(kObservationSize)) {
      bool has_plan = false;
      for (uint32_t i = 0; i < tt_lookup_plan_count(h) && !has_plan; ++i) {
        tt_lookup_plan_info info;
        tt_lookup_plan_info_at(h, static_cast<int32_t>(i), &info);
        has_plan = info.model_signature == w.Signature() && info.batch_size == w.batch_size;
      }
      if (!has_plan)
        throw lookup::LookupError(TT_LOOKUP_ERR_VERSION,
                                  "lookup file " + path + ": its generalised lookup takes " + std::to_string(obs) +
                                      "-float observations, this build's MDP has " +
                                      std::to_string(kObservationSize) + ", and it holds no plan table for " +
                                      w.name + "; export the policy again from a checkpoint of this build");
    }
    out.emplace(name, std::move(l));
  }
  return out;
}

std::unique_ptr<RealWorkloadRunner> MakeRunner(const Workload& w, const BenchmarkOptions& o) {
  RunnerOptions r;
  r.model = ModelOptionsFor(w.model);
  r.slow_tier = o.slow_tier;
  r.warmup_iterations = o.warmup_iterations;
  r.repeats = o.repeats;
  r.threads = 1;
  auto runner = std::make_unique<RealWorkloadRunner>(r);
  if (runner->Profile().workload.Signature() != w.Signature())
    throw std::runtime_error("this host's profile of " + w.model.name +
                             " differs from the workload file; profile it here (tensortier profile)");
  return runner;
}

enum class BenchClock { kUndisturbed, kWall, kNormalised };

BenchClock ClockOf(const BenchmarkOptions& o) {
  if (o.clock == "undisturbed") return BenchClock::kUndisturbed;
  if (o.clock == "wall") return BenchClock::kWall;
  if (o.clock == "normalised") return BenchClock::kNormalised;
  throw std::invalid_argument("bench clock '" + o.clock + "': undisturbed, normalised or wall");
}

double RoundTime(const ExecutionReport& r, const BenchmarkOptions& o) {
  return ClockOf(o) == BenchClock::kWall ? r.median_ns : r.undisturbed_median_ns;
}

// What of a run's undisturbed time is not the training thread computing:
// the emulated device's waits and the copies (median of the repeats).
double NonComputeNs(const ExecutionReport& r) {
  std::vector<double> ns;
  for (const IterationCounters& c : r.counters) ns.push_back(c.emulated_delay_ns + c.exposed_migration_ns);
  return ns.empty() ? 0 : Median(ns);
}

// What a row reports of one plan's measured rounds; `plan_ns` the plan's
// time of each round on the bench's clock.
void FillMeasured(const std::vector<ExecutionReport>& reports, const std::vector<double>& plan_ns,
                  const std::vector<double>& all_dram_ns, const BenchmarkOptions& o, BenchmarkRow& row) {
  std::vector<double> wall_ns, delay, exposed;
  uint64_t peak = 0, ooms = 0;
  for (const ExecutionReport& r : reports) {
    wall_ns.push_back(r.median_ns);
    for (const IterationCounters& c : r.counters) {
      peak = std::max(peak, c.dram_peak_bytes);
      ooms += c.oom_events + c.migration_oom_events;
      delay.push_back(c.emulated_delay_ns);
      exposed.push_back(c.exposed_migration_ns);
    }
  }
  row.measured = true;
  row.backend = reports.front().backend;
  row.measured_rounds = static_cast<uint32_t>(reports.size());
  row.measured_clock = o.clock;
  row.measured_ns = Median(plan_ns);
  row.measured_wall_ns = Median(wall_ns);
  const auto [lo, hi] = std::minmax_element(plan_ns.begin(), plan_ns.end());
  row.measured_spread = row.measured_ns > 0 ? (*hi - *lo) / row.measured_ns : 0;
  const RoundComparison c = CompareToAllDram(plan_ns, all_dram_ns);
  row.measured_relative = c.relative;
  row.measured_relative_low = c.low;
  row.measured_relative_high = c.high;
  row.measured_relative_confidence = c.confidence;
  row.faster_than_all_dram = c.faster_than_all_dram;
  if (c.faster_than_all_dram)
    row.note = "measured faster than all-DRAM (" + std::to_string(100 * c.relative) + "%): noise or a measurement problem";
  row.prediction_error = (row.predicted_ns - row.measured_ns) / row.measured_ns;
  row.measured_emulated_delay_ns = Median(delay);
  row.measured_exposed_migration_ns = Median(exposed);
  const ExecutionReport& last = reports.back();
  if (!last.counters.empty()) {
    const IterationCounters& k = last.counters.back();
    // With what set-up moved before the iteration (not timed; no plan asks
    // for it: a persistent tensor whose room in a region was taken), so that
    // a difference from the cost model's bytes shows.
    row.measured_bytes_migrated = k.bytes_to_slow + k.bytes_to_dram + k.setup_bytes;
    row.measured_setup_bytes = k.setup_bytes;
    row.migrations_refused = k.migrations_refused;
    row.migrations_skipped = k.migrations_skipped;
    if (!k.first_unfollowed_move.empty())
      row.note += std::string(row.note.empty() ? "" : "; ") + "not executed as planned: " +
                  std::to_string(k.migrations_refused) + " moves refused, " + std::to_string(k.migrations_skipped) +
                  " skipped; the first, " + k.first_unfollowed_move;
  }
  row.dram_peak_bytes = peak;
  row.oom_events = static_cast<uint32_t>(ooms);
}

void FillPredicted(const Workload& w, const PlacementPlan& plan, double model_all_dram_ns, BenchmarkRow& row) {
  CostReport cost = EvaluatePlan(w, plan);
  row.predicted_ns = cost.total_ns;
  row.predicted_relative = model_all_dram_ns / cost.total_ns;
  row.bytes_migrated = cost.bytes_to_slow + cost.bytes_to_dram;
  row.predicted_exec_ns = cost.exec_ns;
  row.predicted_migration_ns = cost.migration_ns;
  row.dram_peak_bytes = cost.dram_peak_bytes;
  row.oom_events = cost.oom ? 1 : 0;
  row.memory_cost_dollars = (static_cast<double>(cost.dram_peak_bytes) * kDramPricePerGb +
                             static_cast<double>(cost.slow_peak_bytes) * kSlowPricePerGb) / 1e9;
}

// Rounds of all-slow and every plan of `rows` without a note, in an order
// rotating by one each round, each run between two all-DRAM runs (one
// before the round's first, one after each): its reference is the mean of
// its two neighbours. The host's speed drifts within a round (the same
// all-DRAM iteration of a 6 ms module read 4.1 ms for 15 calls, then 6.7,
// thread CPU time, nothing else running), so one all-DRAM run per round
// compared plans measured at different speeds. A plan that fails in a
// round is not run again; its row says why.
void MeasureInRounds(const Workload& w, const BenchmarkOptions& o, RealWorkloadRunner& runner,
                     const std::vector<PlacementPlan>& plans, std::vector<BenchmarkRow>& rows) {
  const PlacementPlan all_dram = PlacementPlan::Uniform(w, Tier::kDram, 0);
  const PlacementPlan all_slow = PlacementPlan::Uniform(w, Tier::kSlow, 0);
  constexpr int kAllSlow = -1;
  std::vector<int> order = {kAllSlow};
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].note.empty()) order.push_back(static_cast<int>(i));
  // Every all-DRAM run, and per plan (and all-slow) per round the mean of
  // the all-DRAM runs beside it.
  std::vector<double> dram_runs_ns, slow_ns, slow_dram_ns, slow_non_compute_ns;
  std::vector<std::vector<double>> plan_dram_ns(rows.size());
  std::vector<std::vector<ExecutionReport>> reports(rows.size());
  std::vector<bool> failed(rows.size(), false);
  auto log_run = [&](const ExecutionReport& r, int round, const std::string& plan) {
    if (!r.ok || r.counters.empty()) return;
    const IterationCounters& c = r.counters.back();
    LogDebug("bench_run").kv("workload", w.name).kv("round", round + 1).kv("plan", plan)
        .kv("wall_ms", r.median_ns / 1e6).kv("undisturbed_ms", r.undisturbed_median_ns / 1e6)
        .kv("emulated_ms", c.emulated_delay_ns / 1e6).kv("exposed_copy_ms", c.exposed_migration_ns / 1e6)
        .kv("minor_faults", c.minor_faults);
  };
  auto run_all_dram = [&](int round) {
    ExecutionReport r = runner.Execute(all_dram, o.warmup_iterations, std::max(1, o.repeats));
    if (!r.ok) throw std::runtime_error("the all-DRAM reference run failed: " + r.failure);
    log_run(r, round, "all-dram");
    dram_runs_ns.push_back(RoundTime(r, o));
    return dram_runs_ns.back();
  };
  const int rounds = std::max(1, o.rounds);
  for (int round = 0; round < rounds; ++round) {
    double before_ns = run_all_dram(round);
    for (size_t j = 0; j < order.size(); ++j) {
      const int item = order[(j + static_cast<size_t>(round)) % order.size()];
      if (item >= 0 && failed[item]) continue;
      ExecutionReport r = runner.Execute(item == kAllSlow ? all_slow : plans[item], o.warmup_iterations,
                                         std::max(1, o.repeats));
      log_run(r, round, item == kAllSlow ? "all-slow" : rows[item].policy);
      const double after_ns = run_all_dram(round);
      const double beside_ns = 0.5 * (before_ns + after_ns);
      before_ns = after_ns;
      if (item == kAllSlow) {
        if (!r.ok) throw std::runtime_error("the all-slow reference run failed: " + r.failure);
        slow_ns.push_back(RoundTime(r, o));
        slow_dram_ns.push_back(beside_ns);
        slow_non_compute_ns.push_back(NonComputeNs(r));
      } else if (!r.ok) {
        failed[item] = true;
        rows[item].backend = r.backend;
        rows[item].note = r.failure;
      } else {
        reports[item].push_back(std::move(r));
        plan_dram_ns[item].push_back(beside_ns);
      }
    }
    LogInfo("bench_round").kv("workload", w.name).kv("round", round + 1).kv("of", rounds)
        .kv("all_dram_ms", dram_runs_ns.back() / 1e6).kv("all_slow_ms", slow_ns.back() / 1e6);
  }
  // Each plan's time of each round on the bench's clock.
  std::vector<std::vector<double>> plan_ns(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    for (const ExecutionReport& r : reports[i]) plan_ns[i].push_back(RoundTime(r, o));
  if (ClockOf(o) == BenchClock::kNormalised) {
    // NormalisedRoundNs of all-DRAM, which waits for nothing, is the
    // reference itself.
    const double reference_ns = MinCostNs(w);
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t round = 0; round < plan_ns[i].size(); ++round) {
        plan_ns[i][round] =
            NormalisedRoundNs(plan_ns[i][round], NonComputeNs(reports[i][round]), plan_dram_ns[i][round], reference_ns);
        plan_dram_ns[i][round] = reference_ns;
      }
    for (size_t round = 0; round < slow_ns.size(); ++round) {
      slow_ns[round] = NormalisedRoundNs(slow_ns[round], slow_non_compute_ns[round], slow_dram_ns[round], reference_ns);
      slow_dram_ns[round] = reference_ns;
    }
    for (double& ns : dram_runs_ns) ns = reference_ns;
  }
  const double all_slow_relative = CompareToAllDram(slow_ns, slow_dram_ns).relative;
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].measured_all_slow_relative = all_slow_relative;
    rows[i].measured_all_dram_ns = Median(dram_runs_ns);
    rows[i].measured_all_slow_ns = Median(slow_ns);
    if (failed[i] || reports[i].empty()) continue;
    FillMeasured(reports[i], plan_ns[i], plan_dram_ns[i], o, rows[i]);
  }
}

size_t FastestMeasured(const Workload& w, const BenchmarkOptions& o, RealWorkloadRunner& runner,
                       const std::vector<GuidedIlpCandidate>& candidates) {
  if (candidates.empty()) throw std::logic_error("FastestMeasured: no candidate");
  if (candidates.size() == 1) return 0;
  BenchmarkOptions choice = o;
  choice.rounds = o.plan_time_rounds;
  std::vector<PlacementPlan> plans;
  std::vector<BenchmarkRow> rows(candidates.size());
  for (const GuidedIlpCandidate& c : candidates) plans.push_back(c.plan);
  MeasureInRounds(w, choice, runner, plans, rows);
  // Ran as planned: no refused or skipped move, no allocation over the limit.
  auto as_planned = [&](size_t i) {
    return rows[i].measured && rows[i].migrations_refused == 0 && rows[i].migrations_skipped == 0 &&
           rows[i].oom_events == 0;
  };
  // The cost model's best, unless a measured one beats it.
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].cost_ns < candidates[best].cost_ns) best = i;
  for (size_t i = 0; i < rows.size(); ++i) {
    LogInfo("plan_time_measured_candidate")
        .kv("workload", w.name)
        .kv("source", candidates[i].source)
        .kv("predicted_ns", candidates[i].cost_ns)
        .kv("migrations", candidates[i].plan.migrations.size())
        .kv("measured", rows[i].measured)
        .kv("measured_relative", rows[i].measured_relative)
        .kv("detail", rows[i].note);
    if (as_planned(i) && (!as_planned(best) || rows[i].measured_relative > rows[best].measured_relative)) best = i;
  }
  if (!as_planned(best)) throw std::runtime_error("no candidate plan ran as planned at plan time: " + rows[best].note);
  return best;
}

}  // namespace

double NormalisedRoundNs(double undisturbed_ns, double non_compute_ns, double all_dram_ns, double reference_ns) {
  const double slowdown = all_dram_ns / reference_ns;
  const double compute_ns = std::max(0.0, undisturbed_ns - non_compute_ns);
  return compute_ns / slowdown + non_compute_ns;
}

RoundComparison CompareToAllDram(const std::vector<double>& plan_ns, const std::vector<double>& all_dram_ns) {
  if (plan_ns.size() != all_dram_ns.size())
    throw std::invalid_argument("CompareToAllDram: one plan and one all-DRAM time per round");
  std::vector<double> ratios;
  for (size_t i = 0; i < plan_ns.size(); ++i)
    if (plan_ns[i] > 0) ratios.push_back(all_dram_ns[i] / plan_ns[i]);
  RoundComparison c;
  if (ratios.empty()) return c;
  c.relative = Median(ratios);
  const MedianInterval ci = MedianConfidenceInterval(ratios);
  c.low = ci.low;
  c.high = ci.high;
  c.confidence = ci.confidence;
  c.faster_than_all_dram = c.relative > 1;
  return c;
}

std::vector<BenchmarkRow> MeasurePlans(const Workload& w, const BenchmarkOptions& o,
                                       const std::vector<std::pair<std::string, PlacementPlan>>& plans) {
  if (w.model.empty())
    throw std::invalid_argument("workload '" + w.name + "' names no model: it cannot run real iterations");
  ClockOf(o);  // an unknown clock is refused before any run
  std::vector<BenchmarkRow> rows;
  std::vector<PlacementPlan> measured;
  for (const auto& [name, plan] : plans) {
    BenchmarkRow row;
    row.workload = w.name;
    row.policy = name;
    row.dram_limit_bytes = plan.dram_limit_bytes;
    row.dram_fraction = w.peak_live_bytes() > 0
                            ? static_cast<double>(plan.dram_limit_bytes) / static_cast<double>(w.peak_live_bytes())
                            : 0;
    row.backend = "cost-model";
    FillPredicted(w, plan, MinCostNs(w), row);
    rows.push_back(std::move(row));
    measured.push_back(plan);
  }
  std::unique_ptr<RealWorkloadRunner> runner = MakeRunner(w, o);
  MeasureInRounds(w, o, *runner, measured, rows);
  return rows;
}

std::vector<BenchmarkRow> RunBenchmark(const Workload& w, const BenchmarkOptions& o,
                                       const BenchmarkProgress& progress) {
  std::map<std::string, std::shared_ptr<PlacementAgent>> agents;
  if (std::any_of(o.policies.begin(), o.policies.end(), IsLearnedPolicy)) {
    const bool named = std::any_of(o.policies.begin(), o.policies.end(), [](const std::string& p) {
      const std::string kind = TrainedKind(AgentKind(p));
      return kind == "dqn" || kind == "sac";
    });
    if (named && o.checkpoints.empty())
      throw std::invalid_argument("the policies dqn and sac need --checkpoint [WORKLOAD=]FILE (a learner's "
                                  "checkpoints/dqn.ckpt or sac.ckpt)");
    agents = AgentsFor(w, o);
  }
  const std::map<std::string, lookup::Lookup> lookups = OpenLookups(w, o.policies);
  std::vector<PortfolioMember> portfolio;
  if (!o.portfolio.empty() &&
      std::any_of(o.policies.begin(), o.policies.end(), [](const std::string& p) { return !PortfolioKind(p).empty(); }))
    portfolio = LoadPortfolio(o.portfolio);
  // "learned" stands for every agent a checkpoint gives this workload: its
  // greedy plan and, unless the search is off, the search's.
  std::vector<std::string> policies;
  auto add = [&](const std::string& name) {
    if (std::find(policies.begin(), policies.end(), name) == policies.end()) policies.push_back(name);
  };
  for (const std::string& name : o.policies) {
    if (name != "learned") {
      add(name);
      continue;
    }
    for (const auto& [kind, agent] : agents) {
      add(kind);
      if (o.search.max_rollouts > 1) add(kind + kSearchSuffix);
    }
  }
  const bool measure = o.measure && !w.model.empty();
  if (measure) ClockOf(o);  // an unknown clock is refused before any decision
  const double model_all_dram_ns = MinCostNs(w);
  // This host's real iterations: for the bench's rounds, and before them for
  // a policy that measures plans at plan time.
  std::unique_ptr<RealWorkloadRunner> runner;
  auto host = [&](const std::string& policy) -> RealWorkloadRunner* {
    if (!measure)
      throw std::invalid_argument("policy " + policy +
                                  " measures plans on real iterations at plan time: it needs a workload profiled "
                                  "from a model, with measuring on");
    if (!runner) runner = MakeRunner(w, o);
    return runner.get();
  };

  // The checkpoints' networks with fresh weights, for the "untrained-" policies.
  std::map<std::string, std::unique_ptr<PlacementAgent>> untrained;
  std::vector<BenchmarkRow> rows;
  std::vector<PlacementPlan> plans;  // one per row; measured when the row has no note
  for (double fraction : o.dram_fractions) {
    const uint64_t limit = static_cast<uint64_t>(std::llround(fraction * static_cast<double>(w.peak_live_bytes())));
    for (const std::string& name : policies) {
      BenchmarkRow row;
      row.workload = w.name;
      row.policy = name;
      row.dram_fraction = fraction;
      row.dram_limit_bytes = limit;
      row.backend = "cost-model";
      PlacementPlan plan;
      try {
        if (!PortfolioKind(name).empty()) {
          auto t0 = std::chrono::steady_clock::now();
          plan = PortfolioPlan(portfolio, name, w, limit, o);
          row.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          row.plan_source = plan.produced_by;
        } else if (IsLearnedPolicy(name)) {
          const std::string kind = AgentKind(name), trained = TrainedKind(kind);
          auto it = agents.find(trained);
          if (it == agents.end())
            throw std::invalid_argument("policy " + name + " needs --checkpoint [" + w.name + "=]FILE holding a " +
                                        trained + " agent (a learner's checkpoints/" + trained + ".ckpt)");
          const PlacementAgent* agent = it->second.get();
          if (kind != trained) {
            auto& twin = untrained[trained];
            if (!twin) twin = MakeAgent(trained, it->second->config_json());
            agent = twin.get();
          }
          auto t0 = std::chrono::steady_clock::now();
          const PlanTime plan_time = PlanTimeOf(name);
          plan = LearnedPlan(*agent, kind, w, limit, o, plan_time,
                             plan_time == PlanTime::kIlpMeasured ? host(name) : nullptr);
          row.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          row.plan_source = plan.produced_by;
        } else if (name == kHeatSearch || name == kHeatIlpSearch || name == kHeatRelaxSearch ||
                   name == kHeatPolishSearch) {
          PlacementEnv placement(w, PlanningEnv(o, limit));
          auto t0 = std::chrono::steady_clock::now();
          plan = name == kHeatSearch         ? SearchedPlan(placement, HeatOrderScores(), name, w, o)
                 : name == kHeatPolishSearch ? PolishedSearchedPlan(placement, HeatOrderScores(), name, w, o)
                 : name == kHeatIlpSearch ? IlpSearchedPlan(placement, HeatOrderScores(), name, w, o)
                                          : RelaxSearchedPlan(placement, HeatOrderScores(), name, w, o, limit);
          row.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          row.plan_source = plan.produced_by;
        } else if (name == kHeat || name == kHeatPolish) {
          PlacementEnv placement(w, PlanningEnv(o, limit));
          auto t0 = std::chrono::steady_clock::now();
          const auto dram = [](const Observation&) { return 0; };
          plan = name == kHeat ? RunEpisode(placement, dram).plan : PolishedPlan(placement, dram, name, w, o);
          row.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          plan.produced_by = name;
          row.plan_source = plan.produced_by;
        } else if (name == kHeatIlpMeasured) {
          PlacementEnv placement(w, PlanningEnv(o, limit));
          auto t0 = std::chrono::steady_clock::now();
          plan = GuidedIlpPlan(placement, HeatOrderScores(), name, w, o, host(name));
          row.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          row.plan_source = plan.produced_by;
        } else if (IsLookupPolicy(name)) {
          // As a host applies the file (hostrt/apply/plan_from_lookup.h); the label says
          // which part of it planned, since a plan table is a trained plan
          // and the generalised lookup the policy on a graph it may never
          // have seen.
          EnvConfig env;
          env.mode = o.mode;
          env.scope = o.scope;
          auto t0 = std::chrono::steady_clock::now();
          AppliedPlan applied = PlanFromLookup(lookups.at(name).handle(), w, limit, env);
          row.decision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          row.policy = name + (applied.from_plan_table ? " (plan table)" : " (generalised)");
          plan = std::move(applied.plan);
          plan.Validate(w);
        } else {
          PolicyResult result = MakePolicy(name)->Decide(w, BaselineContext(o, name == "all-dram" ? 0 : limit));
          plan = result.plan;
          row.decision_seconds = result.decision_seconds;
          if (result.solver) {
            row.solver_status = result.solver->status;
            // A plan repaired under the cost model after the solves is no longer the solver's.
            if (auto it = result.stats.find("repairs"); it != result.stats.end() && it->second > 0)
              row.solver_status += " (then repaired to fit)";
            row.solver_gap = result.solver->mip_gap;
            if (result.solver->bound_caps_cost_model && result.solver->bound_ns > 0)
              row.solver_bound_relative = model_all_dram_ns / result.solver->bound_ns;
          }
        }
        FillPredicted(w, plan, model_all_dram_ns, row);
      } catch (const std::exception& e) {
        row.note = e.what();
        LogWarn("bench_policy_failed").kv("policy", name).kv("fraction", fraction).kv("detail", e.what());
      }
      rows.push_back(row);
      plans.push_back(std::move(plan));
      if (progress && !measure) progress(row);
    }
  }
  if (measure) {
    if (!runner) runner = MakeRunner(w, o);
    MeasureInRounds(w, o, *runner, plans, rows);
    for (BenchmarkRow& row : rows)
      if (progress) progress(row);
  }
  return rows;
}

std::string BenchmarkMarkdown(const std::vector<BenchmarkRow>& rows) {
  std::ostringstream os;
  std::vector<std::string> workloads;
  for (const BenchmarkRow& r : rows)
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) workloads.push_back(r.workload);
  os << std::fixed;
  for (const std::string& wl : workloads) {
    std::vector<double> fractions;
    std::vector<std::string> policies;
    std::map<std::pair<std::string, double>, const BenchmarkRow*> cell;
    bool measured = false;
    for (const BenchmarkRow& r : rows) {
      if (r.workload != wl) continue;
      if (std::find(fractions.begin(), fractions.end(), r.dram_fraction) == fractions.end())
        fractions.push_back(r.dram_fraction);
      if (std::find(policies.begin(), policies.end(), r.policy) == policies.end()) policies.push_back(r.policy);
      cell[{r.policy, r.dram_fraction}] = &r;
      measured |= r.measured;
    }
    os << "### " << wl << (measured ? " (measured, relative to all-DRAM; cost model in brackets)" : " (cost model, relative to all-DRAM)")
       << "\n\n";
    if (measured) {
      const BenchmarkRow* any = nullptr;
      for (const BenchmarkRow& r : rows)
        if (r.workload == wl && r.measured) any = &r;
      os << "Median over " << any->measured_rounds << " rounds (" << any->measured_clock
         << " clock) of the per-round ratio to the all-DRAM runs just before and after it (their mean), "
         << "with its " << std::setprecision(1) << 100 * any->measured_relative_confidence
         << "% confidence interval in parentheses; measured all-slow: " << 100 * any->measured_all_slow_relative
         << "%. `!`: measured faster than all-DRAM (noise or a measurement problem).\n\n";
    }
    os << "| policy |";
    for (double f : fractions) os << " DRAM " << std::setprecision(2) << f << " |";
    os << " least DRAM for 90% | decision (s) |\n|---|";
    for (size_t i = 0; i < fractions.size() + 2; ++i) os << "---:|";
    os << "\n";
    for (const std::string& p : policies) {
      os << "| " << p << " |";
      double least = -1, decision = 0;
      for (double f : fractions) {
        auto it = cell.find({p, f});
        if (it == cell.end() || (!it->second->note.empty() && !it->second->measured && it->second->predicted_ns == 0)) {
          os << " n/a |";
          continue;
        }
        const BenchmarkRow& r = *it->second;
        double rel = r.measured ? r.measured_relative : r.predicted_relative;
        os << " " << std::setprecision(1) << 100 * rel << "%";
        if (r.measured && r.measured_rounds > 1)
          os << " (" << 100 * r.measured_relative_low << "-" << 100 * r.measured_relative_high << ")";
        if (r.faster_than_all_dram) os << " !";
        if (r.measured) os << " [" << 100 * r.predicted_relative << "%]";
        os << " |";
        if (rel >= 0.9 && (least < 0 || f < least)) least = f;
        decision = std::max(decision, r.decision_seconds);
      }
      os << " " << (least < 0 ? std::string("-") : (std::ostringstream() << std::setprecision(2) << least).str())
         << " | " << std::setprecision(3) << decision << " |\n";
    }
    os << "\n";
    // Whether an ILP's figure is its optimum decides how a near-tie reads,
    // so every solver-based row says how CBC ended.
    std::string solved;
    for (const BenchmarkRow& r : rows) {
      if (r.workload != wl || r.solver_status.empty()) continue;
      std::ostringstream one;
      one << std::fixed << (solved.empty() ? "" : "; ") << r.policy << " at " << std::setprecision(2) << r.dram_fraction
          << ": " << r.solver_status << ", gap " << std::defaultfloat << std::setprecision(2) << 100 * r.solver_gap
          << "%";
      // The relaxation's bound holds for every plan of the mode, CBC's for
      // those of its formulation.
      if (r.solver_bound_relative > 0)
        one << (r.solver_status == "relaxation"    ? ", no sync plan above "
                : r.solver_status == "async bound" ? ", no async plan above "
                                                   : ", none of its plans above ")
            << std::fixed
            << std::setprecision(2) << 100 * r.solver_bound_relative << "%";
      solved += one.str();
    }
    if (!solved.empty()) os << "Solver status (CBC, or the relaxation's prices; gap: what it proved): " << solved << ".\n\n";
  }
  return os.str();
}

void WriteBenchmarkResults(const std::string& dir, const std::vector<BenchmarkRow>& rows) {
  MakeDirectories(dir);
  std::ostringstream csv;
  csv << "workload,policy,dram_fraction,dram_limit_bytes,decision_seconds,predicted_ns,predicted_relative,measured,"
         "backend,measured_ns,measured_spread,measured_relative,prediction_error,bytes_migrated,dram_peak_bytes,"
         "oom_events,memory_cost_dollars,predicted_exec_ns,predicted_migration_ns,measured_emulated_delay_ns,"
         "measured_exposed_migration_ns,measured_bytes_migrated,migrations_refused,migrations_skipped,measured_rounds,"
         "measured_relative_low,measured_relative_high,measured_relative_confidence,measured_all_slow_relative,"
         "faster_than_all_dram,measured_clock,measured_wall_ns,plan_source,solver_status,solver_gap,solver_bound_relative,note\n";
  csv << std::setprecision(10);
  nlohmann::json json = nlohmann::json::array();
  for (const BenchmarkRow& r : rows) {
    std::string note = r.note, plan_source = r.plan_source;
    for (std::string* text : {&note, &plan_source}) {
      std::replace(text->begin(), text->end(), ',', ';');
      std::replace(text->begin(), text->end(), '\n', ' ');
    }
    csv << r.workload << ',' << r.policy << ',' << r.dram_fraction << ',' << r.dram_limit_bytes << ','
        << r.decision_seconds << ',' << r.predicted_ns << ',' << r.predicted_relative << ',' << (r.measured ? 1 : 0)
        << ',' << r.backend << ',' << r.measured_ns << ',' << r.measured_spread << ',' << r.measured_relative << ','
        << r.prediction_error << ',' << r.bytes_migrated << ',' << r.dram_peak_bytes << ',' << r.oom_events << ','
        << r.memory_cost_dollars << ',' << r.predicted_exec_ns << ',' << r.predicted_migration_ns << ','
        << r.measured_emulated_delay_ns << ',' << r.measured_exposed_migration_ns << ',' << r.measured_bytes_migrated
        << ',' << r.migrations_refused << ',' << r.migrations_skipped << ',' << r.measured_rounds << ','
        << r.measured_relative_low << ',' << r.measured_relative_high << ',' << r.measured_relative_confidence << ','
        << r.measured_all_slow_relative << ',' << (r.faster_than_all_dram ? 1 : 0) << ',' << r.measured_clock << ','
        << r.measured_wall_ns << ',' << plan_source << ',' << r.solver_status << ',' << r.solver_gap << ','
        << r.solver_bound_relative << ',' << note
        << '\n';
    json.push_back({{"workload", r.workload}, {"policy", r.policy}, {"dram_fraction", r.dram_fraction},
                    {"dram_limit_bytes", r.dram_limit_bytes}, {"decision_seconds", r.decision_seconds},
                    {"predicted_ns", r.predicted_ns}, {"predicted_relative", r.predicted_relative},
                    {"measured", r.measured}, {"backend", r.backend}, {"measured_ns", r.measured_ns},
                    {"measured_spread", r.measured_spread}, {"measured_relative", r.measured_relative},
                    {"prediction_error", r.prediction_error}, {"bytes_migrated", r.bytes_migrated},
                    {"dram_peak_bytes", r.dram_peak_bytes}, {"oom_events", r.oom_events},
                    {"memory_cost_dollars", r.memory_cost_dollars}, {"predicted_exec_ns", r.predicted_exec_ns},
                    {"predicted_migration_ns", r.predicted_migration_ns},
                    {"measured_emulated_delay_ns", r.measured_emulated_delay_ns},
                    {"measured_exposed_migration_ns", r.measured_exposed_migration_ns},
                    {"measured_bytes_migrated", r.measured_bytes_migrated},
                    {"migrations_refused", r.migrations_refused}, {"migrations_skipped", r.migrations_skipped},
                    {"measured_rounds", r.measured_rounds}, {"measured_relative_low", r.measured_relative_low},
                    {"measured_relative_high", r.measured_relative_high},
                    {"measured_relative_confidence", r.measured_relative_confidence},
                    {"measured_all_slow_relative", r.measured_all_slow_relative},
                    {"faster_than_all_dram", r.faster_than_all_dram}, {"measured_clock", r.measured_clock},
                    {"measured_wall_ns", r.measured_wall_ns}, {"plan_source", r.plan_source},
                    {"solver_status", r.solver_status}, {"solver_gap", r.solver_gap},
                    {"solver_bound_relative", r.solver_bound_relative}, {"note", r.note}});
  }
  WriteFileAtomically(dir + "/bench.csv", csv.str());
  WriteFileAtomically(dir + "/bench.json", json.dump(2) + "\n");
  WriteFileAtomically(dir + "/bench.md", BenchmarkMarkdown(rows));
  WriteBenchmarkCharts(dir, rows);
}

void WriteBenchmarkCharts(const std::string& dir, const std::vector<BenchmarkRow>& rows) {
  // One plot per workload: performance against DRAM fraction, a line per
  // policy. As many colours as a bench has policies (a repeated colour makes
  // two policies one).
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                  "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#843c39", "#000000"};
  constexpr size_t kNumColors = sizeof kColors / sizeof kColors[0];
  std::map<std::string, std::map<std::string, ChartSeries>> by_workload;
  std::map<std::string, bool> measured;
  for (const BenchmarkRow& r : rows) {
    if (r.predicted_ns <= 0) continue;
    measured[r.workload] = measured[r.workload] || r.measured;
    ChartSeries& s = by_workload[r.workload][r.policy];
    s.name = r.policy;
    s.points.push_back({r.dram_fraction, 100 * (r.measured ? r.measured_relative : r.predicted_relative)});
  }
  for (auto& [workload, series_by_policy] : by_workload) {
    std::vector<ChartSeries> series;
    size_t i = 0;
    for (auto& [policy, s] : series_by_policy) {
      std::sort(s.points.begin(), s.points.end());
      s.color = kColors[i++ % kNumColors];
      series.push_back(s);
    }
    const std::string y_label = measured[workload] ? "% of all-DRAM (measured)" : "% of all-DRAM (cost model)";
    std::string svg = SvgLineChart(workload + ": performance against DRAM", "DRAM / peak", y_label, series,
                                   {{"90%", "#999999", 90.0}});
    WriteFileAtomically(dir + "/bench-" + workload + ".svg", svg);
  }
}

}  // namespace tensortier
