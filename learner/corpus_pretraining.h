// `tensortier pretrain`: one DQN network for many models (issue #15,
// criterion 5). Each workload of a corpus gets its baselines' plans; the
// network imitates the fastest of them on every workload at once
// (LearnFromCorpus, learner/imitation.h) and is saved as an agent
// checkpoint that `train --init`, `bench --checkpoint` and `export` take, so
// that a model the network never saw is placed with no training, or
// fine-tuned from it. The run directory:
//   checkpoints/dqn.ckpt   the network (the corpus round with the best mean greedy plan)
//   checkpoints/portfolio/ the best rounds' networks (ImitationConfig::portfolio_size), rank 0 the same as dqn.ckpt
//   corpus.csv, corpus.md  per workload: its expert, the expert's plan and the network's greedy plan
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "learner/imitation.h"

namespace tensortier {

struct CorpusPretrainingOptions {
  std::vector<std::string> workloads;   // workload files or synthetic:SHAPE[:LAYERS] (envs/workload_spec.h)
  // Not learned from (no baseline plan is computed for them): the network's
  // greedy plans on them choose the round kept (ImitationTask::validation).
  // Empty: the corpus's own mean chooses it.
  std::vector<std::string> validation_workloads;
  // Each workload enters the corpus once per fraction, its DRAM limit that
  // fraction x its peak live bytes: a network that saw one pressure learns
  // that pressure's plans (docs/results/learning.md, session thirty-one).
  std::vector<double> dram_fractions = {0.2};
  EnvConfig env;                        // mode, decision scope, beta; the limit comes from dram_fractions
  DqnConfig dqn;
  // A corpus rolls every polish chunk out on every workload, and the longer
  // polish was measured on single models only: 30,000 steps here.
  ImitationConfig imitation = [] {
    ImitationConfig c;
    c.polish_updates = 30000;
    return c;
  }();
  // The plans imitated: the fastest of these on each workload (train's
  // --demonstrations default).
  std::vector<std::string> experts = {"autotm-sync", "sentinel"};
  double solver_seconds = 60;           // each ILP solve
  // The environments' decision slots held at once (PlacementEnv::
  // decision_slot_bytes). The tasks past it build theirs for each of their
  // episodes and free them after: memory bounded by the budget and the
  // largest task, but such a task's rollouts take several times as long
  // (docs/results/learning.md, session thirty-four).
  uint64_t resident_slot_bytes = uint64_t{2} << 30;
  std::string out_dir;
  // Imitations from this many seeds (dqn.seed, +1, ...) on the same tasks and
  // experts, each the whole of LearnFromCorpus: the network kept is the best
  // seed's best round, and the portfolio holds every seed's best rounds. The
  // best member differs from model to model and seed to seed: four seeds'
  // portfolios together cleared Sentinel on five unseen models where one
  // seed's cleared three to five (docs/results/learning.md, session
  // thirty-eight). Each seed adds one imitation's time.
  int seeds = 1;
};

struct CorpusWorkloadScore {
  std::string workload;                 // with "@FRACTION" when the corpus has more than one fraction
  double dram_fraction = 0;
  uint64_t dram_limit_bytes = 0;
  bool validation = false;              // a validation workload: no expert, not learned from
  std::string expert;                   // the plan imitated
  double expert_relative = 0;           // all-DRAM time / the expert's plan's (cost model, as the MDP replays it)
  double greedy_relative = 0;           // all-DRAM time / the network's greedy plan's
  bool greedy_oom = false;
  double baselines_seconds = 0;         // to compute the experts' plans
};

// A round the portfolio kept (ImitationConfig::portfolio_size), written as
// checkpoints/portfolio/rank-NN-round-RRR.ckpt (seed-S-rank-NN-round-RRR.ckpt
// with several seeds).
struct CorpusPortfolioMember {
  uint64_t seed = 0;
  int round = 0;
  double mean_relative = 0;        // the corpus's mean greedy plan, all-DRAM time / the plan's
  double validation_relative = 0;  // the validation workloads' (0: none)
};

struct CorpusPretrainingResult {
  std::vector<CorpusWorkloadScore> workloads;
  std::string checkpoint_path;
  // The mean of the rounds' weights (--weight-mean-from-round), kept beside
  // the best round's network whichever won: checkpoints/dqn-weight-mean.ckpt.
  std::string weight_mean_checkpoint_path;
  // The portfolio's directory (empty when it holds one network: the
  // checkpoint above) and its members, best first; rank 0 is the checkpoint.
  std::string portfolio_dir;
  std::vector<CorpusPortfolioMember> portfolio;
  int best_round = 0;                   // of the kept seed
  uint64_t kept_seed = 0;
  int seeds = 1;
  uint64_t updates = 0;
  double imitation_seconds = 0;
  double seconds = 0;
  size_t tasks_taking_turns = 0;        // past resident_slot_bytes (workloads' envs, validation ones included)
};

// Throws std::invalid_argument for no workload, an unknown expert, no DRAM
// fraction or one outside (0, 1], and what loading a workload throws.
// `progress` gets a line per step (a solve can take a minute).
CorpusPretrainingResult PretrainOnCorpus(const CorpusPretrainingOptions& options,
                                         const std::function<void(const std::string&)>& progress = {});

std::string CorpusMarkdown(const CorpusPretrainingResult& result);

}  // namespace tensortier
