#include "learner/corpus_pretraining.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>

#include "agents/agent.h"
#include "common/files.h"
#include "common/log.h"
#include "envs/cost_model.h"
#include "envs/workload_spec.h"
#include "learner/training_run.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double Relative(const Workload& w, const EpisodeSummary& s) {
  return s.oom || s.cost.total_ns <= 0 ? 0 : MinCostNs(w) / s.cost.total_ns;
}

std::string Csv(const CorpusPretrainingResult& r) {
  std::ostringstream out;
  out << "workload,validation,dram_fraction,dram_limit_bytes,expert,expert_relative,greedy_relative,greedy_oom,"
         "baselines_seconds\n";
  for (const CorpusWorkloadScore& s : r.workloads)
    out << '"' << s.workload << "\"," << (s.validation ? 1 : 0) << ',' << s.dram_fraction << ','
        << s.dram_limit_bytes << ',' << s.expert << ',' << s.expert_relative << ',' << s.greedy_relative << ','
        << (s.greedy_oom ? 1 : 0) << ',' << s.baselines_seconds << '\n';
  return out.str();
}

}  // namespace

CorpusPretrainingResult PretrainOnCorpus(const CorpusPretrainingOptions& o,
                                         const std::function<void(const std::string&)>& progress) {
  if (o.workloads.empty()) throw std::invalid_argument("pretrain: no workload (--workloads)");
  if (o.experts.empty()) throw std::invalid_argument("pretrain: no expert policy (--demonstrations)");
  if (o.dram_fractions.empty()) throw std::invalid_argument("pretrain: no DRAM fraction (--dram-fractions)");
  if (o.seeds < 1) throw std::invalid_argument("pretrain: --seeds must be at least 1");
  for (double f : o.dram_fractions)
    if (!(f > 0 && f <= 1)) throw std::invalid_argument("pretrain: every DRAM fraction must be in (0, 1]");
  auto say = [&](const std::string& line) {
    LogInfo("pretrain_progress").kv("what", line);
    if (progress) progress(line);
  };
  const auto start = Clock::now();
  // The envs hold references to their workloads: neither may move.
  std::vector<std::unique_ptr<Workload>> workloads;
  std::vector<const Workload*> task_workloads;
  std::vector<std::unique_ptr<PlacementEnv>> envs;
  std::vector<ImitationTask> tasks;
  CorpusPretrainingResult result;
  uint64_t resident_slot_bytes = 0;
  std::vector<std::pair<std::string, bool>> specs;  // spec, validation
  for (const std::string& spec : o.workloads) specs.emplace_back(spec, false);
  for (const std::string& spec : o.validation_workloads) specs.emplace_back(spec, true);
  for (const auto& [spec, validation] : specs) {
    auto w = std::make_unique<Workload>(LoadWorkloadSpec(spec));
    // Named by its spec where the name says nothing or repeats another's
    // (two scales of one model).
    bool repeated = false;
    for (const auto& other : workloads) repeated |= other->name == w->name;
    if (w->name.empty() || repeated) w->name = spec;
    for (double fraction : o.dram_fractions) {
      std::string name = w->name;
      if (o.dram_fractions.size() > 1) {
        char at[32];
        std::snprintf(at, sizeof at, "@%g", fraction);
        name += at;
      }
      EnvConfig env = o.env;
      env.dram_limit_bytes = static_cast<uint64_t>(fraction * static_cast<double>(w->peak_live_bytes()));
      const auto solve_start = Clock::now();
      ImitationTask task;
      task.validation = validation;
      if (!validation) {
        std::vector<BaselinePlan> plans =
            ComputeBaselines(*w, env, o.experts, o.solver_seconds, [&](const std::string& p) {
              say(name + ": " + p + "'s plan");
            });
        for (BaselinePlan& b : plans) {
          b.plan.produced_by = b.policy;
          task.experts.push_back(std::move(b.plan));
        }
      }
      CorpusWorkloadScore score;
      score.validation = validation;
      score.workload = name;
      score.dram_fraction = fraction;
      score.dram_limit_bytes = env.dram_limit_bytes;
      score.baselines_seconds = Since(solve_start);
      result.workloads.push_back(score);
      envs.push_back(std::make_unique<PlacementEnv>(*w, env));
      // Past the budget, an env's slots are built for each of its episodes
      // (LearnFromCorpus) instead of held for the whole pretraining.
      const uint64_t slot_bytes = envs.back()->decision_slot_bytes();
      if (resident_slot_bytes + slot_bytes > o.resident_slot_bytes) {
        envs.back()->ReleaseDecisionSlots();
        ++result.tasks_taking_turns;
      } else {
        resident_slot_bytes += slot_bytes;
      }
      task.env = envs.back().get();
      task.name = name;
      tasks.push_back(std::move(task));
      task_workloads.push_back(w.get());
    }
    workloads.push_back(std::move(w));
  }

  {
    char held[160];
    std::snprintf(held, sizeof held, "decision slots: %.0f MB held throughout, %zu of %zu workloads build theirs for each rollout",
                  static_cast<double>(resident_slot_bytes) / 1e6, result.tasks_taking_turns, tasks.size());
    say(held);
  }
  // One imitation per seed, on the same tasks and experts: the network kept
  // is the seed whose best round scored best, and the portfolio holds every
  // seed's best rounds.
  const bool validated = !o.validation_workloads.empty();
  std::unique_ptr<PlacementAgent> agent;
  CorpusImitationResult im;
  double kept_score = 0;
  struct SeedRound {
    uint64_t seed;
    size_t rank;
    CorpusImitationResult::PortfolioRound round;
  };
  std::vector<SeedRound> portfolio;
  const auto imitation_start = Clock::now();
  for (int s = 0; s < o.seeds; ++s) {
    DqnConfig dqn = o.dqn;
    dqn.seed = o.dqn.seed + static_cast<uint64_t>(s);
    dqn.observation_size = kObservationSize;
    dqn.num_actions = 2;
    std::unique_ptr<PlacementAgent> seed_agent = MakeAgent("dqn", dqn.ToJson());
    std::mt19937_64 rng(dqn.seed ^ 0x1d7a7e5eedull);
    const std::string prefix = o.seeds > 1 ? "seed " + std::to_string(dqn.seed) + ", " : "";
    say(prefix + "imitating on " + std::to_string(tasks.size()) + " workloads");
    CorpusImitationResult seed_im =
        LearnFromCorpus(*seed_agent, tasks, o.imitation, rng,
                        [&](const ImitationRound& r, double mean_relative, double validation_relative) {
                          char line[280], shown[64] = "", room[96] = "";
                          if (validated)
                            std::snprintf(shown, sizeof shown, ", validation %.1f%%", 100 * validation_relative);
                          if (o.imitation.room_labels && !r.polish)
                            std::snprintf(room, sizeof room, ", %u DRAM labels clipped, %u kept tensors labelled slow for room",
                                          r.clipped_labels, r.room_relabelled);
                          else if (o.imitation.repeat_crowding_mistakes && !r.polish)
                            std::snprintf(room, sizeof room, ", %u DRAM labels clipped, %u mistakes that crowded them out repeated",
                                          r.clipped_labels, r.crowding_mistakes);
                          char kind[96];
                          if (r.weight_mean)
                            std::snprintf(kind, sizeof kind, "mean of the weights of rounds %d-%d (%llu snapshots), round",
                                          o.imitation.weight_mean_from_round, r.round - 1,
                                          static_cast<unsigned long long>(r.weights_folded));
                          else
                            std::snprintf(kind, sizeof kind, "%s", r.polish ? "polish chunk"
                                          : (r.round == 0 ? "after pre-training, round" : "DAgger round"));
                          std::snprintf(line, sizeof line, "%s %d: mean greedy plan %.1f%% of all-DRAM%s (%.0f s)%s", kind,
                                        r.round, 100 * mean_relative, shown, r.seconds, room);
                          say(prefix + line);
                        });
    for (size_t rank = 0; rank < seed_im.portfolio.size(); ++rank)
      portfolio.push_back({dqn.seed, rank, std::move(seed_im.portfolio[rank])});
    const CorpusImitationResult::PortfolioRound& best = portfolio[portfolio.size() - seed_im.portfolio.size()].round;
    const double score = validated ? best.validation_relative : best.mean_relative;
    if (!agent || score > kept_score) {
      agent = std::move(seed_agent);
      im = std::move(seed_im);
      kept_score = score;
      result.kept_seed = dqn.seed;
    }
    // The aggregate goes with the agent; the kept network needs none of it
    // while the next seed builds its own.
    if (o.seeds > 1) agent->SetDemonstrations({});
  }
  result.imitation_seconds = Since(imitation_start);
  result.seeds = o.seeds;
  result.best_round = im.best_round;
  result.updates = im.updates;
  for (size_t i = 0; i < tasks.size(); ++i) {
    CorpusWorkloadScore& s = result.workloads[i];
    const ImitationResult& t = im.tasks[i];
    s.expert = t.expert;
    s.expert_relative = t.expert_cost_ns > 0 ? MinCostNs(*task_workloads[i]) / t.expert_cost_ns : 0;
    s.greedy_relative = Relative(*task_workloads[i], t.best_greedy);
    s.greedy_oom = t.best_greedy.oom;
  }
  if (!o.out_dir.empty()) {
    MakeDirectories(o.out_dir + "/checkpoints");
    result.checkpoint_path = o.out_dir + "/checkpoints/dqn.ckpt";
    agent->SaveCheckpoint(result.checkpoint_path);
    if (!im.weight_mean.empty()) {
      result.weight_mean_checkpoint_path = o.out_dir + "/checkpoints/dqn-weight-mean.ckpt";
      agent->LoadWeights(im.weight_mean);
      agent->SyncTarget();
      agent->SaveCheckpoint(result.weight_mean_checkpoint_path);
    }
    if (portfolio.size() > 1) {
      result.portfolio_dir = o.out_dir + "/checkpoints/portfolio";
      MakeDirectories(result.portfolio_dir);
      for (const SeedRound& m : portfolio) {
        char name[96];
        if (o.seeds > 1)
          std::snprintf(name, sizeof name, "/seed-%llu-rank-%02zu-round-%03d.ckpt",
                        static_cast<unsigned long long>(m.seed), m.rank, m.round.round);
        else
          std::snprintf(name, sizeof name, "/rank-%02zu-round-%03d.ckpt", m.rank, m.round.round);
        agent->LoadWeights(m.round.weights);
        agent->SyncTarget();
        agent->SaveCheckpoint(result.portfolio_dir + name);
        result.portfolio.push_back({m.seed, m.round.round, m.round.mean_relative, m.round.validation_relative});
      }
    }
    WriteFileAtomically(o.out_dir + "/corpus.csv", Csv(result));
    WriteFileAtomically(o.out_dir + "/corpus.md", CorpusMarkdown(result));
  }
  result.seconds = Since(start);
  return result;
}

std::string CorpusMarkdown(const CorpusPretrainingResult& r) {
  std::ostringstream out;
  out << "| workload | DRAM limit (bytes) | expert | expert's plan | network's greedy plan | difference |\n"
      << "|---|---:|---|---:|---:|---:|\n";
  char line[512], greedy[32];
  for (const CorpusWorkloadScore& s : r.workloads) {
    std::snprintf(greedy, sizeof greedy, "%.1f%%", 100 * s.greedy_relative);
    if (s.validation)
      std::snprintf(line, sizeof line, "| %s | %llu | (validation: not learned from) | - | %s | - |\n",
                    s.workload.c_str(), static_cast<unsigned long long>(s.dram_limit_bytes),
                    s.greedy_oom ? "out of memory" : greedy);
    else
      std::snprintf(line, sizeof line, "| %s | %llu | %s | %.1f%% | %s | %+.1f |\n", s.workload.c_str(),
                    static_cast<unsigned long long>(s.dram_limit_bytes), s.expert.c_str(), 100 * s.expert_relative,
                    s.greedy_oom ? "out of memory" : greedy, 100 * (s.greedy_relative - s.expert_relative));
    out << line;
  }
  bool validated = false;
  for (const CorpusWorkloadScore& s : r.workloads) validated |= s.validation;
  out << "\nPercentages: all-DRAM iteration time / the plan's, cost model. The network is the corpus round with "
         "the best mean greedy plan"
      << (validated ? " on the validation workloads" : "") << " (round " << r.best_round << ", " << r.updates
      << " updates, " << static_cast<int>(r.imitation_seconds + 0.5) << " s of imitation"
      << (r.seeds > 1 ? ", seed " + std::to_string(r.kept_seed) + " of " + std::to_string(r.seeds) + " seeds" : "")
      << ").\n";
  if (!r.portfolio.empty()) {
    out << "\nPortfolio (" << r.portfolio_dir << ", best first; on a model none saw, the fastest member's greedy "
        << "plan is chosen at plan time: bench --portfolio, train --init):";
    char member[96];
    for (const CorpusPortfolioMember& m : r.portfolio) {
      std::snprintf(member, sizeof member, " %sround %d (%.1f%%%s)",
                    r.seeds > 1 ? ("seed " + std::to_string(m.seed) + " ").c_str() : "", m.round,
                    100 * (validated ? m.validation_relative : m.mean_relative), validated ? " validation" : "");
      out << member;
    }
    out << ".\n";
  }
  return out.str();
}

}  // namespace tensortier
