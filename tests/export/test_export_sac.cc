// `tensortier export` of a SAC run: the run directory holds
// checkpoints/sac.ckpt (the learner names checkpoints after the agent), and
// the exported lookup answers with the actor's greedy action.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <unistd.h>

#include "agents/sac_agent.h"
#include "common/files.h"
#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"
#include "exporter/export.h"
#include "hostrt/tensortier_lookup.hpp"

namespace tensortier {
namespace {

SacConfig SmallSac() {
  SacConfig c;
  c.observation_size = kObservationSize;
  c.hidden = {32, 32};
  c.device = "cpu";
  c.seed = 3;
  return c;
}

ExportOptions Quick(const std::string& run_dir) {
  ExportOptions o;
  o.run_dir = run_dir;
  o.coverage_episodes = 8;
  o.coverage_workloads = {};
  o.eval_budget_factors = {1.0, 0.8};
  o.network = false;  // the table's fidelity to the actor (the network's: test_lookup_network.cc)
  return o;
}

TEST(ExportSac, ExportsTheActorsGreedyActionFromARunDirectory) {
  const Workload w = LoadWorkloadSpec("synthetic:resnet:4:1048576");
  const PlacementPlan plan = FirstTouchPlan(w, static_cast<uint64_t>(0.35 * w.peak_live_bytes()));
  const std::string dir = ::testing::TempDir() + "/export_sac_" + std::to_string(getpid());
  MakeDirectories(dir + "/checkpoints");
  WriteWorkloadFile(w, dir + "/workload.ttwl");
  WritePlanFile(plan, dir + "/final_plan.ttplan");
  SacAgent agent(SmallSac());
  agent.SaveCheckpoint(dir + "/checkpoints/sac.ckpt");

  const ExportReport report = ExportLookup(Quick(dir));
  EXPECT_EQ(report.policy, "sac " + std::to_string(kObservationSize) + "-32-32-2");
  EXPECT_EQ(report.output_path, dir + "/policy.ttlookup");

  // The report's agreement is the lookup against the actor's greedy action.
  tensortier::lookup::Lookup l = tensortier::lookup::Lookup::OpenForModel(report.output_path, w.Signature());
  std::mt19937_64 rng(1);
  size_t states = 0, agree = 0;
  for (double factor : {1.0, 0.8}) {
    EnvConfig c;
    c.dram_limit_bytes = static_cast<uint64_t>(std::llround(factor * plan.dram_limit_bytes));
    c.mode = plan.mode;
    PlacementEnv env(w, c);
    RunEpisode(env, [&](const Observation& o) {
      const int a = agent.Act(o.data(), SacActMode::kGreedy, rng);
      ++states;
      // As ExportReport counts: where DRAM is full, both answers clip to the slow tier.
      agree += env.DramRequestWouldSpill() || l.Decide(o.data(), o.size()) == a;
      return a;
    });
  }
  EXPECT_EQ(states, report.eval_states);
  EXPECT_EQ(agree, report.eval_agreements);
  EXPECT_GE(report.agreement, 0.995);

  // --agent names the family; an unknown one, or one without its checkpoint, is refused.
  ExportOptions as_sac = Quick(dir);
  as_sac.agent = "sac";
  as_sac.output_path = dir + "/again.ttlookup";
  EXPECT_EQ(ExportLookup(as_sac).policy, "sac " + std::to_string(kObservationSize) + "-32-32-2");
  ExportOptions bad = Quick(dir);
  bad.agent = "ppo";
  EXPECT_THROW(ExportLookup(bad), std::invalid_argument);
  ExportOptions missing = Quick(dir);
  missing.agent = "dqn";  // no dqn.ckpt here
  try {
    ExportLookup(missing);
    ADD_FAILURE() << "exported without a checkpoint";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint at"), std::string::npos) << e.what();
  }

  // A checkpoint with a flipped bit is refused, not exported.
  std::string bytes = ReadFile(dir + "/checkpoints/sac.ckpt");
  bytes[bytes.size() / 2] ^= 0x04;
  WriteFileAtomically(dir + "/checkpoints/sac.ckpt", bytes);
  ExportOptions corrupt = Quick(dir);
  corrupt.output_path = dir + "/corrupt.ttlookup";
  try {
    ExportLookup(corrupt);
    ADD_FAILURE() << "exported from a corrupt checkpoint";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
