// `tensortier export`: turns what a learner run found into a lookup file
// that hosts apply with the host runtime (hostrt/, no LibTorch): the run's
// final plan as a plan table, and the trained network's greedy policy as a
// generalised lookup over quantised observations (docs/lookup-format.md).
// `tensortier inspect` on a lookup file prints DescribeLookupFile.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agents/dqn_agent.h"
#include "agents/sac_agent.h"
#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "exporter/quantiser.h"

namespace tensortier {

struct ExportOptions {
  // Inputs: a learner run directory (checkpoints/dqn.ckpt or sac.ckpt,
  // workload.ttwl, final_plan.ttplan; learner/run_report.h), and/or explicit
  // paths, which take precedence over the run directory's.
  std::string run_dir;
  std::string checkpoint_path;
  // The agent family of the checkpoint: "dqn", "sac", or "" = decided by the
  // checkpoint: with --checkpoint, its file name ("sac*" is SAC, anything
  // else DQN); in a run directory, whichever of checkpoints/dqn.ckpt and
  // checkpoints/sac.ckpt exists (the newer one when both do). In a run
  // directory the family's fastest evaluated policy
  // (checkpoints/<family>-fastest.ckpt, where the final plan's search
  // started) is exported when the run wrote one, else the final network.
  std::string agent;
  std::string workload;   // a .ttwl file or a workload spec (envs/workload_spec.h)
  std::string plan_path;  // .ttplan; its DRAM limit and migration mode define the plan table's key
  // With no plan and no run directory (a network of `pretrain`, which has no
  // plan of its own): the generalised lookup alone, rolled out on `workload`
  // at dram_fraction x its peak live bytes in this mode. 0: a plan is needed.
  // Then checkpoint_path may be a portfolio (a directory of checkpoints,
  // pretrain's checkpoints/portfolio): the member whose greedy plan is the
  // fastest on `workload` there is exported (agents/policy_portfolio.h).
  double dram_fraction = 0;
  MigrationMode mode = MigrationMode::kSync;
  // DQN Q-network hidden sizes; empty = the checkpoint's own (it records
  // them). SAC checkpoints always use their own.
  std::vector<int> hidden;
  std::string output_path;  // written atomically; default RUN_DIR/policy.ttlookup

  bool plan_table = true;
  bool generalised = true;
  // The policy's network beside the generalised table (kSectionNetwork), so
  // that a host decides as the network does on any model: the table's
  // cells are placed and filled from the models the export rolls out, and on
  // others answer less like it (a corpus network on six TorchScript models
  // it never saw: 5-21 points of all-DRAM below it; docs/results/learning.md,
  // session thirty-one). About 4 bytes a weight (19-128-128-2: 76 KiB).
  bool network = true;

  // Greedy evaluation episodes, at these multiples of the plan's DRAM limit:
  // the states they visit get exact cells, and fidelity is measured on them.
  std::vector<double> eval_budget_factors = {1.0, 0.9, 1.1, 0.8, 1.25};
  // Exploratory episodes at budgets in [0.5, 1.5] x the limit, half greedy
  // (budgets evenly spread), half epsilon-greedy (epsilon uniform in [0,
  // coverage_epsilon_max], random budgets): their states, labelled with the
  // greedy action, place the bins and fill the cells no evaluation state
  // reaches.
  int coverage_episodes = 96;
  // Other models to explore the same way, so that the cells models without a
  // plan reach hold the network's answers rather than guesses from the
  // centres. Workload specs (envs/workload_spec.h).
  std::vector<std::string> coverage_workloads = {"synthetic:vgg:6:2097152", "synthetic:resnet:8:2097152",
                                                 "synthetic:mobilenet:6:2097152"};
  int coverage_episodes_per_workload = 24;
  // Exploration stops at about this many states (the trained model gets two
  // shares, each coverage model one): on large models every episode is long,
  // and each state costs a forward pass. Budgets stay spread over the range.
  uint64_t max_exploration_states = 1000000;
  double coverage_epsilon_max = 0.3;
  QuantiserOptions quantiser;
  // Scope and OOM handling of those episodes (as in training); the DRAM
  // limit and the migration mode come from the plan.
  EnvConfig env;
  int threads = 0;  // network evaluations in parallel; 0 = all cores
  uint64_t seed = 1;
};

struct ExportReport {
  std::string output_path;
  uint64_t file_bytes = 0;
  uint64_t plan_section_bytes = 0;
  uint64_t generalised_section_bytes = 0;
  uint64_t model_signature = 0;
  uint32_t batch_size = 0;
  uint64_t dram_budget_bytes = 0;
  uint32_t plan_tensors = 0;
  uint32_t plan_migrations = 0;
  std::string policy;  // "dqn 15-128-128-2", "sac 15-128-128-2" (the actor)
  // From a portfolio: the member exported, and of how many.
  std::string portfolio_member;
  size_t portfolio_members = 0;
  QuantiserStats quantiser;
  // Fidelity, measured through the host runtime on the written file.
  uint64_t eval_states = 0;      // states of the greedy evaluation episodes
  // Of those, the states where the DRAM request would be clipped to the slow
  // tier (PlacementEnv::DramRequestWouldSpill): both actions place the
  // tensor alike there, so the lookup's answer cannot change the plan.
  uint64_t eval_dont_care = 0;
  // States where tt_lookup_decide equals the network's greedy action, plus
  // the eval_dont_care states (which agree whatever either answers).
  uint64_t eval_agreements = 0;
  double agreement = 0;          // eval_agreements / eval_states
  // With the network in the file (ExportOptions::network) tt_lookup_decide
  // is its forward pass; the table alone (tt_lookup_decide_table) agrees
  // on these evaluation states and plans this fast:
  uint64_t network_section_bytes = 0;  // 0: the file carries no network
  uint64_t table_agreements = 0;
  double table_runtime_ns = 0;
  // Cost-model runtimes at the plan's DRAM limit (0 when not generalised).
  double network_runtime_ns = 0;     // the network's greedy plan
  double lookup_runtime_ns = 0;      // the plan from rolling out tt_lookup_decide
  double plan_table_runtime_ns = 0;  // the exported plan (the run's final plan)
  double seconds = 0;

  std::string Summary() const;
};

// Throws std::invalid_argument / std::runtime_error naming what is wrong.
ExportReport ExportLookup(const ExportOptions& options);

// The same from objects in memory (options' input paths are ignored).
ExportReport ExportLookupFrom(const DqnAgent& agent, const Workload& w, const PlacementPlan& plan,
                              const ExportOptions& options);

// A SAC agent's greedy action: its actor's most probable action.
ExportReport ExportLookupFrom(const SacAgent& agent, const Workload& w, const PlacementPlan& plan,
                              const ExportOptions& options);

// Any greedy policy over observations (kObservationSize floats -> 0 DRAM /
// 1 slow), e.g. another agent family's evaluation action. It is called from
// several threads at once. `policy_name` is recorded in the file's info.
using GreedyPolicy = std::function<int(const float* observation)>;
// `network`: the layers behind `greedy` (DenseLayer), written beside the
// table when options.network; empty writes none. Its argmax must be what
// `greedy` answers: the report's agreement, measured through the runtime on
// the evaluation states, says how often it does.
ExportReport ExportLookupFromPolicy(const GreedyPolicy& greedy, const std::string& policy_name, const Workload& w,
                                    const PlacementPlan& plan, const ExportOptions& options,
                                    const std::vector<DenseLayer>& network = {});

// What a lookup file holds, for `tensortier inspect`. Throws
// std::runtime_error with the runtime's message when the file is refused.
std::string DescribeLookupFile(const std::string& path);

// True when the file starts with the lookup magic (for inspect's dispatch).
bool IsLookupFile(const std::string& path);

}  // namespace tensortier
