// The lookup file and the host runtime, without a network: plan tables round
// trip, the generalised table answers as the quantiser built it, and every
// kind of bad file is refused with a message naming the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include "exporter/export.h"
#include "exporter/lookup_writer.h"
#include "exporter/quantiser.h"
#include "hostrt/lookup_format.h"
#include "hostrt/tensortier_lookup.h"
#include "hostrt/tensortier_lookup.hpp"
#include "tests/core/hand_graph.h"
#include "tests/export/export_test_util.h"

namespace tensortier {
namespace {

namespace lf = lookup_format;

// A plan for the hand graph with a migration each way and one before kernel 0.
PlacementPlan HandPlan(const Workload& w) {
  PlacementPlan p = PlacementPlan::Uniform(w, Tier::kDram, 1000);
  p.initial_tiers[1] = Tier::kSlow;
  p.migrations = {{0, 0, Tier::kSlow}, {1, 0, Tier::kDram}, {0, 3, Tier::kSlow}};
  p.Normalize();
  p.workload_signature = w.Signature();
  return p;
}

// A policy with structure on a few features: slow when the tensor is large
// for the limit and cold, or when DRAM is nearly used up.
int RulePolicy(const Observation& o) {
  if (o[kObsDramLeft] < 0.1f) return 1;
  return o[kObsSizeOfLimit] > 0.4f && o[kObsHeat] < 0.0f ? 1 : 0;
}

std::vector<LabelledObservation> RuleSamples(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1), s(-1, 1);
  std::vector<LabelledObservation> out(n);
  for (size_t i = 0; i < n; ++i) {
    Observation& o = out[i].observation;
    for (float& x : o) x = u(rng);
    o[kObsHeat] = s(rng);
    o[kObsSlowLeft] = 1.0f;  // constant: must be dropped
    o[kObsTier] = static_cast<float>(rng() % 3) * 0.5f;
    out[i].action = static_cast<uint8_t>(RulePolicy(o));
    out[i].exact = i % 4 == 0;
  }
  return out;
}

void RulePolicyBatch(const Observation* obs, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(RulePolicy(obs[i]));
}

class LookupFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = testing::HandGraph();
    w_.batch_size = 8;
    w_.Finalize();
    plan_ = HandPlan(w_);
    LookupContents c;
    c.primary_signature = w_.Signature();
    c.created_unix_seconds = 1700000000;
    c.plans.push_back(MakePlanTableEntry(w_, plan_));
    c.has_generalised = true;
    QuantiserOptions q;
    q.max_cells = 4096;
    q.fine_bins = 256;
    samples_ = RuleSamples(4000, 5);
    c.generalised = BuildGeneralisedTable(samples_, RulePolicyBatch, q, &stats_);
    c.generalised.constants = DefaultLookupConstants(1000);
    c.info = "producer: test\n";
    table_ = c.generalised;
    bytes_ = SerializeLookup(c);
    // Unique per test and process: ctest may run these in parallel.
    path_ = ::testing::TempDir() + "/lookup_file_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".ttlookup";
    Write(bytes_);
  }

  void TearDown() override { std::remove(path_.c_str()); }

  void Write(const std::string& bytes) {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // Opens path_; returns the code and leaves the message in err_.
  int Open(uint64_t* signature = nullptr) {
    tt_lookup* h = nullptr;
    int rc = signature ? tt_lookup_open_for_model(path_.c_str(), *signature, &h, err_, sizeof err_)
                       : tt_lookup_open(path_.c_str(), &h, err_, sizeof err_);
    if (rc == TT_LOOKUP_OK) {
      EXPECT_NE(h, nullptr);
    } else {
      EXPECT_EQ(h, nullptr);
    }
    tt_lookup_close(h);
    return rc;
  }

  // Recomputes both checksums, so that a test can reach the structural checks.
  static void Reseal(std::string& b) { testing::ResealLookup(b); }

  Workload w_;
  PlacementPlan plan_;
  std::vector<LabelledObservation> samples_;
  QuantiserStats stats_;
  GeneralisedTable table_;
  std::string bytes_;
  std::string path_;
  char err_[512] = {};
};

TEST_F(LookupFileTest, PlanTableRoundTrips) {
  tensortier::lookup::Lookup l = tensortier::lookup::Lookup::Open(path_);
  EXPECT_EQ(l.primary_signature(), w_.Signature());
  EXPECT_EQ(l.plan_count(), 1u);
  auto p = l.FindPlan(w_.Signature(), 8, 1000);
  ASSERT_TRUE(p);
  EXPECT_EQ(p.info().num_tensors, 4u);
  EXPECT_EQ(p.info().num_kernels, 3u);
  EXPECT_EQ(p.info().num_migrations, 3u);
  for (uint32_t t = 0; t < 4; ++t)
    EXPECT_EQ(static_cast<int>(p.InitialTier(t)), static_cast<int>(plan_.initial_tiers[t])) << t;
  auto after0 = p.MigrationsAfter(0);
  ASSERT_EQ(after0.size(), 2u);
  EXPECT_EQ(after0[0].tensor, 0u);
  EXPECT_EQ(after0[0].to_tier, static_cast<uint32_t>(TT_LOOKUP_TIER_SLOW));
  EXPECT_EQ(after0[1].tensor, 3u);
  auto after1 = p.MigrationsAfter(1);
  ASSERT_EQ(after1.size(), 1u);
  EXPECT_EQ(after1[0].to_tier, static_cast<uint32_t>(TT_LOOKUP_TIER_DRAM));
  EXPECT_TRUE(p.MigrationsAfter(-1).empty());
  EXPECT_TRUE(p.MigrationsAfter(2).empty());

  // The C API by key; other keys are not found.
  EXPECT_EQ(tt_lookup_plan_initial_tier(l.handle(), w_.Signature(), 8, 1000, 1), TT_LOOKUP_TIER_SLOW);
  EXPECT_EQ(tt_lookup_plan_initial_tier(l.handle(), w_.Signature(), 8, 1001, 1), TT_LOOKUP_ERR_NOT_FOUND);
  EXPECT_EQ(tt_lookup_plan_initial_tier(l.handle(), w_.Signature(), 16, 1000, 1), TT_LOOKUP_ERR_NOT_FOUND);
  EXPECT_EQ(tt_lookup_plan_initial_tier(l.handle(), w_.Signature() ^ 1, 8, 1000, 1), TT_LOOKUP_ERR_NOT_FOUND);
  EXPECT_EQ(tt_lookup_plan_initial_tier(l.handle(), w_.Signature(), 8, 1000, 4), TT_LOOKUP_ERR_ARGUMENT);
  tt_lookup_migration m[1];
  EXPECT_EQ(tt_lookup_plan_migrations(l.handle(), w_.Signature(), 8, 1000, 0, m, 1), 2);  // count beyond capacity
  EXPECT_EQ(m[0].tensor, 0u);
  EXPECT_EQ(tt_lookup_plan_migrations(l.handle(), w_.Signature(), 8, 1000, 3, m, 1), TT_LOOKUP_ERR_ARGUMENT);
}

TEST_F(LookupFileTest, ManyPlansAreFoundByKey) {
  LookupContents c;
  c.primary_signature = 42;
  for (uint32_t i = 0; i < 50; ++i) {
    PlanTableEntry e = MakePlanTableEntry(w_, plan_);
    e.model_signature = 1000 + i % 7;
    e.batch_size = i / 7;
    e.dram_budget_bytes = 4096 * (i % 3);
    if (i >= 21) e.dram_budget_bytes += i;  // keep keys distinct
    e.initial_tiers[0] = i % 2 ? Tier::kSlow : Tier::kDram;
    c.plans.push_back(e);
  }
  Write(SerializeLookup(c));
  tensortier::lookup::Lookup l = tensortier::lookup::Lookup::Open(path_);
  ASSERT_EQ(l.plan_count(), 50u);
  EXPECT_FALSE(l.has_generalised());
  for (const PlanTableEntry& e : c.plans) {
    auto p = l.FindPlan(e.model_signature, e.batch_size, e.dram_budget_bytes);
    ASSERT_TRUE(p);
    EXPECT_EQ(static_cast<int>(p.InitialTier(0)), static_cast<int>(e.initial_tiers[0]));
  }
  EXPECT_EQ(l.Decide(samples_[0].observation.data(), kObservationSize), TT_LOOKUP_ERR_NOT_FOUND);
  c.plans.push_back(c.plans.front());
  EXPECT_THROW(SerializeLookup(c), std::invalid_argument);
}

TEST_F(LookupFileTest, GeneralisedLookupAnswersAsBuilt) {
  tensortier::lookup::Lookup l = tensortier::lookup::Lookup::Open(path_);
  ASSERT_TRUE(l.has_generalised());
  EXPECT_EQ(l.observation_size(), static_cast<size_t>(kObservationSize));
  // The constant feature is left out; the rule's features are in the key.
  EXPECT_EQ(stats_.dropped_features, std::vector<int>{kObsSlowLeft});
  bool has_heat = false, has_size = false, has_dram = false;
  for (const auto& fb : stats_.bins_by_feature) {
    has_heat |= fb.first == kObsHeat;
    has_size |= fb.first == kObsSizeOfLimit;
    has_dram |= fb.first == kObsDramLeft;
  }
  EXPECT_TRUE(has_heat && has_size && has_dram);
  // The rule needs about one edge on each of its three features: the search
  // stops when no edge helps instead of spending the 4096 cells it may.
  EXPECT_LT(stats_.cells, 4096u);
  // Same cell and action as the table the writer had.
  size_t agree = 0;
  for (const LabelledObservation& s : samples_) {
    const float* f = s.observation.data();
    ASSERT_EQ(tt_lookup_cell(l.handle(), f, kObservationSize), table_.CellOf(f));
    const int a = l.Decide(f, kObservationSize);
    ASSERT_EQ(a, table_.ActionOfCell(table_.CellOf(f)));
    agree += a == s.action;
  }
  // Only samples that share a fine bin (1/256 of a range) with the rule's
  // threshold can be misanswered.
  EXPECT_GE(static_cast<double>(agree) / samples_.size(), 0.995);
  EXPECT_EQ(stats_.exact_disagreements + stats_.coverage_disagreements, samples_.size() - agree);
  // Fresh observations from the same distribution: the edges sit between
  // sample values, so only values in those gaps can be misanswered.
  size_t fresh_agree = 0;
  auto fresh = RuleSamples(4000, 99);
  for (const LabelledObservation& s : fresh) fresh_agree += l.Decide(s.observation.data(), kObservationSize) == s.action;
  EXPECT_GT(static_cast<double>(fresh_agree) / fresh.size(), 0.99);
  // Wrong sizes and NaNs do not crash.
  EXPECT_EQ(l.Decide(samples_[0].observation.data(), kObservationSize - 1), TT_LOOKUP_ERR_ARGUMENT);
  Observation nan = samples_[0].observation;
  nan[kObsHeat] = std::nanf("");
  const int a = l.Decide(nan.data(), kObservationSize);
  EXPECT_TRUE(a == 0 || a == 1);
  // Constants and info come back.
  EXPECT_EQ(tt_lookup_constant(l.handle(), lf::kConstPendingCap), 4.0);
  EXPECT_EQ(tt_lookup_constant(l.handle(), lf::kConstTrainedDramLimit), 1000.0);
  EXPECT_TRUE(std::isnan(tt_lookup_constant(l.handle(), 1000)));
  EXPECT_EQ(l.info_text(), "producer: test\n");
}

TEST_F(LookupFileTest, ExactStatesKeepTheirActionsWhenTheyCollide) {
  // Two exact states that differ only in one feature, with different
  // actions, among many coverage states that disagree with them.
  std::vector<LabelledObservation> samples = RuleSamples(2000, 7);
  for (auto& s : samples) s.exact = false;
  LabelledObservation a, b;
  a.observation.fill(0.5f);
  b.observation = a.observation;
  b.observation[kObsNextUse] = 0.5005f;  // two fine bins of 4096 over about [0, 1] apart
  a.action = 0;
  b.action = 1;
  a.exact = b.exact = true;
  samples.push_back(a);
  samples.push_back(b);
  QuantiserOptions q;
  q.max_cells = 1u << 14;
  q.fine_bins = 4096;
  QuantiserStats stats;
  GeneralisedTable g = BuildGeneralisedTable(samples, RulePolicyBatch, q, &stats);
  EXPECT_EQ(stats.exact_disagreements, 0u);
  EXPECT_EQ(g.ActionOfCell(g.CellOf(a.observation.data())), 0);
  EXPECT_EQ(g.ActionOfCell(g.CellOf(b.observation.data())), 1);
}

TEST_F(LookupFileTest, DontCareStatesNeitherPlaceBinsNorVote) {
  // Every sample again, with the other action and marked dont_care (states
  // where DRAM is full: either action places the tensor alike). Duplicates
  // leave the ranges and the cell centres' medians as they were, so the
  // table must be the one built without them, and none of them disagrees.
  std::vector<LabelledObservation> samples = samples_;
  for (const LabelledObservation& s : samples_) {
    LabelledObservation flipped = s;
    flipped.action = static_cast<uint8_t>(1 - s.action);
    flipped.dont_care = true;
    samples.push_back(flipped);
  }
  QuantiserOptions q;
  q.max_cells = 4096;
  q.fine_bins = 256;
  QuantiserStats stats;
  const GeneralisedTable g = BuildGeneralisedTable(samples, RulePolicyBatch, q, &stats);
  EXPECT_EQ(stats.exact_states, 2 * stats_.exact_states);
  EXPECT_EQ(stats.coverage_states, 2 * stats_.coverage_states);
  EXPECT_EQ(stats.exact_dont_care, stats_.exact_states);
  EXPECT_EQ(stats.coverage_dont_care, stats_.coverage_states);
  EXPECT_EQ(stats.exact_disagreements, stats_.exact_disagreements);
  EXPECT_EQ(stats.coverage_disagreements, stats_.coverage_disagreements);
  EXPECT_EQ(stats.bins_by_feature, stats_.bins_by_feature);
  ASSERT_EQ(g.features.size(), table_.features.size());
  for (size_t i = 0; i < g.features.size(); ++i) {
    EXPECT_EQ(g.features[i].observation_index, table_.features[i].observation_index);
    EXPECT_EQ(g.features[i].lo, table_.features[i].lo);
    EXPECT_EQ(g.features[i].scale, table_.features[i].scale);
    EXPECT_EQ(g.features[i].remap, table_.features[i].remap);
  }
  EXPECT_EQ(g.bitmap, table_.bitmap);

  // Only dont_care states: nothing to fit, so no edge, and the one cell is
  // the policy's answer at the centre.
  std::vector<LabelledObservation> moot(samples.begin() + static_cast<std::ptrdiff_t>(samples_.size()), samples.end());
  const GeneralisedTable none = BuildGeneralisedTable(moot, RulePolicyBatch, q, &stats);
  EXPECT_EQ(none.cell_count, 1u);
  EXPECT_EQ(stats.cells_from_centres, 1u);
  EXPECT_EQ(stats.exact_disagreements + stats.coverage_disagreements, 0u);
}

TEST_F(LookupFileTest, DescribeNamesWhatTheFileHolds) {
  const std::string d = DescribeLookupFile(path_);
  EXPECT_NE(d.find("plan tables     1"), std::string::npos) << d;
  EXPECT_NE(d.find(" cells ("), std::string::npos) << d;
  EXPECT_NE(d.find("not in the cell number: tier slow_left"), std::string::npos) << d;
  EXPECT_NE(d.find("producer: test"), std::string::npos) << d;
  EXPECT_TRUE(IsLookupFile(path_));
}

// ---- bad files: each refused with its own code and a message that says why.

TEST_F(LookupFileTest, RefusesMissingFile) {
  const std::string missing = path_ + ".missing";
  tt_lookup* h = nullptr;
  EXPECT_EQ(tt_lookup_open(missing.c_str(), &h, err_, sizeof err_), TT_LOOKUP_ERR_IO);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(err_).find("cannot open"), std::string::npos) << err_;
}

TEST_F(LookupFileTest, RefusesTruncatedFile) {
  for (size_t keep : {bytes_.size() - 1, bytes_.size() / 2, size_t{100}, size_t{40}, size_t{3}, size_t{0}}) {
    Write(bytes_.substr(0, keep));
    EXPECT_EQ(Open(), TT_LOOKUP_ERR_TRUNCATED) << "kept " << keep << ": " << err_;
    EXPECT_NE(std::string(err_).find("truncated"), std::string::npos) << err_;
    EXPECT_NE(std::string(err_).find(path_), std::string::npos) << err_;
  }
}

TEST_F(LookupFileTest, RefusesCorruptPayloadByte) {
  // Every region of the payload: directory, plans, features, remap, bitmap.
  for (size_t at : {size_t{70}, size_t{130}, bytes_.size() / 3, bytes_.size() / 2, bytes_.size() - 9}) {
    std::string b = bytes_;
    b[at] = static_cast<char>(b[at] ^ 0x10);
    Write(b);
    EXPECT_EQ(Open(), TT_LOOKUP_ERR_CHECKSUM) << "byte " << at << ": " << err_;
    EXPECT_NE(std::string(err_).find("corrupt payload"), std::string::npos) << err_;
  }
}

TEST_F(LookupFileTest, RefusesCorruptHeaderByte) {
  std::string b = bytes_;
  b[lf::kOffPrimarySignature + 2] ^= 0x01;
  Write(b);
  EXPECT_EQ(Open(), TT_LOOKUP_ERR_CHECKSUM) << err_;
  EXPECT_NE(std::string(err_).find("corrupt header"), std::string::npos) << err_;
}

TEST_F(LookupFileTest, RefusesWrongVersion) {
  for (uint32_t version : {0u, 2u, 0x01000000u}) {
    std::string b = bytes_;
    std::memcpy(&b[lf::kOffVersion], &version, 4);
    Reseal(b);  // a well-formed file of another version
    Write(b);
    EXPECT_EQ(Open(), TT_LOOKUP_ERR_VERSION) << err_;
    EXPECT_NE(std::string(err_).find("wrong format version " + std::to_string(version)), std::string::npos) << err_;
  }
}

TEST_F(LookupFileTest, RefusesWrongSignature) {
  uint64_t mine = w_.Signature();
  EXPECT_EQ(Open(&mine), TT_LOOKUP_OK) << err_;
  uint64_t other = mine ^ 0xdeadbeef;
  EXPECT_EQ(Open(&other), TT_LOOKUP_ERR_SIGNATURE);
  EXPECT_NE(std::string(err_).find("wrong model signature"), std::string::npos) << err_;
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(other));
  EXPECT_NE(std::string(err_).find(hex), std::string::npos) << err_;
  // Through the C++ wrapper: an exception with the code, or TryOpen's false.
  try {
    tensortier::lookup::Lookup::OpenForModel(path_, other);
    ADD_FAILURE() << "opened";
  } catch (const tensortier::lookup::LookupError& e) {
    EXPECT_EQ(e.code(), TT_LOOKUP_ERR_SIGNATURE);
  }
}

TEST_F(LookupFileTest, RefusesOtherFiles) {
  Write("TTPLAN01 and then a plan");
  EXPECT_EQ(Open(), TT_LOOKUP_ERR_BAD_MAGIC);
  EXPECT_NE(std::string(err_).find("not a TensorTier lookup file"), std::string::npos) << err_;
  Write(bytes_ + "extra");
  EXPECT_EQ(Open(), TT_LOOKUP_ERR_MALFORMED);
  EXPECT_NE(std::string(err_).find("unexpected bytes"), std::string::npos) << err_;
  tensortier::lookup::Lookup l;
  std::string why;
  EXPECT_FALSE(tensortier::lookup::Lookup::TryOpen(path_, &l, &why));
  EXPECT_FALSE(l.is_open());
  EXPECT_NE(why.find("unexpected bytes"), std::string::npos) << why;
  EXPECT_THROW(DescribeLookupFile(path_), std::runtime_error);
}

TEST_F(LookupFileTest, RefusesInconsistentStructureEvenWithValidChecksums) {
  // Find the generalised section and break its first feature's stride.
  const unsigned char* b = reinterpret_cast<const unsigned char*>(bytes_.data());
  const uint32_t sections = lf::LoadU32(b + lf::kOffSectionCount);
  size_t gen = 0, plans = 0;
  for (uint32_t i = 0; i < sections; ++i) {
    const unsigned char* e = b + lf::kHeaderBytes + i * lf::kDirEntryBytes;
    if (lf::LoadU32(e) == lf::kSectionGeneralised) gen = lf::LoadU64(e + 8);
    if (lf::LoadU32(e) == lf::kSectionPlans) plans = lf::LoadU64(e + 8);
  }
  ASSERT_GT(gen, 0u);
  ASSERT_GT(plans, 0u);
  std::string bad = bytes_;
  bad[gen + lf::kGenHeadBytes + 12] = 3;  // stride of the first feature must be 1
  Reseal(bad);
  Write(bad);
  EXPECT_EQ(Open(), TT_LOOKUP_ERR_MALFORMED);
  EXPECT_NE(std::string(err_).find("generalised section: feature 0"), std::string::npos) << err_;

  bad = bytes_;
  bad[plans + lf::kPlansHeadBytes + 20] = 100;  // tensor count beyond the plan's data
  Reseal(bad);
  Write(bad);
  EXPECT_EQ(Open(), TT_LOOKUP_ERR_MALFORMED);
  EXPECT_NE(std::string(err_).find("plan 0"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tensortier
