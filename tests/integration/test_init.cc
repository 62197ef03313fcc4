// `train --init` starts a run from another run's network (issue #15,
// criterion 5: a policy trained elsewhere, fine-tuned here). The real binary.
#include <gtest/gtest.h>

#include <filesystem>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "common/files.h"
#include "tests/common/temp_dir.h"
#include "tests/integration/process.h"

namespace tensortier {
namespace {

using testing::ChildProcess;
using testing::TempDir;

std::vector<std::string> Train(std::vector<std::string> extra) {
  std::vector<std::string> args = {"train",           "--workload", "synthetic:tiny:3:65536", "--workers", "1",
                                   "--metrics-address", "off",      "--demonstrations",       "none",      "--baselines",
                                   "none"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(InitFromRun, TheNewRunStartsWithTheOtherRunsNetworkAndShape) {
  const std::string dir = TempDir("init");
  const std::string first = dir + "/first", second = dir + "/second";
  // Another seed: the second run's own initial weights differ from these.
  ChildProcess a(Train({"--episodes", "30", "--hidden", "24", "24", "--seed", "7", "--out", first}),
                 dir + "/first.log");
  ASSERT_EQ(a.Wait(std::chrono::seconds(300)), 0) << ReadFile(dir + "/first.log");
  const std::string fastest = first + "/checkpoints/dqn-fastest.ckpt";
  ASSERT_TRUE(std::filesystem::exists(fastest)) << ReadFile(dir + "/first.log");

  // No update can happen in the second run (it never reaches
  // --learning-starts), so its final network is the one it started from.
  ChildProcess b(Train({"--episodes", "2", "--learning-starts", "1000000", "--init", first, "--out", second}),
                 dir + "/second.log");
  ASSERT_EQ(b.Wait(std::chrono::seconds(300)), 0) << ReadFile(dir + "/second.log");
  const std::string terminal = ReadFile(dir + "/second.log");
  EXPECT_NE(terminal.find("started from the network of " + fastest), std::string::npos) << terminal;
  const std::string summary = ReadFile(second + "/summary.json");
  EXPECT_NE(summary.find("\"checkpoint\": \"" + fastest + "\""), std::string::npos) << summary;
  std::unique_ptr<PlacementAgent> from = LoadAgentCheckpoint(fastest);
  std::unique_ptr<PlacementAgent> now = LoadAgentCheckpoint(second + "/checkpoints/dqn.ckpt");
  EXPECT_EQ(DqnConfig::FromJson(now->config_json()).hidden, (std::vector<int>{24, 24}));
  EXPECT_EQ(now->SerializeWeights(), from->SerializeWeights());
}

TEST(InitFromRun, WhatCannotStartARunIsRefusedWithItsReason) {
  const std::string dir = TempDir("init-bad");
  auto run = [&](std::vector<std::string> extra, const std::string& log) {
    extra.push_back("--episodes");
    extra.push_back("2");
    ChildProcess p(Train(extra), dir + "/" + log);
    return p.Wait(std::chrono::seconds(120));
  };
  // A directory without a checkpoint of this agent, and a corrupt file: bad input.
  std::filesystem::create_directories(dir + "/empty-run");
  EXPECT_EQ(run({"--init", dir + "/empty-run", "--out", dir + "/a"}, "empty.log"), 3);
  EXPECT_NE(ReadFile(dir + "/empty.log").find("--init " + dir + "/empty-run: no " + dir + "/empty-run/checkpoints/dqn"),
            std::string::npos)
      << ReadFile(dir + "/empty.log");
  WriteFileAtomically(dir + "/torn.ckpt", "not a checkpoint");
  EXPECT_EQ(run({"--init", dir + "/torn.ckpt", "--out", dir + "/b"}, "torn.log"), 3);
  EXPECT_NE(ReadFile(dir + "/torn.log").find("--init " + dir + "/torn.ckpt: "), std::string::npos)
      << ReadFile(dir + "/torn.log");
  // Another agent family: a usage error that says which.
  DqnConfig c;
  c.device = "cpu";
  MakeAgent("dqn", c.ToJson())->SaveCheckpoint(dir + "/dqn.ckpt");
  EXPECT_EQ(run({"--init", dir + "/dqn.ckpt", "--agent", "sac", "--out", dir + "/c"}, "family.log"), 2);
  EXPECT_NE(ReadFile(dir + "/family.log").find("a dqn checkpoint, and this run trains sac"), std::string::npos)
      << ReadFile(dir + "/family.log");
}

}  // namespace
}  // namespace tensortier
