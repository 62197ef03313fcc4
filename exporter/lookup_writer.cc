#include "exporter/lookup_writer.h"

#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <tuple>

#include "envs/heat.h"
#include "envs/placement_env.h"
#include "hostrt/lookup_format.h"

namespace tensortier {
namespace lf = lookup_format;
namespace {

// Little-endian appends; the runtime reads these with lookup_format's loaders.
class Bytes {
 public:
  void U8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) {
    U8(static_cast<uint8_t>(v));
    U8(static_cast<uint8_t>(v >> 8));
  }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void F32(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    U32(u);
  }
  void F64(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    U64(u);
  }
  void Raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  void Pad8() {
    while (s_.size() % 8) U8(0);
  }
  void PatchU32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) s_[at + i] = static_cast<char>(v >> (8 * i));
  }
  void PatchU64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) s_[at + i] = static_cast<char>(v >> (8 * i));
  }
  size_t size() const { return s_.size(); }
  std::string& str() { return s_; }

 private:
  std::string s_;
};

std::string PlansSection(const std::vector<PlanTableEntry>& plans) {
  std::set<std::tuple<uint64_t, uint32_t, uint64_t>> keys;
  Bytes b;
  b.U32(static_cast<uint32_t>(plans.size()));
  b.U32(0);
  const size_t entries = b.size();
  for (size_t i = 0; i < plans.size(); ++i)
    for (size_t j = 0; j < lf::kPlanEntryBytes; ++j) b.U8(0);
  for (size_t i = 0; i < plans.size(); ++i) {
    const PlanTableEntry& p = plans[i];
    if (!keys.insert({p.model_signature, p.batch_size, p.dram_budget_bytes}).second)
      throw std::invalid_argument("lookup file: two plans for the same model, batch and DRAM budget");
    if (p.initial_tiers.size() >= (1u << 31)) throw std::invalid_argument("lookup file: too many tensors");
    b.Pad8();
    const size_t data = b.size();
    std::vector<uint64_t> tiers((p.initial_tiers.size() + 63) / 64, 0);
    for (size_t t = 0; t < p.initial_tiers.size(); ++t)
      if (p.initial_tiers[t] == Tier::kSlow) tiers[t / 64] |= uint64_t{1} << (t % 64);
    for (uint64_t w : tiers) b.U64(w);
    // Migration index: start of the migrations after kernel k at [k + 1].
    std::vector<uint32_t> index(p.num_kernels + 2, 0);
    for (const Migration& m : p.migrations) {
      if (m.after_kernel < -1 || m.after_kernel >= static_cast<int32_t>(p.num_kernels) ||
          m.tensor >= p.initial_tiers.size())
        throw std::invalid_argument("lookup file: a migration is out of range of its plan");
      ++index[static_cast<size_t>(m.after_kernel + 2)];
    }
    for (size_t j = 1; j < index.size(); ++j) index[j] += index[j - 1];
    for (uint32_t v : index) b.U32(v);
    b.Pad8();
    int32_t prev = -1;
    for (const Migration& m : p.migrations) {
      if (m.after_kernel < prev) throw std::invalid_argument("lookup file: migrations are not ordered by kernel");
      prev = m.after_kernel;
      b.U32(static_cast<uint32_t>(m.after_kernel));
      b.U32(m.tensor | (m.to == Tier::kSlow ? lf::kMigrationTierBit : 0u));
    }
    const size_t e = entries + i * lf::kPlanEntryBytes;
    b.PatchU64(e, p.model_signature);
    b.PatchU64(e + 8, p.dram_budget_bytes);
    b.PatchU32(e + 16, p.batch_size);
    b.PatchU32(e + 20, static_cast<uint32_t>(p.initial_tiers.size()));
    b.PatchU32(e + 24, p.num_kernels);
    b.PatchU32(e + 28, static_cast<uint32_t>(p.migrations.size()));
    b.PatchU32(e + 32, static_cast<uint32_t>(p.mode));
    b.PatchU64(e + 40, data);
  }
  b.Pad8();
  return b.str();
}

std::string GeneralisedSection(const GeneralisedTable& g) {
  if (g.observation_size == 0 || g.fine_bins == 0 || g.fine_bins > lf::kMaxFineBins || g.cell_count == 0 ||
      g.cell_count > lf::kMaxCells)
    throw std::invalid_argument("lookup file: generalised table sizes out of range");
  uint64_t product = 1;
  for (const QuantisedFeature& f : g.features) {
    if (f.remap.size() != g.fine_bins || f.bins < 2 || f.bins > lf::kMaxBinsPerFeature || f.stride != product ||
        f.observation_index >= g.observation_size)
      throw std::invalid_argument("lookup file: a quantised feature is inconsistent");
    for (uint8_t b : f.remap)
      if (b >= f.bins) throw std::invalid_argument("lookup file: a remap entry is beyond its feature's bins");
    product *= f.bins;
  }
  if (product != g.cell_count || g.bitmap.size() != (g.cell_count + 63) / 64)
    throw std::invalid_argument("lookup file: the features' bins or the bitmap do not match the cell count");
  Bytes b;
  b.U32(g.observation_size);
  b.U32(static_cast<uint32_t>(g.features.size()));
  b.U32(g.cell_count);
  b.U32(g.fine_bins);
  b.U32(static_cast<uint32_t>(g.constants.size()));
  b.U32(0);
  for (const QuantisedFeature& f : g.features) {
    b.U16(f.observation_index);
    b.U16(f.bins);
    b.F32(f.lo);
    b.F32(f.scale);
    b.U32(f.stride);
  }
  for (double c : g.constants) b.F64(c);
  for (const QuantisedFeature& f : g.features) b.Raw(f.remap.data(), f.remap.size());
  b.Pad8();
  for (uint64_t w : g.bitmap) b.U64(w);
  return b.str();
}

}  // namespace

PlanTableEntry MakePlanTableEntry(const Workload& w, const PlacementPlan& plan) {
  plan.Validate(w);
  PlanTableEntry e;
  e.model_signature = w.Signature();
  e.batch_size = w.batch_size;
  e.dram_budget_bytes = plan.dram_limit_bytes;
  e.mode = plan.mode;
  e.num_kernels = static_cast<uint32_t>(w.num_kernels());
  e.initial_tiers = plan.initial_tiers;
  e.migrations = plan.migrations;
  return e;
}

uint32_t GeneralisedTable::CellOf(const float* observation) const {
  const float top = static_cast<float>(fine_bins - 1);
  uint32_t cell = 0;
  for (const QuantisedFeature& f : features)
    cell += static_cast<uint32_t>(f.remap[lf::FineIndex(observation[f.observation_index], f.lo, f.scale, top)]) *
            f.stride;
  return cell;
}

void GeneralisedTable::SetAction(uint32_t cell, int action) {
  const uint64_t bit = uint64_t{1} << (cell & 63);
  if (action) bitmap[cell >> 6] |= bit;
  else bitmap[cell >> 6] &= ~bit;
}

uint64_t GeneralisedTable::SectionBytes() const {
  return lf::kGenHeadBytes + features.size() * lf::kFeatureEntryBytes + constants.size() * 8 +
         (features.size() * static_cast<uint64_t>(fine_bins) + 7) / 8 * 8 + (cell_count + 63) / 64 * 8;
}

std::string NetworkSection(const std::vector<NetworkLayer>& layers, uint32_t observation_size) {
  if (layers.empty() || layers.size() > lf::kMaxNetLayers)
    throw std::invalid_argument("lookup file: a network of " + std::to_string(layers.size()) + " layers (1 to " +
                                std::to_string(lf::kMaxNetLayers) + ")");
  for (size_t l = 0; l < layers.size(); ++l) {
    const NetworkLayer& n = layers[l];
    const uint32_t expected_in = l == 0 ? observation_size : layers[l - 1].out;
    if (n.in != expected_in || n.out == 0 || n.out > lf::kMaxNetWidth || (l + 1 == layers.size() && n.out != 2) ||
        n.weight.size() != static_cast<size_t>(n.in) * n.out || n.bias.size() != n.out)
      throw std::invalid_argument("lookup file: network layer " + std::to_string(l) + " has the wrong shape");
    for (float v : n.weight)
      if (!std::isfinite(v)) throw std::invalid_argument("lookup file: a non-finite network weight");
    for (float v : n.bias)
      if (!std::isfinite(v)) throw std::invalid_argument("lookup file: a non-finite network bias");
  }
  Bytes b;
  b.U32(observation_size);
  b.U32(static_cast<uint32_t>(layers.size()));
  b.U32(0);
  b.U32(0);
  for (const NetworkLayer& n : layers) {
    b.U32(n.in);
    b.U32(n.out);
  }
  for (const NetworkLayer& n : layers) {
    for (float v : n.weight) b.F32(v);
    for (float v : n.bias) b.F32(v);
  }
  return b.str();
}

std::string SerializeLookup(const LookupContents& c) {
  struct Section {
    uint32_t kind;
    std::string bytes;
  };
  std::vector<Section> sections;
  if (!c.plans.empty()) sections.push_back({lf::kSectionPlans, PlansSection(c.plans)});
  if (c.has_generalised) sections.push_back({lf::kSectionGeneralised, GeneralisedSection(c.generalised)});
  if (!c.network.empty()) {
    if (!c.has_generalised) throw std::invalid_argument("lookup file: a network needs the generalised table");
    sections.push_back({lf::kSectionNetwork, NetworkSection(c.network, c.generalised.observation_size)});
  }
  if (!c.info.empty()) sections.push_back({lf::kSectionInfo, c.info});
  if (c.plans.empty() && !c.has_generalised)
    throw std::invalid_argument("lookup file: nothing to write (no plans and no generalised table)");

  Bytes b;
  for (size_t i = 0; i < lf::kHeaderBytes; ++i) b.U8(0);
  const size_t dir = b.size();
  for (size_t i = 0; i < sections.size() * lf::kDirEntryBytes; ++i) b.U8(0);
  for (size_t i = 0; i < sections.size(); ++i) {
    b.Pad8();
    const size_t offset = b.size();
    b.Raw(sections[i].bytes.data(), sections[i].bytes.size());
    const size_t e = dir + i * lf::kDirEntryBytes;
    b.PatchU32(e, sections[i].kind);
    b.PatchU64(e + 8, offset);
    b.PatchU64(e + 16, sections[i].bytes.size());
  }
  b.Pad8();
  std::string& s = b.str();
  std::memcpy(&s[lf::kOffMagic], lf::kMagic, sizeof lf::kMagic);
  b.PatchU32(lf::kOffVersion, lf::kFormatVersion);
  b.PatchU32(lf::kOffHeaderBytes, lf::kHeaderBytes);
  b.PatchU64(lf::kOffFileBytes, s.size());
  b.PatchU32(lf::kOffSectionCount, static_cast<uint32_t>(sections.size()));
  b.PatchU64(lf::kOffPrimarySignature, c.primary_signature);
  b.PatchU32(lf::kOffObservationSize, c.has_generalised ? c.generalised.observation_size : 0);
  b.PatchU32(lf::kOffFlags, (c.plans.empty() ? 0u : lf::kFlagHasPlans) |
                                (c.has_generalised ? lf::kFlagHasGeneralised : 0u) |
                                (c.network.empty() ? 0u : lf::kFlagHasNetwork));
  b.PatchU64(lf::kOffCreatedUnix, c.created_unix_seconds);
  b.PatchU32(lf::kOffPayloadCrc, lf::Crc32(s.data() + lf::kHeaderBytes, s.size() - lf::kHeaderBytes));
  b.PatchU32(lf::kOffHeaderCrc, lf::Crc32(s.data(), lf::kOffHeaderCrc));
  return s;
}

std::vector<double> DefaultLookupConstants(uint64_t trained_dram_limit_bytes) {
  const HeatWeights start;
  std::vector<double> c(lf::kConstCount, 0.0);
  c[lf::kConstHeatWr] = start.w_r;
  c[lf::kConstHeatWf] = start.w_f;
  c[lf::kConstHeatWs] = start.w_s;
  c[lf::kConstHeatWl] = start.w_l;
  c[lf::kConstHeatThreshold] = start.threshold;
  // These mirror envs/heat.cc's AdjustHeats and envs/placement_env.cc's
  // MakeObservation, which do not export them as named constants: keep them
  // in step when those change (and bump the policy, not the file format).
  c[lf::kConstHeatBandLow] = 0.9;
  c[lf::kConstHeatBandHigh] = 1.1;
  c[lf::kConstHeatStep] = 1.02;
  c[lf::kConstHeatSizeSwitch] = 2.5;
  c[lf::kConstHeatMaxIterations] = 2000;
  c[lf::kConstPendingCap] = 4.0;
  c[lf::kConstNewTensorTier] = 0.5;
  c[lf::kConstTrainedDramLimit] = static_cast<double>(trained_dram_limit_bytes);
  return c;
}

const char* ObservationFeatureName(int index) {
  static const char* const kNames[kObservationSize] = {
      "tier",           "heat",          "dram_left",   "slow_left",     "size_share",
      "accessed_now",   "input_share",   "penalty_share", "next_use",    "position",
      "copy_cost",      "pending_bytes", "size_of_limit", "next_use_penalty", "resident_pending",
      "gap_peak",       "gap_length",    "gap_held",      "start_tier"};
  return index >= 0 && index < kObservationSize && kNames[index] ? kNames[index] : "?";
}

}  // namespace tensortier
