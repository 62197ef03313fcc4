// FoldQEnsemble: K DQN networks folded into one whose Q-values are their mean.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "agents/q_ensemble.h"
#include "tests/agents/agent_probes.h"
#include "tests/agents/random_replay.h"

namespace tensortier {
namespace {

DqnConfig MemberConfig(uint64_t seed, std::vector<int> hidden = {16, 8}) {
  DqnConfig c;
  c.hidden = std::move(hidden);
  c.seed = seed;
  c.device = "cpu";
  return c;
}

// Every probe's Q-values are the members' mean, action by action, for one
// member, three members and a network of three hidden layers.
TEST(QEnsemble, TheFoldsQValuesAreTheMembersMean) {
  for (const auto& [seeds, hidden] : std::vector<std::pair<std::vector<uint64_t>, std::vector<int>>>{
           {{5}, {16, 8}}, {{5, 6, 7}, {16, 8}}, {{8, 9}, {12, 6, 4}}}) {
    std::vector<std::unique_ptr<DqnAgent>> agents;
    std::vector<const DqnAgent*> members;
    for (uint64_t s : seeds) {
      agents.push_back(std::make_unique<DqnAgent>(MemberConfig(s, hidden)));
      members.push_back(agents.back().get());
    }
    std::unique_ptr<DqnAgent> folded = FoldQEnsemble(members);
    std::vector<int> wide = hidden;
    for (int& w : wide) w *= static_cast<int>(seeds.size());
    EXPECT_EQ(folded->config().hidden, wide);
    int disagreements_with_member0 = 0;
    for (const auto& probe : RandomProbes(200, 11)) {
      std::vector<float> mean(2, 0.0f);
      for (const DqnAgent* m : members) {
        std::vector<float> q = m->QValues(probe.data());
        for (int a = 0; a < 2; ++a) mean[a] += q[a] / static_cast<float>(members.size());
      }
      std::vector<float> got = folded->QValues(probe.data());
      for (int a = 0; a < 2; ++a) EXPECT_NEAR(got[a], mean[a], 1e-5);
      if (folded->Greedy(probe.data()) != members[0]->Greedy(probe.data())) ++disagreements_with_member0;
    }
    if (seeds.size() == 1) EXPECT_EQ(disagreements_with_member0, 0);
  }
}

// The fold is a DQN agent like any other: its checkpoint loads back to the
// same Q-values, and it goes on training (fine-tuning from an ensemble).
TEST(QEnsemble, TheFoldCheckpointsAndTrainsAsOneNetwork) {
  DqnAgent a(MemberConfig(1)), b(MemberConfig(2));
  std::unique_ptr<DqnAgent> folded = FoldQEnsemble({&a, &b});
  const std::string state = folded->SaveState();
  DqnAgent loaded(DqnAgent::StateConfig(state));
  loaded.LoadState(state);
  const auto probes = RandomProbes(20, 3);
  for (const auto& probe : probes) EXPECT_EQ(loaded.QValues(probe.data()), folded->QValues(probe.data()));
  ReplayBuffer replay = RandomNormalReplay(256, 4);
  std::mt19937_64 rng(5);
  TrainStats stats = loaded.Update(replay, rng);
  EXPECT_FALSE(stats.skipped);
  EXPECT_EQ(loaded.updates(), 1u);
  bool moved = false;
  for (const auto& probe : probes) moved |= loaded.QValues(probe.data()) != folded->QValues(probe.data());
  EXPECT_TRUE(moved);
}

TEST(QEnsemble, RefusesNoMembersAndMembersOfAnotherShape) {
  EXPECT_THROW(FoldQEnsemble({}), std::invalid_argument);
  DqnAgent a(MemberConfig(1, {16, 8})), b(MemberConfig(2, {16, 16}));
  try {
    FoldQEnsemble({&a, &b});
    FAIL() << "members of two shapes were folded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("member 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tensortier
