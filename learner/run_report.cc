#include "learner/run_report.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/files.h"
#include "common/stats.h"
#include "envs/first_touch.h"
#include "envs/workload_io.h"
#include "learner/metrics_csv.h"

namespace tensortier {
namespace {

constexpr double kBytesPerGb = 1e9;

PolicyScore Score(const Workload& w, const EnvConfig& env, const PlacementPlan& plan, const std::string& name,
                  const std::string& source) {
  PolicyScore s;
  s.policy = name;
  s.source = source;
  s.cost = EvaluatePlan(w, plan);
  s.relative_performance = s.cost.total_ns > 0 ? MinCostNs(w) / s.cost.total_ns : 0;
  s.normalised_cost = NormalisedCost(w, s.cost.total_ns);
  s.memory_cost_dollars = (static_cast<double>(s.cost.dram_peak_bytes) * env.dram_price_per_gb +
                           static_cast<double>(s.cost.slow_peak_bytes) * env.slow_price_per_gb) /
                          kBytesPerGb;
  return s;
}

nlohmann::json ScoreJson(const PolicyScore& s) {
  return {{"policy", s.policy},
          {"source", s.source},
          {"runtime_ns", s.cost.total_ns},
          {"exec_ns", s.cost.exec_ns},
          {"migration_ns", s.cost.migration_ns},
          {"relative_performance", s.relative_performance},
          {"normalised_cost", s.normalised_cost},
          {"dram_peak_bytes", s.cost.dram_peak_bytes},
          {"slow_peak_bytes", s.cost.slow_peak_bytes},
          {"bytes_to_slow", s.cost.bytes_to_slow},
          {"bytes_to_dram", s.cost.bytes_to_dram},
          {"migrations", s.cost.migrations_to_slow + s.cost.migrations_to_dram},
          {"oom", s.cost.oom},
          {"memory_cost_dollars", s.memory_cost_dollars}};
}

constexpr const char* kGreedy = "greedy policy";
constexpr const char* kSearch = "plan-time search";
constexpr const char* kIlp = "plan-time ILP";
constexpr const char* kExplored = "best episode seen in training";
constexpr const char* kFinalMark = " (final plan)";

PlacementPlan BestTrainingPlan(const LearnerResult& result) {
  PlacementPlan plan = result.best_plan;
  if (plan.produced_by.empty() || plan.produced_by == "placement-env") plan.produced_by = result.agent + "-best-episode";
  return plan;
}

// Per backend, the all-DRAM and all-slow runtimes that the plans measured in
// training were normalised by (medians over the cache's entries: each worker
// measured its own), for the report's plot of measured episodes.
nlohmann::json MeasuredReferencesJson(const std::vector<CachedMeasurement>& measurements) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_backend;
  for (const CachedMeasurement& e : measurements) {
    if (e.min_runtime_ns <= 0 || e.max_runtime_ns <= 0) continue;
    by_backend[e.backend].first.push_back(e.min_runtime_ns);
    by_backend[e.backend].second.push_back(e.max_runtime_ns);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [backend, refs] : by_backend)
    out.push_back({{"backend", backend}, {"plans_measured", refs.first.size()},
                   {"all_dram_ns", Median(refs.first)}, {"all_slow_ns", Median(refs.second)}});
  return out;
}

// The search's source: where it went on from when that was another
// planner's plan.
std::string SearchSource(const LearnerResult& result) {
  if (result.search_started_from.empty()) return kSearch;
  return std::string(kSearch) + " from " + result.search_started_from + "'s plan" +
         (result.search_kept_start ? ", kept as given" : "");
}

bool IsLearned(const PolicyScore& s) {
  return s.source.rfind(kGreedy, 0) == 0 || s.source.rfind(kSearch, 0) == 0 || s.source.rfind(kIlp, 0) == 0;
}

}  // namespace

std::vector<PolicyScore> ComparePlans(const Workload& w, const EnvConfig& env, const LearnerResult& result,
                                      const FinalPlanChoice& final_plan, const std::vector<BaselinePlan>& baselines) {
  std::vector<PolicyScore> out;
  out.push_back(Score(w, env, PlacementPlan::Uniform(w, Tier::kDram, 0), "all-dram (no limit)", "reference"));
  PlacementPlan first_touch = FirstTouchPlan(w, env.dram_limit_bytes);
  first_touch.mode = env.mode;
  out.push_back(Score(w, env, first_touch, "first-touch", "reference"));
  out.push_back(Score(w, env, PlacementPlan::Uniform(w, Tier::kSlow, env.dram_limit_bytes), "all-slow", "reference"));
  for (const BaselinePlan& b : baselines) {
    if (b.policy == "first-touch") continue;  // a reference already
    out.push_back(Score(w, env, b.plan, b.status.empty() ? b.policy : b.policy + " (" + b.status + ")", "baseline"));
  }
  bool marked = false;
  auto mark = [&](const PlacementPlan& plan, const std::string& name, const std::string& source) {
    PolicyScore s = Score(w, env, plan, name, source);
    if (!marked && s.source == final_plan.source && plan.Hash() == final_plan.plan.Hash()) {
      s.source += kFinalMark;
      marked = true;
    }
    out.push_back(std::move(s));
  };
  mark(result.greedy_plan, result.greedy_plan.produced_by, kGreedy);
  if (result.searched && !(result.search.greedy.plan == result.greedy_plan))
    mark(result.search.greedy.plan, result.search.greedy.plan.produced_by, kGreedy);
  if (result.searched) mark(result.search.best.plan, result.search.best.plan.produced_by, SearchSource(result));
  if (result.ran_ilp) mark(result.ilp.plan, result.ilp.plan.produced_by, kIlp);
  if (result.has_best_plan) {
    const PlacementPlan explored = BestTrainingPlan(result);
    mark(explored, explored.produced_by, kExplored);
  }
  return out;
}

double MeasuredNormalisedCost(double runtime_ns, double all_dram_ns, double all_slow_ns, double no_span) {
  return all_slow_ns > all_dram_ns ? (runtime_ns - all_dram_ns) / (all_slow_ns - all_dram_ns) : no_span;
}

FinalPlanMeasurement FinalPlanMeasuredInTraining(const LearnerResult& result, const PlacementPlan& final_plan) {
  FinalPlanMeasurement m;
  m.plan_name = final_plan.produced_by;
  const uint64_t hash = final_plan.Hash();
  for (const CachedMeasurement& e : result.measurements) {
    if (e.plan_hash != hash) continue;
    m.measured = true;
    m.backend = e.backend;
    m.method = "an episode of training that ran this plan on real iterations; all-DRAM and all-slow measured by "
               "the same worker when it took the task";
    m.runtime_ns = e.runtime_ns;
    m.all_dram_ns = e.min_runtime_ns;
    m.all_slow_ns = e.max_runtime_ns;
    m.oom = e.oom;
    if (!e.oom && e.runtime_ns > 0) m.relative_performance = e.min_runtime_ns / e.runtime_ns;
    if (!e.oom) m.normalised_cost = MeasuredNormalisedCost(e.runtime_ns, e.min_runtime_ns, e.max_runtime_ns);
    return m;
  }
  if (result.measurements.empty())
    m.not_measured_reason = "final plan not measured: no episode ran real iterations (every episode was scored by "
                            "the cost model)";
  else
    m.not_measured_reason = "final plan not measured: the " + std::to_string(result.measurements.size()) +
                            " plans that episodes ran on real iterations were other plans";
  return m;
}

std::vector<MeasuredComparisonRow> MeasuredComparisonRows(const FinalPlanMeasurement& measured) {
  if (!measured.measured) return {};
  const std::string source = "measured on " + measured.backend;
  auto reference = [&](const std::string& policy, double ns) {
    MeasuredComparisonRow r;
    r.policy = policy;
    r.source = source;
    r.runtime_ns = ns;
    r.relative_performance = ns > 0 ? measured.all_dram_ns / ns : 0;
    r.normalised_cost = MeasuredNormalisedCost(ns, measured.all_dram_ns, measured.all_slow_ns,
                                               std::numeric_limits<double>::quiet_NaN());
    return r;
  };
  std::vector<MeasuredComparisonRow> rows{reference("all-dram (no limit)", measured.all_dram_ns),
                                          reference("all-slow", measured.all_slow_ns)};
  // The final plan's own ratio (a median of per-round ratios when measured
  // in rounds), not all_dram_ns / runtime_ns.
  MeasuredComparisonRow plan;
  plan.policy = measured.plan_name;
  plan.source = source + kFinalMark;
  plan.oom = measured.oom;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  plan.runtime_ns = measured.oom ? nan : measured.runtime_ns;
  plan.relative_performance = measured.oom ? nan : measured.relative_performance;
  plan.normalised_cost = measured.oom ? nan : measured.normalised_cost;
  rows.push_back(plan);
  return rows;
}

std::string ComparisonMarkdown(const std::vector<PolicyScore>& scores, const FinalPlanMeasurement& measured) {
  std::ostringstream os;
  os << "| policy | source | runtime (ms) | vs all-DRAM | normalised cost | DRAM peak (MiB) | migrated (MiB) | OOM |\n"
     << "|---|---|---:|---:|---:|---:|---:|---|\n";
  os << std::fixed;
  for (const PolicyScore& s : scores) {
    os << "| " << s.policy << " | " << s.source << " | " << std::setprecision(3) << s.cost.total_ns / 1e6 << " | "
       << std::setprecision(1) << 100.0 * s.relative_performance << "% | " << std::setprecision(3)
       << s.normalised_cost << " | " << std::setprecision(1) << s.cost.dram_peak_bytes / 1048576.0 << " | "
       << (s.cost.bytes_to_slow + s.cost.bytes_to_dram) / 1048576.0 << " | " << (s.cost.oom ? "yes" : "no")
       << " |\n";
  }
  // Not scored by the cost model: no peak or migration figures of their own.
  auto cell = [&](double v, int precision, double scale, const char* unit) -> std::ostream& {
    if (!std::isfinite(v)) return os << "–";
    return os << std::setprecision(precision) << v * scale << unit;
  };
  for (const MeasuredComparisonRow& r : MeasuredComparisonRows(measured)) {
    os << "| " << r.policy << " | " << r.source << " | ";
    cell(r.runtime_ns, 3, 1e-6, "") << " | ";
    cell(r.relative_performance, 1, 100.0, "%") << " | ";
    cell(r.normalised_cost, 3, 1.0, "") << " | – | – | " << (r.oom ? "yes" : "no") << " |\n";
  }
  return os.str();
}

std::string ComparisonVerdict(const std::vector<PolicyScore>& scores) {
  const PolicyScore* learned = nullptr;
  const PolicyScore* rival = nullptr;
  for (const PolicyScore& s : scores) {
    if (s.cost.oom || (s.source == "reference" && s.policy.rfind("all-dram", 0) == 0)) continue;
    if (s.source.rfind(kExplored, 0) == 0) continue;  // not a policy
    const PolicyScore*& slot = IsLearned(s) ? learned : rival;
    if (!slot || s.relative_performance > slot->relative_performance) slot = &s;
  }
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (!learned) return "no learned plan fits the DRAM limit";
  // Half a hundredth of a point: the verdict's precision below.
  constexpr double kTie = 5e-5;
  if (rival && std::abs(learned->relative_performance - rival->relative_performance) < kTie) {
    os << std::setprecision(2) << "the learned plan (" << learned->source << ", "
       << 100.0 * learned->relative_performance << "% of all-DRAM) ties " << rival->policy << " (" << rival->source
       << "), the fastest other plan of this comparison";
    return os.str();
  }
  if (!rival || learned->relative_performance >= rival->relative_performance) {
    os << std::setprecision(2) << "the learned plan (" << learned->source << ", "
       << 100.0 * learned->relative_performance << "% of all-DRAM) is the fastest of this comparison";
    if (rival)
      os << ", " << 100.0 * (learned->relative_performance - rival->relative_performance) << " points above "
         << rival->policy << " (" << rival->source << ")";
    return os.str();
  }
  // Two decimals: a rival ahead by hundredths (a relaxation's plan beside
  // the learned one) read "0.0 points" with one.
  os << std::setprecision(2);
  os << "the learned plan is NOT the best: " << rival->policy << " (" << rival->source << ") reaches "
     << 100.0 * rival->relative_performance << "% of all-DRAM against the learned " << learned->source << "'s "
     << 100.0 * learned->relative_performance << "% (" << 100.0 * (rival->relative_performance - learned->relative_performance)
     << " points)";
  return os.str();
}

const BaselinePlan* FastestBaseline(const Workload& w, const std::vector<BaselinePlan>& baselines) {
  const BaselinePlan* fastest = nullptr;
  double fastest_ns = std::numeric_limits<double>::infinity();
  for (const BaselinePlan& b : baselines) {
    const CostReport c = EvaluatePlan(w, b.plan);
    if (!c.oom && c.total_ns < fastest_ns) fastest = &b, fastest_ns = c.total_ns;
  }
  return fastest;
}

FinalPlanChoice ChooseFinalPlan(const Workload& w, const LearnerResult& result) {
  FinalPlanChoice best{result.greedy_plan, kGreedy};
  double best_ns = result.greedy_summary.oom || result.greedy_summary.cost.oom
                       ? std::numeric_limits<double>::infinity()
                       : EvaluatePlan(w, result.greedy_plan).total_ns;
  auto consider = [&](const PlacementPlan& plan, const std::string& source) {
    CostReport c = EvaluatePlan(w, plan);
    if (!c.oom && c.total_ns < best_ns) best = {plan, source}, best_ns = c.total_ns;
  };
  if (result.searched) consider(result.search.greedy.plan, kGreedy);
  if (result.searched) consider(result.search.best.plan, SearchSource(result));
  if (result.ran_ilp) consider(result.ilp.plan, kIlp);
  if (result.has_best_plan) {
    consider(BestTrainingPlan(result), kExplored);
  }
  return best;
}

void WriteRunDirectory(const std::string& dir, const std::string& config_toml, const Workload& w,
                       const EnvConfig& env, const LearnerResult& result, const FinalPlanChoice& final_choice,
                       const std::vector<PolicyScore>& comparison, const FinalPlanMeasurement& measured) {
  const PlacementPlan& final_plan = final_choice.plan;
  MakeDirectories(dir);
  WriteFileAtomically(dir + "/config.toml", config_toml);
  WriteFileAtomically(dir + "/metrics.csv", MetricsCsv(result.records));
  WritePlanFile(final_plan, dir + "/final_plan.ttplan");
  WriteWorkloadFile(w, dir + "/workload.ttwl");

  nlohmann::json summary;
  summary["workload"] = {{"name", w.name}, {"source", w.source}, {"kernels", w.num_kernels()},
                         {"tensors", w.num_tensors()}, {"peak_bytes", w.peak_live_bytes()},
                         {"signature", w.Signature()}};
  summary["dram_limit_bytes"] = env.dram_limit_bytes;
  summary["episodes"] = result.episodes;
  summary["updates"] = result.updates;
  summary["weights_version"] = result.weights_version;
  summary["wall_seconds"] = result.wall_seconds;
  summary["workers_seen"] = result.workers_seen;
  summary["backend"] = result.records.empty() ? "none" : result.records.back().backend;
  const LearnerCounters& c = result.counters;
  summary["counters"] = {{"frames_received", c.frames_received}, {"malformed_frames", c.malformed_frames},
                         {"oversized_frames", c.oversized_frames}, {"wrong_version_frames", c.wrong_version_frames},
                         {"unknown_worker_frames", c.unknown_worker_frames}, {"duplicate_batches", c.duplicate_batches},
                         {"transitions_ingested", c.transitions_ingested}, {"workers_registered", c.workers_registered},
                         {"workers_expired", c.workers_expired}};
  summary["greedy"] = {{"oom", result.greedy_summary.oom}, {"runtime_ns", result.greedy_summary.cost.total_ns},
                       {"normalised_cost", result.greedy_summary.normalised_cost}};
  summary["best_episode_runtime_ns"] = result.best_runtime_ns;
  summary["counters"]["amplified_frames"] = c.amplified_frames;
  summary["counters"]["non_finite_frames"] = c.non_finite_frames;
  summary["counters"]["updates_skipped"] = c.updates_skipped;
  summary["counters"]["multipart_frames"] = c.multipart_frames;
  summary["counters"]["connections_closed"] = c.connections_closed;
  summary["counters"]["tasks_refused"] = c.tasks_refused;
  if (!result.failure.empty()) summary["failure"] = result.failure;
  summary["counters"]["duplicate_reports"] = c.duplicate_reports;
  summary["counters"]["episodes_acked"] = c.episodes_acked;
  summary["counters"]["checkpoints_written"] = c.checkpoints_written;
  summary["counters"]["checkpoints_rejected"] = c.checkpoints_rejected;
  summary["measurement_cache"] = {{"hits", c.measurement_cache_hits}, {"misses", c.measurement_cache_misses},
                                  {"redundant", c.measurement_cache_redundant}};
  summary["replay"] = {{"kind", result.replay}, {"samples_per_insert", result.samples_per_insert},
                       {"rate_limiter", {{"inserts", result.rate_limiter.inserts},
                                         {"samples", result.rate_limiter.samples},
                                         {"deletes", result.rate_limiter.deletes},
                                         {"blocked_inserts", result.rate_limiter.blocked_inserts},
                                         {"blocked_samples", result.rate_limiter.blocked_samples}}}};
  summary["exploration"] = result.exploration;
  summary["initialized_from"] = {{"checkpoint", result.initialized_from},
                                 {"greedy_runtime_ns", result.initialized_runtime_ns}};
  summary["resume"] = {{"resumed", result.resumed}, {"checkpoint", result.resumed_from},
                       {"at_episode", result.resumed_at_episode},
                       {"weights_version", result.resumed_weights_version}};
  summary["evaluations"] = {{"count", result.evaluations}, {"rewards", result.evaluation_rewards},
                            {"best_reward", result.best_evaluation_reward},
                            {"skipped", result.evaluations_skipped}, {"failed", result.evaluations_failed}};
  summary["convergence"] = {{"converged", result.converged}, {"episodes", result.converged_at_episode},
                            {"wall_seconds", result.converged_at_seconds}};
  summary["final_plan"] = {{"produced_by", final_plan.produced_by}, {"source", final_choice.source},
                           {"hash", final_plan.Hash()}, {"verdict", ComparisonVerdict(comparison)}};
  if (measured.measured)
    summary["final_plan"]["measured"] = {{"measured", true}, {"backend", measured.backend}, {"method", measured.method},
                                         {"runtime_ns", measured.runtime_ns}, {"all_dram_ns", measured.all_dram_ns},
                                         {"all_slow_ns", measured.all_slow_ns}, {"oom", measured.oom},
                                         {"relative_performance", measured.relative_performance},
                                         {"normalised_cost", measured.normalised_cost}};
  else
    summary["final_plan"]["measured"] = {{"measured", false}, {"reason", measured.not_measured_reason}};
  summary["measured_references"] = MeasuredReferencesJson(result.measurements);
  if (result.ran_ilp) {
    nlohmann::json solves = nlohmann::json::array();
    for (const GuidedIlpSolve& s : result.ilp.solves)
      solves.push_back({{"formulation", s.formulation}, {"fixed_share", s.fixed_share},
                        {"window_first_kernel", s.window_first}, {"window_last_kernel", s.window_last},
                        {"fixed_variables", s.fixed_variables},
                        {"status", s.mip.status}, {"gap", s.mip.gap}, {"seconds", s.mip.seconds},
                        {"runtime_ns", s.cost_ns}, {"improved", s.improved}});
    summary["plan_ilp"] = {{"formulation", result.ilp.formulation}, {"location_variables", result.ilp.location_variables},
                           {"solves", solves}, {"seconds", result.ilp.seconds},
                           {"greedy_runtime_ns", result.ilp.greedy.cost.total_ns},
                           {"runtime_ns", result.ilp.cost.total_ns}};
  }
  if (result.searched)
    summary["plan_search"] = {{"rollouts", result.search.rollouts}, {"improvements", result.search.improvements},
                              {"starting_plan", result.search.starting_plan},
                              {"started_from", result.search_started_from},
                              {"kept_start", result.search_kept_start},
                              {"restarted", result.search.restarted},
                              {"cyclic_replays", result.search.cyclic_replays},
                              {"blocker_replays", result.search.blocker_replays},
                              {"replays", result.search.replays}, {"pair_replays", result.search.pair_replays},
                              {"tensor_replays", result.search.tensor_replays},
                              {"replay_improvements", result.search.replay_improvements},
                              {"pair_improvements", result.search.pair_improvements},
                              {"blocker_improvements", result.search.blocker_improvements},
                              {"cyclic_improvements", result.search.cyclic_improvements},
                              {"tensor_improvements", result.search.tensor_improvements},
                              {"room_replays", result.search.room_replays},
                              {"room_improvements", result.search.room_improvements},
                              {"window_replays", result.search.window_replays},
                              {"window_improvements", result.search.window_improvements},
                              {"windows_priced_out", result.search.windows_priced_out},
                              {"polish_edits", result.search.polish_edits},
                              {"polish_saved_ns", result.search.polish_saved_ns},
                              {"polish_seconds", result.search.polish_seconds},
                              {"replay_steps", result.search.replay_steps},
                              {"replay_episode_steps", result.search.replay_episode_steps},
                              {"shortening_mismatches", result.search.shortening_mismatches},
                              {"deviations", result.search.deviations}, {"seconds", result.search.seconds},
                              {"copies_moved", result.search.copies_moved},
                              {"copy_schedule_saved_ns", result.search.copy_schedule_saved_ns},
                              {"greedy_runtime_ns", result.search.greedy.cost.total_ns},
                              {"runtime_ns", result.search.best.cost.total_ns}};
  if (result.imitated) {
    nlohmann::json rounds = nlohmann::json::array();
    for (const ImitationRound& r : result.imitation.rounds)
      rounds.push_back({{"round", r.round}, {"greedy_runtime_ns", r.greedy_cost_ns}, {"oom", r.greedy_oom},
                        {"demonstrations", r.demonstrations}, {"mistakes", r.mistakes}, {"polish", r.polish},
                        {"weight_mean", r.weight_mean}, {"seconds", r.seconds}});
    summary["imitation"] = {{"expert", result.imitation.expert},
                            {"expert_runtime_ns", result.imitation.expert_cost_ns},
                            {"expert_finished_runtime_ns", result.imitation.expert_finished_cost_ns},
                            {"best_round", result.imitation.best_round},
                            {"best_runtime_ns", result.imitation.best_cost_ns},
                            {"updates", result.imitation.updates}, {"seconds", result.imitation.seconds},
                            {"rounds", rounds}};
  }
  if (!result.self_imitation.rounds.empty()) {
    nlohmann::json rounds = nlohmann::json::array();
    for (const SelfImitationRound& r : result.self_imitation.rounds)
      rounds.push_back({{"searched_runtime_ns", r.searched_cost_ns}, {"greedy_runtime_ns", r.greedy_cost_ns},
                        {"seconds", r.seconds}});
    summary["self_imitation"] = {{"start_runtime_ns", result.self_imitation.start_cost_ns},
                                 {"best_runtime_ns", result.self_imitation.best_greedy.cost.total_ns},
                                 {"seconds", result.self_imitation.seconds}, {"rounds", rounds}};
  }
  WriteFileAtomically(dir + "/summary.json", summary.dump(2) + "\n");

  nlohmann::json comp = nlohmann::json::array();
  std::ostringstream csv;
  csv << "policy,source,runtime_ns,relative_performance,normalised_cost,dram_peak_bytes,bytes_migrated,oom,memory_cost_dollars\n";
  csv << std::setprecision(10);
  for (const PolicyScore& s : comparison) {
    comp.push_back(ScoreJson(s));
    csv << '"' << s.policy << "\",\"" << s.source << "\"," << s.cost.total_ns << ',' << s.relative_performance << ',' << s.normalised_cost << ','
        << s.cost.dram_peak_bytes << ',' << (s.cost.bytes_to_slow + s.cost.bytes_to_dram) << ','
        << (s.cost.oom ? 1 : 0) << ',' << s.memory_cost_dollars << '\n';
  }
  // The measured rows: no peak, migration or dollar figures of their own
  // (empty in the CSV, absent from the JSON), and null where the plan ran
  // out of DRAM.
  auto json_number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  auto csv_number = [&csv](double v) -> std::ostringstream& {
    if (std::isfinite(v)) csv << v;
    return csv;
  };
  for (const MeasuredComparisonRow& r : MeasuredComparisonRows(measured)) {
    comp.push_back({{"policy", r.policy}, {"source", r.source}, {"runtime_ns", json_number(r.runtime_ns)},
                    {"relative_performance", json_number(r.relative_performance)},
                    {"normalised_cost", json_number(r.normalised_cost)}, {"oom", r.oom},
                    {"backend", measured.backend}, {"method", measured.method}});
    csv << '"' << r.policy << "\",\"" << r.source << "\",";
    csv_number(r.runtime_ns) << ',';
    csv_number(r.relative_performance) << ',';
    csv_number(r.normalised_cost) << ",,," << (r.oom ? 1 : 0) << ",\n";
  }
  WriteFileAtomically(dir + "/comparison.json", comp.dump(2) + "\n");
  WriteFileAtomically(dir + "/comparison.csv", csv.str());
  WriteFileAtomically(dir + "/comparison.md", ComparisonMarkdown(comparison, measured));
}

}  // namespace tensortier
