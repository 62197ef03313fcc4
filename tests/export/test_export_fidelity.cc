// Fidelity of an exported policy: a DQN trained in-process on a small
// synthetic workload is exported from a run directory; through the host
// runtime, the lookup must choose the network's greedy action on >= 99.5% of
// the states greedy evaluation episodes visit, and the plan from rolling the
// lookup out must cost within 1% of the network's plan on the cost model.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include <unistd.h>

#include "agents/local_training.h"
#include "agents/dqn_agent.h"
#include "replay/replay_buffer.h"
#include "common/files.h"
#include "envs/cost_model.h"
#include "envs/placement_env.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"
#include "hostrt/apply/plan_from_lookup.h"
#include "exporter/export.h"
#include "hostrt/lookup_format.h"
#include "hostrt/tensortier_lookup.hpp"
#include "tests/export/export_test_util.h"

namespace tensortier {
namespace {

namespace lf = lookup_format;
using tensortier::lookup::Lookup;

constexpr const char* kWorkloadSpec = "synthetic:resnet:4:1048576";

struct Trained {
  Workload w;
  EnvConfig env;
  std::unique_ptr<DqnAgent> agent;
  PlacementPlan greedy_plan;
  std::string run_dir;
  std::string lookup_path;
  ExportReport report;
  double train_seconds = 0;
};

Trained* g_trained = nullptr;

// The training loop of tests/agents/test_dqn_placement.cc, shortened.
void Train(Trained& t) {
  const auto start = std::chrono::steady_clock::now();
  t.agent = std::make_unique<DqnAgent>(testing::ExportedDqn());
  PlacementEnv env(t.w, t.env);
  ReplayBuffer replay(50000);
  std::mt19937_64 rng(5);
  LocalTraining schedule;
  schedule.episodes = 150;
  TrainLocally(*t.agent, env, replay, schedule, rng);
  t.greedy_plan = RunEpisode(env, [&](const Observation& o) { return t.agent->Act(o.data(), 0.0, rng); }).plan;
  t.greedy_plan.produced_by = "dqn-greedy";
  t.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class ExportFidelity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (g_trained) return;
    g_trained = new Trained;
    Trained& t = *g_trained;
    t.w = LoadWorkloadSpec(kWorkloadSpec);
    t.env.dram_limit_bytes = static_cast<uint64_t>(0.35 * t.w.peak_live_bytes());
    t.env.beta = 0.75;
    Train(t);
    // A run directory as the learner leaves it (learner/run_report.h).
    // Per process: ctest runs each test of this suite in its own process.
    t.run_dir = ::testing::TempDir() + "/export_fidelity_run_" + std::to_string(getpid());
    MakeDirectories(t.run_dir + "/checkpoints");
    WriteWorkloadFile(t.w, t.run_dir + "/workload.ttwl");
    WritePlanFile(t.greedy_plan, t.run_dir + "/final_plan.ttplan");
    t.agent->SaveCheckpoint(t.run_dir + "/checkpoints/dqn.ckpt");
    ExportOptions o;
    o.run_dir = t.run_dir;
    o.output_path = t.run_dir + "/policy.ttlookup";
    // The table's fidelity is what this suite measures: with the network in
    // the file a host would ask it instead (test_lookup_network.cc).
    o.network = false;
    t.report = ExportLookup(o);
    t.lookup_path = o.output_path;
    std::printf("trained in %.1f s\n%s", t.train_seconds, t.report.Summary().c_str());
  }

  static void TearDownTestSuite() {
    if (!g_trained) return;
    std::filesystem::remove_all(g_trained->run_dir);
    delete g_trained;
    g_trained = nullptr;
  }

  static Trained& T() { return *g_trained; }
  EnvConfig EnvAt(double factor) const {
    EnvConfig c = T().env;
    c.dram_limit_bytes = static_cast<uint64_t>(std::llround(factor * T().env.dram_limit_bytes));
    return c;
  }

  struct Agreement {
    size_t states = 0, agree = 0;
  };
  // The network's episodes at each budget `factor`: the states, and on how
  // many the lookup answers as it does. As ExportReport counts: where DRAM
  // is full, both answers clip to the slow tier.
  Agreement AgreementAt(const std::vector<double>& factors, Lookup& l, std::mt19937_64& rng) const {
    Agreement r;
    for (double factor : factors) {
      PlacementEnv env(T().w, EnvAt(factor));
      RunEpisode(env, [&](const Observation& o) {
        const int a = T().agent->Act(o.data(), 0.0, rng);
        ++r.states;
        r.agree += env.DramRequestWouldSpill() || l.Decide(o.data(), o.size()) == a;
        return a;
      });
    }
    return r;
  }
};

TEST_F(ExportFidelity, LookupAgreesWithTheNetworkOnEvaluationStates) {
  Lookup l = Lookup::OpenForModel(T().lookup_path, T().w.Signature());
  std::mt19937_64 rng(1);
  const auto [states, agree] = AgreementAt(ExportOptions().eval_budget_factors, l, rng);
  ASSERT_GT(states, 100u);
  const double agreement = static_cast<double>(agree) / states;
  EXPECT_GE(agreement, 0.995) << agree << " of " << states;
  EXPECT_EQ(states, T().report.eval_states);
  EXPECT_EQ(agree, T().report.eval_agreements);

  // Budgets the export never saw: generalisation, reported, not a target.
  const auto [held_states, held_agree] = AgreementAt({0.7, 0.95, 1.4}, l, rng);
  // Models the export never saw: the network's greedy path on other graphs.
  size_t other_states = 0, other_agree = 0;
  for (const char* spec : {"synthetic:resnet:6:1048576", "synthetic:vgg:4:1048576"}) {
    Workload other = LoadWorkloadSpec(spec);
    EnvConfig c = T().env;
    c.dram_limit_bytes = static_cast<uint64_t>(0.35 * other.peak_live_bytes());
    PlacementEnv env(other, c);
    RunEpisode(env, [&](const Observation& o) {
      const int a = T().agent->Act(o.data(), 0.0, rng);
      ++other_states;
      other_agree += env.DramRequestWouldSpill() || l.Decide(o.data(), o.size()) == a;
      return a;
    });
  }
  std::printf("agreement: %.2f%% of %zu evaluation states; %.2f%% of %zu states at unseen budgets; "
              "%.2f%% of %zu states on unseen models\n",
              100.0 * agreement, states, 100.0 * held_agree / held_states, held_states,
              100.0 * other_agree / other_states, other_states);
}

TEST_F(ExportFidelity, LookupPlanCostsWithinOnePercentOfTheNetworkPlan) {
  Lookup l = Lookup::Open(T().lookup_path);
  std::mt19937_64 rng(1);
  PlacementEnv env(T().w, T().env);
  EpisodeSummary net = RunEpisode(env, [&](const Observation& o) { return T().agent->Act(o.data(), 0.0, rng); });
  EpisodeSummary lut = RunEpisode(env, [&](const Observation& o) {
    const int a = l.Decide(o.data(), o.size());
    EXPECT_TRUE(a == 0 || a == 1);
    return a;
  });
  const double net_ns = EvaluatePlan(T().w, net.plan).total_ns;
  const double lut_ns = EvaluatePlan(T().w, lut.plan).total_ns;
  EXPECT_FALSE(lut.cost.oom);
  EXPECT_LE(std::abs(lut_ns - net_ns), 0.01 * net_ns) << "network " << net_ns << " ns, lookup " << lut_ns << " ns";
  EXPECT_DOUBLE_EQ(T().report.network_runtime_ns, net_ns);
  EXPECT_DOUBLE_EQ(T().report.lookup_runtime_ns, lut_ns);
  std::printf("cost model: network plan %.4f ms, lookup plan %.4f ms, all-DRAM %.4f ms\n", net_ns / 1e6,
              lut_ns / 1e6, MinCostNs(T().w) / 1e6);
}

TEST_F(ExportFidelity, PlanTableIsTheRunsFinalPlan) {
  Lookup l = Lookup::Open(T().lookup_path);
  const PlacementPlan& p = T().greedy_plan;
  auto plan = l.FindPlan(T().w.Signature(), T().w.batch_size, T().env.dram_limit_bytes);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan.info().num_tensors, T().w.num_tensors());
  for (uint32_t t = 0; t < T().w.num_tensors(); ++t)
    EXPECT_EQ(static_cast<int>(plan.InitialTier(t)), static_cast<int>(p.initial_tiers[t])) << "tensor " << t;
  // Rebuild the plan from the table and compare whole.
  PlacementPlan rebuilt = PlacementPlan::Uniform(T().w, Tier::kDram, T().env.dram_limit_bytes);
  rebuilt.mode = p.mode;
  rebuilt.workload_signature = p.workload_signature;
  rebuilt.produced_by = p.produced_by;  // not in the table
  for (uint32_t t = 0; t < T().w.num_tensors(); ++t) rebuilt.initial_tiers[t] = static_cast<Tier>(plan.InitialTier(t));
  for (int32_t k = -1; k < static_cast<int32_t>(T().w.num_kernels()); ++k)
    for (const tt_lookup_migration& m : plan.MigrationsAfter(k))
      rebuilt.migrations.push_back({m.after_kernel, m.tensor, static_cast<Tier>(m.to_tier)});
  EXPECT_EQ(rebuilt, p);
  EXPECT_FALSE(l.FindPlan(T().w.Signature(), T().w.batch_size, T().env.dram_limit_bytes + 1));
}

TEST_F(ExportFidelity, HostsGetThePlanTableOrTheGeneralisedRollout) {
  Lookup l = Lookup::Open(T().lookup_path);
  // The trained model at its budget: the plan table, exactly.
  AppliedPlan table = PlanFromLookup(l.handle(), T().w, T().env.dram_limit_bytes);
  EXPECT_TRUE(table.from_plan_table);
  EXPECT_EQ(table.decisions, 0u);
  PlacementPlan expected = T().greedy_plan;
  expected.produced_by = table.plan.produced_by;
  EXPECT_EQ(table.plan, expected);
  // Another budget, and another model: the generalised lookup, rolled out.
  const uint64_t other_budget = T().env.dram_limit_bytes * 9 / 10;
  AppliedPlan rolled = PlanFromLookup(l.handle(), T().w, other_budget);
  EXPECT_FALSE(rolled.from_plan_table);
  EXPECT_GT(rolled.decisions, 0u);
  EXPECT_EQ(rolled.plan.dram_limit_bytes, other_budget);
  EXPECT_NO_THROW(rolled.plan.Validate(T().w));
  std::mt19937_64 rng(1);
  EnvConfig c = T().env;
  c.dram_limit_bytes = other_budget;
  PlacementEnv env(T().w, c);
  const double net_ns =
      RunEpisode(env, [&](const Observation& o) { return T().agent->Act(o.data(), 0.0, rng); }).cost.total_ns;
  EXPECT_LE(std::abs(EvaluatePlan(T().w, rolled.plan).total_ns - net_ns), 0.01 * net_ns);
  Workload other = LoadWorkloadSpec("synthetic:vgg:4:1048576");
  AppliedPlan unknown = PlanFromLookup(l.handle(), other, other.peak_live_bytes() / 3);
  EXPECT_FALSE(unknown.from_plan_table);
  EXPECT_NO_THROW(unknown.plan.Validate(other));
}

TEST_F(ExportFidelity, GeneralisedPartFitsIn64KiB) {
  EXPECT_LE(T().report.generalised_section_bytes, 64u * 1024u);
  EXPECT_EQ(T().report.policy, "dqn " + std::to_string(kObservationSize) + "-64-64-2");
  Lookup l = Lookup::Open(T().lookup_path);
  tt_lookup_generalised_info g;
  ASSERT_EQ(tt_lookup_generalised_info_get(l.handle(), &g), TT_LOOKUP_OK);
  EXPECT_EQ(g.section_bytes, T().report.generalised_section_bytes);
  EXPECT_LE(g.cell_count, 1u << 18);
  std::printf("file %llu bytes: plan section %llu, generalised section %llu (%u cells, %u features)\n",
              static_cast<unsigned long long>(T().report.file_bytes),
              static_cast<unsigned long long>(T().report.plan_section_bytes),
              static_cast<unsigned long long>(g.section_bytes), g.cell_count, g.feature_count);
}

TEST_F(ExportFidelity, BadCopiesOfTheExportedFileAreRefused) {
  const std::string good = ReadFile(T().lookup_path);
  const std::string path = T().run_dir + "/bad.ttlookup";
  auto refused = [&](const std::string& bytes, int code, const std::string& words, uint64_t* signature = nullptr) {
    WriteFileAtomically(path, bytes);
    Lookup l;
    std::string why;
    bool opened;
    if (signature) {
      try {
        l = Lookup::OpenForModel(path, *signature);
        opened = true;
      } catch (const tensortier::lookup::LookupError& e) {
        opened = false;
        why = e.what();
        EXPECT_EQ(e.code(), code) << why;
      }
    } else {
      opened = Lookup::TryOpen(path, &l, &why);
    }
    EXPECT_FALSE(opened);
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  refused(good.substr(0, good.size() * 2 / 3), TT_LOOKUP_ERR_TRUNCATED, "truncated");
  std::string corrupt = good;
  corrupt[good.size() - 4096] ^= 0x04;  // in the bitmap
  refused(corrupt, TT_LOOKUP_ERR_CHECKSUM, "corrupt payload");
  std::string version = good;
  version[lf::kOffVersion] = 7;
  refused(version, TT_LOOKUP_ERR_VERSION, "wrong format version 7");
  uint64_t other = T().w.Signature() + 1;
  refused(good, TT_LOOKUP_ERR_SIGNATURE, "wrong model signature", &other);
  // ... and the good file still opens.
  Lookup l;
  std::string why;
  WriteFileAtomically(path, good);
  EXPECT_TRUE(Lookup::TryOpen(path, &l, &why)) << why;
}

TEST_F(ExportFidelity, DescribeSummarisesTheExport) {
  const std::string d = DescribeLookupFile(T().lookup_path);
  EXPECT_NE(d.find("plan tables     1"), std::string::npos) << d;
  EXPECT_NE(d.find("generalised     " + std::to_string(kObservationSize) + " observation floats"), std::string::npos) << d;
  EXPECT_NE(d.find("policy: dqn " + std::to_string(kObservationSize) + "-64-64-2"), std::string::npos) << d;
  std::printf("%s", d.c_str());
}

TEST_F(ExportFidelity, NetworkShapeIsReadFromTheCheckpointWithoutConfig) {
  ExportOptions o;
  o.checkpoint_path = T().run_dir + "/checkpoints/dqn.ckpt";
  o.workload = T().run_dir + "/workload.ttwl";
  o.plan_path = T().run_dir + "/final_plan.ttplan";
  o.output_path = T().run_dir + "/small.ttlookup";
  o.eval_budget_factors = {1.0};
  o.coverage_episodes = 4;
  o.quantiser.max_cells = 1024;
  ExportReport r = ExportLookup(o);
  EXPECT_EQ(r.policy, "dqn " + std::to_string(kObservationSize) + "-64-64-2");
  EXPECT_LE(r.generalised_section_bytes, 16u * 1024u);
  o.hidden = {32};
  EXPECT_THROW(ExportLookup(o), std::runtime_error);  // a shape given explicitly is not second-guessed
}

}  // namespace
}  // namespace tensortier
