// The settings of `train` and `learner`. Every training flag writes a field
// of the library's LearnerConfig (or of the DqnConfig, SacConfig and
// EnvConfig in it) and shows that field's default: the CLI has no defaults
// of its own, so `tensortier train` runs what a Learner built in code runs.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "learner/corpus_pretraining.h"
#include "learner/learner.h"

namespace tensortier {

struct TrainingFlags {
  TrainingFlags();

  LearnerConfig learner;  // bound field by field; metrics_address defaults to serving (below)
  // What to train on and where the run goes: not learner settings.
  std::string workload;   // spec or .ttwl; empty: profile --model (`train`)
  double dram_fraction = 0.2;
  uint64_t dram_limit_bytes = 0;  // overrides dram_fraction
  std::string out;
  std::string resume_dir;         // --resume RUN_DIR
  bool force = false;             // --force: write into a non-empty --out
  // The baselines the run learns from (their fastest plan is imitated first,
  // DQN only) and compares with; computed before training (learner/imitation.h).
  // heat+ilp (no network) is among them because its plan is at times the
  // fastest, and a faster expert makes a faster policy: paper-scale
  // MobileNetV2, async, greedy 58.4 -> 59.8%, the ILP it guides 61.4 -> 65.4%
  // (docs/results/learning.md).
  std::vector<std::string> demonstrations = {"autotm-sync", "sentinel", "heat+ilp"};
  // The comparison's baselines. The relaxation (no network, no ILP) is the
  // fastest of them on most cells of the Fig. 14 tables, so a verdict
  // without it would call the learned plan the fastest where it is not; in
  // async mode the default list adds AutoTM's asynchronous formulation
  // (ComparisonBaselines).
  std::vector<std::string> baselines = DefaultBaselines();
  static std::vector<std::string> DefaultBaselines() { return {"sentinel", "autotm-sync", "ca-lm", "relaxation"}; }
  double solver_seconds = 60;     // each ILP solve of those baselines
  // The final search also starts from the comparison's fastest baseline plan
  // (LearnerConfig::search_starts; --no-search-from-baseline: false).
  bool search_from_baseline = true;
};

// The baselines a run compares with: flags.baselines, and where that is the
// default list, in async mode AutoTM's asynchronous formulation too (the
// faster AutoTM there, within the same --solver-seconds).
std::vector<std::string> ComparisonBaselines(const TrainingFlags& flags, MigrationMode mode);

// The training flags on `cmd` (`train` or `learner`). Flags that DQN and SAC
// share (--hidden, --batch-size, --updates-per-episode, --learning-starts,
// --gamma, --seed, --device) set both agents' fields, whose defaults agree.
void AddTrainingOptions(CLI::App* cmd, TrainingFlags& flags);

// --decision-scope (docs/mdp.md): `train` and `learner` train in it; `bench`
// and `export` roll a network out in it, which must be the scope it was
// trained in.
CLI::Option* AddDecisionScopeOption(CLI::App* cmd, DecisionScope& scope);
// --mode (sync or async), bound to `mode`.
CLI::Option* AddMigrationModeOption(CLI::App* cmd, MigrationMode& mode, const std::string& help);

// `pretrain`'s flags, bound to the library's CorpusPretrainingOptions.
void AddPretrainOptions(CLI::App* cmd, CorpusPretrainingOptions& options);

// Puts the options of `cmd` named in `groups` (long names with "--") into
// those groups of --help, in that order; throws std::logic_error for a name
// `cmd` has no option of.
void PutInHelpGroups(CLI::App* cmd, const std::vector<std::pair<std::string, std::vector<std::string>>>& groups);

}  // namespace tensortier
