// `tensortier export`: turns what a learner run found into a lookup file
// that hosts apply with the host runtime (hostrt/, no LibTorch): the run's
// final plan as a plan table, and the trained network's greedy policy as a
// generalised lookup over quantised observations (docs/lookup-format.md).
// `tensortier inspect` on a lookup file prints DescribeLookupFile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "exporter/quantiser.h"

namespace tensortier {

struct ExportOptions {
  // Inputs: a learner run directory (checkpoints/dqn.ckpt, workload.ttwl,
  // final_plan.ttplan, config.toml; learner/run_report.h), and/or explicit
  // paths, which take precedence over the run directory's.
  std::string run_dir;
  std::string checkpoint_path;
  std::string workload;   // a .ttwl file or a workload spec (envs/workload_spec.h)
  std::string plan_path;  // .ttplan; its DRAM limit and migration mode define the plan table's key
  // Q-network hidden sizes; empty = the run's config.toml ("hidden"), else
  // read from the checkpoint's own shape.
  std::vector<int> hidden;
  std::string output_path;  // required; written atomically

  bool plan_table = true;
  bool generalised = true;

  // Greedy evaluation episodes, at these multiples of the plan's DRAM limit:
  // the states they visit get exact cells, and fidelity is measured on them.
  std::vector<double> eval_budget_factors = {1.0, 0.9, 1.1, 0.8, 1.25};
  // Exploratory episodes (epsilon-greedy, epsilon in [0, coverage_epsilon_max],
  // budgets in [0.5, 1.5] x the limit): their states, labelled with the greedy
  // action, place the bins and fill the cells no evaluation state reaches.
  int coverage_episodes = 48;
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
  std::string network_shape;  // "15-128-128-2"
  QuantiserStats quantiser;
  // Fidelity, measured through the host runtime on the written file.
  uint64_t eval_states = 0;      // states of the greedy evaluation episodes
  uint64_t eval_agreements = 0;  // where tt_lookup_decide equals the network's greedy action
  double agreement = 0;          // eval_agreements / eval_states
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

// What a lookup file holds, for `tensortier inspect`. Throws
// std::runtime_error with the runtime's message when the file is refused.
std::string DescribeLookupFile(const std::string& path);

// True when the file starts with the lookup magic (for inspect's dispatch).
bool IsLookupFile(const std::string& path);

}  // namespace tensortier
