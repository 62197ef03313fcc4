// The policy's network in the lookup file (kSectionNetwork): the runtime
// decides by its forward pass, exactly as the agent does, on models the
// export never rolled out; the cells stay readable on their own; bad network
// sections are refused with a message, and the writer refuses what the
// format cannot hold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include <unistd.h>

#include "agents/dqn_agent.h"
#include "envs/synthetic.h"
#include "exporter/export.h"
#include "exporter/lookup_writer.h"
#include "exporter/quantiser.h"
#include "hostrt/lookup_format.h"
#include "hostrt/tensortier_lookup.h"
#include "hostrt/tensortier_lookup.hpp"
#include "tests/common/synthetic_family.h"
#include "tests/core/hand_graph.h"
#include "tests/export/export_test_util.h"

namespace tensortier {
namespace {

namespace lf = lookup_format;

std::vector<NetworkLayer> RandomNetwork(const std::vector<uint32_t>& widths, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0, 0.5f);
  std::vector<NetworkLayer> layers;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    NetworkLayer l;
    l.in = widths[i];
    l.out = widths[i + 1];
    for (uint32_t k = 0; k < l.in * l.out; ++k) l.weight.push_back(n(rng));
    for (uint32_t k = 0; k < l.out; ++k) l.bias.push_back(n(rng));
    layers.push_back(std::move(l));
  }
  return layers;
}

// The network's outputs in double, summed in plain order: an independent
// reference for the runtime's float forward pass.
std::vector<double> Reference(const std::vector<NetworkLayer>& layers, const float* x) {
  std::vector<double> in(x, x + layers[0].in);
  for (size_t l = 0; l < layers.size(); ++l) {
    std::vector<double> out(layers[l].out);
    for (uint32_t o = 0; o < layers[l].out; ++o) {
      double v = layers[l].bias[o];
      for (uint32_t i = 0; i < layers[l].in; ++i) v += static_cast<double>(layers[l].weight[o * layers[l].in + i]) * in[i];
      out[o] = l + 1 == layers.size() ? v : std::max(v, 0.0);
    }
    in = std::move(out);
  }
  return in;
}

class LookupNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = testing::HandGraph();
    w_.Finalize();
    contents_.primary_signature = w_.Signature();
    contents_.has_generalised = true;
    // A table that answers "slow" where the heat is negative: unlike the network.
    std::vector<LabelledObservation> samples(2000);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    for (LabelledObservation& s : samples) {
      for (float& x : s.observation) x = u(rng);
      s.action = s.observation[kObsHeat] < 0 ? 1 : 0;
      s.exact = true;
    }
    QuantiserOptions q;
    q.max_cells = 1024;
    q.fine_bins = 64;
    contents_.generalised = BuildGeneralisedTable(
        samples,
        [](const Observation* obs, size_t n, uint8_t* out) {
          for (size_t i = 0; i < n; ++i) out[i] = obs[i][kObsHeat] < 0 ? 1 : 0;
        },
        q, nullptr);
    contents_.generalised.constants = DefaultLookupConstants(1000);
    contents_.network = RandomNetwork({kObservationSize, 24, 16, 2}, 7);
  }

  // Opens `bytes`; returns the code, leaves the message in err_ and the
  // handle (or nullptr) in h_.
  int Open(const std::string& bytes) {
    tt_lookup_close(h_);
    h_ = nullptr;
    return tt_lookup_open_memory(bytes.data(), bytes.size(), "test.ttlookup", &h_, err_, sizeof err_);
  }
  void TearDown() override { tt_lookup_close(h_); }

  // The network section's offset in `bytes`.
  static size_t NetworkAt(const std::string& bytes) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    for (uint32_t i = 0; i < lf::LoadU32(b + lf::kOffSectionCount); ++i) {
      const unsigned char* e = b + lf::kHeaderBytes + i * lf::kDirEntryBytes;
      if (lf::LoadU32(e) == lf::kSectionNetwork) return static_cast<size_t>(lf::LoadU64(e + 8));
    }
    return 0;
  }
  static void Reseal(std::string& b) { testing::ResealLookup(b); }

  Workload w_;
  LookupContents contents_;
  tt_lookup* h_ = nullptr;
  char err_[512] = {};
};

TEST_F(LookupNetworkTest, DecidesByTheNetworksForwardPassAndTheTableStaysReadable) {
  ASSERT_EQ(Open(SerializeLookup(contents_)), TT_LOOKUP_OK) << err_;
  EXPECT_EQ(tt_lookup_network_layers(h_), 3u);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  int compared = 0, slow = 0, table_differs = 0;
  for (int i = 0; i < 5000; ++i) {
    Observation o;
    for (float& x : o) x = u(rng);
    const std::vector<double> q = Reference(contents_.network, o.data());
    const int table = contents_.generalised.ActionOfCell(contents_.generalised.CellOf(o.data()));
    EXPECT_EQ(tt_lookup_decide_table(h_, o.data(), o.size()), table);
    if (std::fabs(q[1] - q[0]) < 1e-4) continue;  // float and double may part at a near tie
    ++compared;
    const int decided = tt_lookup_decide(h_, o.data(), o.size());
    ASSERT_EQ(decided, q[1] > q[0] ? 1 : 0) << "observation " << i;
    slow += decided;
    table_differs += decided != table;
  }
  EXPECT_GT(compared, 4900);
  // Both actions occur, and the network is not the table: the answers above
  // are the network's, not the cells'.
  EXPECT_GT(slow, 200);
  EXPECT_LT(slow, compared - 200);
  EXPECT_GT(table_differs, 200);
  // Wrong sizes and NaN: an error, or the lowest action, never a crash.
  Observation o{};
  EXPECT_EQ(tt_lookup_decide(h_, o.data(), o.size() - 1), TT_LOOKUP_ERR_ARGUMENT);
  o.fill(std::nanf(""));
  const int nan_answer = tt_lookup_decide(h_, o.data(), o.size());
  EXPECT_TRUE(nan_answer == 0 || nan_answer == 1);
  // The inspection names it.
  const std::string path = ::testing::TempDir() + "/lookup_network_" + std::to_string(getpid()) + ".ttlookup";
  {
    const std::string bytes = SerializeLookup(contents_);
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  EXPECT_NE(DescribeLookupFile(path).find("network         3 layers"), std::string::npos) << DescribeLookupFile(path);
  std::remove(path.c_str());
}

TEST_F(LookupNetworkTest, WithoutANetworkTheCellsDecide) {
  contents_.network.clear();
  ASSERT_EQ(Open(SerializeLookup(contents_)), TT_LOOKUP_OK) << err_;
  EXPECT_EQ(tt_lookup_network_layers(h_), 0u);
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < 1000; ++i) {
    Observation o;
    for (float& x : o) x = u(rng);
    ASSERT_EQ(tt_lookup_decide(h_, o.data(), o.size()), tt_lookup_decide_table(h_, o.data(), o.size()));
  }
}

TEST_F(LookupNetworkTest, RefusesBadNetworkSectionsEvenWithValidChecksums) {
  const std::string good = SerializeLookup(contents_);
  const size_t net = NetworkAt(good);
  ASSERT_GT(net, 0u);
  auto refused = [&](std::string bad, const std::string& says) {
    Reseal(bad);
    EXPECT_EQ(Open(bad), TT_LOOKUP_ERR_MALFORMED) << says;
    EXPECT_NE(std::string(err_).find(says), std::string::npos) << err_;
  };
  std::string bad = good;
  bad[net] = static_cast<char>(kObservationSize + 1);  // input size
  refused(bad, "network section: input size");
  bad = good;
  bad[net + 4] = 0;  // no layer
  refused(bad, "network section: 0 layers");
  bad = good;
  bad[net + lf::kNetHeadBytes + 2 * lf::kNetLayerBytes + 4] = 3;  // the last layer's outputs
  refused(bad, "network section: layer 2 maps");
  bad = good;
  bad[net + lf::kNetHeadBytes + lf::kNetLayerBytes] = 23;  // layer 1's inputs differ from layer 0's outputs
  refused(bad, "network section: layer 1 maps");
  bad = good;
  const float nan = std::nanf("");
  std::memcpy(&bad[net + lf::kNetHeadBytes + 3 * lf::kNetLayerBytes + 8], &nan, 4);
  refused(bad, "a weight is not finite");
  // The flag without the section, and the section without the flag.
  bad = good;
  bad[lf::kOffFlags] = static_cast<char>(bad[lf::kOffFlags] & ~lf::kFlagHasNetwork);
  refused(bad, "flags do not match");
  contents_.network.clear();
  bad = SerializeLookup(contents_);
  bad[lf::kOffFlags] = static_cast<char>(bad[lf::kOffFlags] | lf::kFlagHasNetwork);
  refused(bad, "flags do not match");
}

TEST_F(LookupNetworkTest, TheWriterRefusesWhatTheFormatCannotHold) {
  LookupContents c = contents_;
  c.network.back().out = 3;
  EXPECT_THROW(SerializeLookup(c), std::invalid_argument);
  c = contents_;
  c.network.front().in = kObservationSize - 1;
  EXPECT_THROW(SerializeLookup(c), std::invalid_argument);
  c = contents_;
  c.network[1].weight[0] = std::nanf("");
  EXPECT_THROW(SerializeLookup(c), std::invalid_argument);
  c = contents_;
  c.network[0].bias.pop_back();
  EXPECT_THROW(SerializeLookup(c), std::invalid_argument);
  c = contents_;
  c.has_generalised = false;
  c.plans.push_back(MakePlanTableEntry(w_, PlacementPlan::Uniform(w_, Tier::kDram, 1000)));
  EXPECT_THROW(SerializeLookup(c), std::invalid_argument);  // a network needs the table
}

// What the network section is for: on a model the export never rolled out,
// the file decides as the agent does at every state of the agent's own
// episode, where the cells alone do not; --no-network leaves it out.
TEST(ExportNetwork, OnAModelTheExportNeverSawTheFileDecidesAsTheAgent) {
  const Workload trained = testing::SyntheticWithLayers(SyntheticShape::kVggLike, 6);
  const Workload unseen = testing::SyntheticWithLayers(SyntheticShape::kMobilenetLike, 8);
  DqnConfig dc = testing::ExportedDqn();
  dc.seed = 1;  // an untrained network whose answers on `unseen` are mixed (seed 11's are all "slow")
  DqnAgent agent(dc);  // untrained: any network, the file must carry it
  const uint64_t limit = trained.peak_live_bytes() / 4;
  PlacementPlan plan = PlacementPlan::Uniform(trained, Tier::kSlow, limit);
  const std::string path = ::testing::TempDir() + "/export_network_" + std::to_string(getpid()) + ".ttlookup";
  ExportOptions o = testing::QuickExport(path);
  o.coverage_workloads = {};
  const ExportReport report = ExportLookupFrom(agent, trained, plan, o);
  EXPECT_GT(report.network_section_bytes, 4u * (kObservationSize * 64 + 64 * 64 + 64 * 2));
  EXPECT_EQ(report.eval_agreements, report.eval_states);
  tensortier::lookup::Lookup lookup = tensortier::lookup::Lookup::Open(path);
  ASSERT_EQ(lookup.NetworkLayers(), 3u);
  EnvConfig env;
  env.dram_limit_bytes = unseen.peak_live_bytes() / 5;
  PlacementEnv episode(unseen, env);
  int states = 0, table_differs = 0, slow = 0;
  RunEpisode(episode, [&](const Observation& ob) {
    const int a = agent.Greedy(ob.data());
    ++states;
    slow += a;
    EXPECT_EQ(lookup.Decide(ob.data(), ob.size()), a) << "state " << states;
    table_differs += lookup.DecideTable(ob.data(), ob.size()) != a;
    return a;
  });
  EXPECT_GT(states, 50);
  // Mixed answers, and cells that would have answered otherwise at many of
  // them (151 of 537 here): the file's answers above are the network's.
  EXPECT_GT(slow, 20);
  EXPECT_LT(slow, states - 20);
  EXPECT_GT(table_differs, 20);
  std::printf("%d states of an unseen model, %d slow: the cells alone answer otherwise at %d\n", states, slow,
              table_differs);

  o.network = false;
  const ExportReport without = ExportLookupFrom(agent, trained, plan, o);
  EXPECT_EQ(without.network_section_bytes, 0u);
  EXPECT_LT(without.file_bytes, report.file_bytes);
  EXPECT_EQ(tensortier::lookup::Lookup::Open(path).NetworkLayers(), 0u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tensortier
