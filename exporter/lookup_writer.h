// Builds the bytes of a lookup file (docs/lookup-format.md) from plan tables
// and a quantised policy. No LibTorch here: the writer is shared by the
// exporter, the tests and tools that make lookup files by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

// One (model signature, batch size, DRAM budget) -> plan entry.
struct PlanTableEntry {
  uint64_t model_signature = 0;
  uint32_t batch_size = 0;
  uint64_t dram_budget_bytes = 0;
  MigrationMode mode = MigrationMode::kSync;
  uint32_t num_kernels = 0;
  std::vector<Tier> initial_tiers;    // by tensor
  std::vector<Migration> migrations;  // ordered by after_kernel
};

// Validates `plan` against `w` (std::invalid_argument on a mismatch) and keys
// it by w's signature, batch size and the plan's DRAM limit.
PlanTableEntry MakePlanTableEntry(const Workload& w, const PlacementPlan& plan);

// One observation feature that takes part in the cell number: its fine bin
// is clamp(int((x - lo) * scale), 0, remap.size() - 1), its bin remap[fine]
// (< bins), and it adds bin * stride to the cell.
struct QuantisedFeature {
  uint16_t observation_index = 0;
  uint16_t bins = 0;
  uint32_t stride = 0;  // product of the earlier features' bins
  float lo = 0;
  float scale = 1;
  std::vector<uint8_t> remap;  // fine_bins entries
};

struct GeneralisedTable {
  uint32_t observation_size = 0;
  uint32_t fine_bins = 0;
  uint32_t cell_count = 1;                 // product of the features' bins
  std::vector<QuantisedFeature> features;
  std::vector<double> constants;           // lookup_format::ConstantIndex order
  std::vector<uint64_t> bitmap;            // cell_count bits, rounded up to words; 1 = slow

  // The cell an observation falls in, computed exactly as the runtime does.
  uint32_t CellOf(const float* observation) const;
  int ActionOfCell(uint32_t cell) const { return static_cast<int>((bitmap[cell >> 6] >> (cell & 63)) & 1u); }
  void SetAction(uint32_t cell, int action);
  uint64_t SectionBytes() const;
};

// One fully connected layer of the policy's network: weight [out][in]
// row-major, bias [out]; ReLU after every layer but the last.
struct NetworkLayer {
  uint32_t in = 0, out = 0;
  std::vector<float> weight;
  std::vector<float> bias;
};

struct LookupContents {
  uint64_t primary_signature = 0;  // the workload the policy was trained on
  uint64_t created_unix_seconds = 0;
  std::vector<PlanTableEntry> plans;
  bool has_generalised = false;
  GeneralisedTable generalised;
  // The network the table quantises (needs has_generalised): a host asks it
  // for models without a plan table, where the table's cells, placed and
  // filled from the models the export rolled out, answer less like it.
  // Empty: none.
  std::vector<NetworkLayer> network;
  std::string info;  // "key: value" lines for people
};

// The file's bytes. Throws std::invalid_argument when the contents cannot be
// represented (duplicate plan keys, bits beyond the format's limits, ...).
std::string SerializeLookup(const LookupContents& contents);

// The Algorithm 1 / observation constants of this build (heat.h, docs/mdp.md),
// in lookup_format::ConstantIndex order.
std::vector<double> DefaultLookupConstants(uint64_t trained_dram_limit_bytes);

// Short names of the observation features, by ObservationIndex.
const char* ObservationFeatureName(int index);

}  // namespace tensortier
