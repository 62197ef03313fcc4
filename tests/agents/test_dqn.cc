// DQN config and the double-DQN agent: serialisation,
// checkpoints, and learning a small MDP with a known optimal policy.
#include <gtest/gtest.h>
#include <torch/torch.h>  // only for the autograd reference below
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "agents/dqn_agent.h"
#include "tests/agents/agent_probes.h"
#include "replay/replay_buffer.h"
#include "envs/placement_env.h"
#include "envs/transition.h"

namespace tensortier {
namespace {

// The placement MDP's observation size, which is the config's default.
const int kObs = DqnConfig().observation_size;

Transition MakeTransition(float tag, uint8_t action = 0, bool done = false) {
  Transition t;
  t.observation.assign(kObs, tag);
  t.action = action;
  t.reward = tag;
  t.next_observation.assign(kObs, tag + 0.5f);
  t.done = done;
  return t;
}

DqnConfig SmallConfig(uint64_t seed = 1) {
  DqnConfig c;
  c.hidden = {32, 32};
  c.learning_rate = 1e-3;
  c.batch_size = 16;
  c.target_update_interval = 7;
  c.seed = seed;
  c.device = "cpu";
  return c;
}

// A replay buffer of random transitions, the same for the same seed.
ReplayBuffer RandomReplay(size_t n, uint64_t seed, int actions = 2) {
  ReplayBuffer replay(n);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> action(0, actions - 1);
  for (size_t i = 0; i < n; ++i) {
    Transition t;
    for (int k = 0; k < kObs; ++k) t.observation.push_back(normal(rng));
    for (int k = 0; k < kObs; ++k) t.next_observation.push_back(normal(rng));
    t.action = static_cast<uint8_t>(action(rng));
    t.reward = normal(rng);
    t.done = i % 10 == 9;
    replay.Add(std::move(t));
  }
  return replay;
}

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::path(::testing::TempDir()) /
             ("tt_dqn_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// ---------------------------------------------------------------------------
// DqnConfig

TEST(DqnConfig, DefaultObservationSizeIsThePlacementMdps) {
  EXPECT_EQ(DqnConfig().observation_size, static_cast<int>(kObservationSize));
  EXPECT_EQ(DqnConfig().num_actions, 2);
}

TEST(DqnConfig, JsonRoundTrip) {
  DqnConfig c;
  c.observation_size = 7;
  c.num_actions = 3;
  c.hidden = {64, 32, 16};
  c.learning_rate = 3.3e-4;
  c.gamma = 0.97;
  c.batch_size = 256;
  c.huber_delta = 2.5;
  c.grad_clip_norm = 0.5;
  c.target_update_interval = 250;
  c.epsilon_start = 1.0;
  c.epsilon_end = 0.05;
  c.epsilon_decay_episodes = 42;
  c.replay_capacity = 1234;
  c.learning_starts = 99;
  c.updates_per_episode = 8;
  c.seed = 18446744073709551615ull;
  c.device = "cuda:1";
  DqnConfig back = DqnConfig::FromJson(c.ToJson());
  EXPECT_EQ(back.observation_size, c.observation_size);
  EXPECT_EQ(back.num_actions, c.num_actions);
  EXPECT_EQ(back.hidden, c.hidden);
  EXPECT_EQ(back.learning_rate, c.learning_rate);
  EXPECT_EQ(back.gamma, c.gamma);
  EXPECT_EQ(back.batch_size, c.batch_size);
  EXPECT_EQ(back.huber_delta, c.huber_delta);
  EXPECT_EQ(back.grad_clip_norm, c.grad_clip_norm);
  EXPECT_EQ(back.target_update_interval, c.target_update_interval);
  EXPECT_EQ(back.epsilon_start, c.epsilon_start);
  EXPECT_EQ(back.epsilon_end, c.epsilon_end);
  EXPECT_EQ(back.epsilon_decay_episodes, c.epsilon_decay_episodes);
  EXPECT_EQ(back.replay_capacity, c.replay_capacity);
  EXPECT_EQ(back.learning_starts, c.learning_starts);
  EXPECT_EQ(back.updates_per_episode, c.updates_per_episode);
  EXPECT_EQ(back.seed, c.seed);
  EXPECT_EQ(back.device, c.device);
  EXPECT_EQ(back.ToJson(), c.ToJson());
}

TEST(DqnConfig, MissingKeysKeepDefaults) {
  DqnConfig defaults;
  DqnConfig c = DqnConfig::FromJson(R"({"batch_size": 64, "hidden": [8]})");
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_EQ(c.hidden, std::vector<int>{8});
  EXPECT_EQ(c.learning_rate, defaults.learning_rate);
  EXPECT_EQ(c.gamma, defaults.gamma);
  EXPECT_EQ(c.device, defaults.device);
  EXPECT_EQ(DqnConfig::FromJson("{}").ToJson(), defaults.ToJson());
  // Integers are accepted where a real number is expected.
  EXPECT_EQ(DqnConfig::FromJson(R"({"gamma": 1})").gamma, 1.0);
}

TEST(DqnConfig, RejectsMalformedJsonAndWrongTypes) {
  const char* bad[] = {
      "",
      "{",
      "{\"batch_size\": 32,}",
      "[1, 2]",
      "42",
      R"({"batch_size": "32"})",
      R"({"batch_size": 32.5})",
      R"({"batch_size": true})",
      R"({"batch_size": 0})",
      R"({"batch_size": 99999999999})",
      R"({"hidden": 128})",
      R"({"hidden": [128, "x"]})",
      R"({"hidden": []})",
      R"({"hidden": [0]})",
      R"({"learning_rate": "fast"})",
      R"({"learning_rate": -1})",
      R"({"gamma": 1.5})",
      R"({"seed": -1})",
      R"({"seed": 1.5})",
      R"({"device": 0})",
      R"({"device": "tpu"})",
      R"({"device": "cuda:x"})",
      R"({"num_actions": 300})",
      R"({"epsilon_start": 2})",
      R"({"learning-rate": 0.1})",  // unknown key (typo)
  };
  for (const char* text : bad) {
    try {
      DqnConfig::FromJson(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("DqnConfig"), std::string::npos) << e.what();
    } catch (...) {
      ADD_FAILURE() << "wrong exception type for: " << text;
    }
  }
}

// ---------------------------------------------------------------------------
// DqnAgent basics

TEST(DqnAgent, DeviceSelection) {
  DqnConfig c = SmallConfig();
  EXPECT_EQ(DqnAgent(c).device_name(), "cpu");
  c.device = "auto";
  std::string name = DqnAgent(c).device_name();
  EXPECT_TRUE(name == "cpu" || name.rfind("cuda:", 0) == 0) << name;
  c.device = "tpu";
  EXPECT_THROW(DqnAgent{c}, std::invalid_argument);
  c.device = "cuda:99";
  EXPECT_ANY_THROW(DqnAgent{c});  // no such device (or no CUDA at all)
  c = SmallConfig();
  c.hidden = {};
  EXPECT_THROW(DqnAgent{c}, std::invalid_argument);
}

TEST(DqnAgent, SeedDecidesInitialWeights) {
  auto probes = RandomProbes(8, 3);
  DqnAgent a(SmallConfig(11)), b(SmallConfig(11)), c(SmallConfig(12));
  EXPECT_EQ(AllQ(a, probes), AllQ(b, probes));
  EXPECT_NE(AllQ(a, probes), AllQ(c, probes));
  EXPECT_EQ(a.SerializeWeights(), b.SerializeWeights());
  EXPECT_EQ(a.updates(), 0u);
  EXPECT_EQ(a.QValues(probes[0].data()).size(), 2u);
}

// The mean of two snapshots is the network whose every weight and bias is
// the two snapshots' average; loading it leaves the target network alone and
// the mean goes on averaging from where it was.
TEST(DqnAgent, WeightMeanAveragesTheFoldedSnapshots) {
  DqnAgent a(SmallConfig(21)), b(SmallConfig(22)), c(SmallConfig(23));
  ASSERT_TRUE(a.supports_weight_mean());
  EXPECT_THROW(a.LoadWeightMean(), std::logic_error);
  const std::vector<DenseLayer> wa = a.GreedyNetwork(), wb = b.GreedyNetwork(), wc = c.GreedyNetwork();
  a.FoldWeightsIntoMean();
  a.LoadWeights(b.SerializeWeights());
  a.FoldWeightsIntoMean();
  EXPECT_EQ(a.weights_folded(), 2u);
  a.LoadWeights(c.SerializeWeights());  // the policy moves on; the mean does not
  a.LoadWeightMean();
  auto expect_mean = [&](const std::vector<std::vector<DenseLayer>>& snapshots) {
    const std::vector<DenseLayer> mean = a.GreedyNetwork();
    ASSERT_EQ(mean.size(), wa.size());
    for (size_t l = 0; l < mean.size(); ++l) {
      for (size_t i = 0; i < mean[l].weight.size(); i += 97) {
        double sum = 0;
        for (const auto& s : snapshots) sum += s[l].weight[i];
        EXPECT_NEAR(mean[l].weight[i], sum / snapshots.size(), 1e-6);
      }
      for (size_t i = 0; i < mean[l].bias.size(); ++i) {
        double sum = 0;
        for (const auto& s : snapshots) sum += s[l].bias[i];
        EXPECT_NEAR(mean[l].bias[i], sum / snapshots.size(), 1e-6);
      }
    }
  };
  expect_mean({wa, wb});
  a.LoadWeights(c.SerializeWeights());
  a.FoldWeightsIntoMean();
  a.LoadWeightMean();
  expect_mean({wa, wb, wc});
  a.ClearWeightMean();
  EXPECT_EQ(a.weights_folded(), 0u);
  EXPECT_THROW(a.LoadWeightMean(), std::logic_error);
}

TEST(DqnAgent, ActIsGreedyAtZeroEpsilonAndUniformAtOne) {
  DqnAgent agent(SmallConfig(4));
  std::mt19937_64 rng(1);
  for (const auto& o : RandomProbes(50, 8)) {
    auto q = agent.QValues(o.data());
    int greedy = q[1] > q[0] ? 1 : 0;
    EXPECT_EQ(agent.Act(o.data(), 0.0, rng), greedy);
  }
  auto o = RandomProbes(1, 2)[0];
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += agent.Act(o.data(), 1.0, rng);
  EXPECT_NEAR(ones, n / 2, n * 0.02);
  // epsilon 0.5: greedy with probability 0.75.
  int greedy = agent.Act(o.data(), 0.0, rng);
  int hits = 0;
  for (int i = 0; i < n; ++i) hits += agent.Act(o.data(), 0.5, rng) == greedy;
  EXPECT_NEAR(hits, n * 3 / 4, n * 0.02);
}

TEST(DqnAgent, UpdateChangesWeightsAndReportsStats) {
  DqnAgent agent(SmallConfig(2));
  ReplayBuffer replay = RandomReplay(200, 1);
  auto probes = RandomProbes(4, 1);
  auto before = AllQ(agent, probes);
  std::mt19937_64 rng(3);
  TrainStats s = agent.Update(replay, rng);
  EXPECT_TRUE(std::isfinite(s.loss));
  EXPECT_GT(s.loss, 0);
  EXPECT_TRUE(std::isfinite(s.mean_q));
  EXPECT_GT(s.grad_norm, 0);
  EXPECT_EQ(agent.updates(), 1u);
  EXPECT_NE(AllQ(agent, probes), before);

  ReplayBuffer empty(4);
  EXPECT_THROW(agent.Update(empty, rng), std::logic_error);
}

// Issue 17: one NaN reward made the loss and every weight NaN for the rest
// of the run. The step is skipped instead, and training goes on.
TEST(DqnAgent, NonFiniteLossSkipsTheStep) {
  DqnAgent agent(SmallConfig(2));
  ReplayBuffer replay = RandomReplay(200, 1);
  std::mt19937_64 rng(3);
  ExpectNonFiniteLossSkipsTheStep(agent, RandomProbes(4, 1), replay, rng, [](std::vector<Transition>& rows) {
    rows[5].reward = std::numeric_limits<float>::quiet_NaN();
  });
  EXPECT_EQ(agent.updates(), 1u);
}

TEST(DqnAgent, UpdateRejectsMalformedTransitions) {
  DqnAgent agent(SmallConfig());
  std::mt19937_64 rng(1);
  ReplayBuffer short_obs(1);
  Transition t = MakeTransition(1);
  t.observation.resize(5);
  short_obs.Add(t);
  EXPECT_THROW(agent.Update(short_obs, rng), std::invalid_argument);

  ReplayBuffer bad_action(1);
  bad_action.Add(MakeTransition(1, /*action=*/2));
  EXPECT_THROW(agent.Update(bad_action, rng), std::invalid_argument);

  ReplayBuffer no_next(1);
  t = MakeTransition(1);
  t.next_observation.clear();
  no_next.Add(t);
  EXPECT_THROW(agent.Update(no_next, rng), std::invalid_argument);
  // ... unless the episode ended there.
  no_next.Add([] {
    Transition d = MakeTransition(1, 0, /*done=*/true);
    d.next_observation.clear();
    return d;
  }());
  EXPECT_NO_THROW(agent.Update(no_next, rng));
  EXPECT_EQ(agent.updates(), 1u);
}

TEST(DqnAgent, TargetIntervalMatchesManualSync) {
  // Interval 3 must equal interval "never" plus SyncTarget every 3 updates;
  // syncing at other times must change the losses.
  DqnConfig auto_sync = SmallConfig(6);
  auto_sync.target_update_interval = 3;
  DqnConfig manual = SmallConfig(6);
  manual.target_update_interval = 1000000;
  ReplayBuffer replay = RandomReplay(300, 2);
  DqnAgent a(auto_sync), b(manual), c(manual);
  std::mt19937_64 ra(1), rb(1), rc(1);
  std::vector<double> la, lb, lc;
  for (int i = 1; i <= 12; ++i) {
    la.push_back(a.Update(replay, ra).loss);
    lb.push_back(b.Update(replay, rb).loss);
    lc.push_back(c.Update(replay, rc).loss);
    if (i % 3 == 0) b.SyncTarget();
    c.SyncTarget();
  }
  EXPECT_EQ(la, lb);
  EXPECT_NE(la, lc);
}

// The agent computes gradients by hand; this replays the same batches
// through a textbook LibTorch implementation (autograd, huber_loss,
// clip_grad_norm_, torch::optim::Adam, a hard target copy) and compares.
struct ReferenceNet : torch::nn::Module {
  explicit ReferenceNet(const std::vector<int64_t>& shape) {
    for (size_t i = 0; i + 1 < shape.size(); ++i)
      layers.push_back(register_module("fc" + std::to_string(i),
                                       torch::nn::Linear(shape[i], shape[i + 1])));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = x.flatten(1);
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (i + 1 < layers.size()) x = torch::relu(x);
    }
    return x;
  }
  // Reads DqnAgent::SerializeWeights' format: fc<i>/{weight,bias}.
  void Load(const std::string& blob) {
    torch::serialize::InputArchive ar;
    ar.load_from(blob.data(), blob.size());
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < layers.size(); ++i) {
      torch::serialize::InputArchive layer;
      ar.read("fc" + std::to_string(i), layer);
      torch::Tensor w, b;
      layer.read("weight", w);
      layer.read("bias", b);
      layers[i]->weight.copy_(w);
      layers[i]->bias.copy_(b);
    }
  }
  void CopyFrom(ReferenceNet& other) {
    torch::NoGradGuard no_grad;
    auto mine = parameters(), theirs = other.parameters();
    for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(theirs[i]);
  }
  std::vector<torch::nn::Linear> layers;
};

void CheckAgainstReference(const std::vector<int>& hidden, double clip_norm) {
  SCOPED_TRACE("hidden layers: " + std::to_string(hidden.size()));
  DqnConfig c = SmallConfig(31);
  c.hidden = hidden;
  c.batch_size = 20;
  c.gamma = 0.9;
  c.huber_delta = 0.7;      // both branches of the Huber loss occur
  c.grad_clip_norm = clip_norm;  // chosen so that some updates clip, not all
  c.target_update_interval = 4;
  c.learning_rate = 3e-3;
  DqnAgent agent(c);
  ReplayBuffer replay = RandomReplay(300, 12);

  std::vector<int64_t> shape{kObs};
  for (int h : hidden) shape.push_back(h);
  shape.push_back(2);
  auto online = std::make_shared<ReferenceNet>(shape);
  auto target = std::make_shared<ReferenceNet>(shape);
  online->Load(agent.SerializeWeights());
  target->CopyFrom(*online);
  torch::optim::Adam adam(online->parameters(), torch::optim::AdamOptions(c.learning_rate));

  std::mt19937_64 rng_agent(5), rng_ref(5);
  auto probes = RandomProbes(10, 13);
  int clipped = 0, unclipped = 0;
  for (int step = 1; step <= 16; ++step) {
    TrainStats got = agent.Update(replay, rng_agent);

    auto batch = replay.Sample(c.batch_size, rng_ref);
    const int64_t b = c.batch_size;
    torch::Tensor s = torch::empty({b, kObs}), ns = torch::empty({b, kObs});
    torch::Tensor a = torch::empty({b, 1}, torch::kInt64), r = torch::empty({b}),
                  not_done = torch::empty({b});
    for (int64_t i = 0; i < b; ++i) {
      s[i] = torch::tensor(batch[i]->observation);
      ns[i] = torch::tensor(batch[i]->next_observation);
      a[i][0] = static_cast<int64_t>(batch[i]->action);
      r[i] = batch[i]->reward;
      not_done[i] = batch[i]->done ? 0.0f : 1.0f;
    }
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      torch::Tensor best = online->forward(ns).argmax(1, true);
      y = r + c.gamma * not_done * target->forward(ns).gather(1, best).squeeze(1);
    }
    torch::Tensor q = online->forward(s).gather(1, a).squeeze(1);
    torch::Tensor loss = torch::huber_loss(q, y, at::Reduction::Mean, c.huber_delta);
    adam.zero_grad();
    loss.backward();
    double norm = torch::nn::utils::clip_grad_norm_(online->parameters(), c.grad_clip_norm);
    adam.step();
    if (step % c.target_update_interval == 0) target->CopyFrom(*online);

    (norm > c.grad_clip_norm ? clipped : unclipped)++;
    EXPECT_NEAR(got.loss, loss.item<double>(), 1e-5 * (1 + std::abs(got.loss))) << step;
    EXPECT_NEAR(got.grad_norm, norm, 1e-4 * (1 + norm)) << step;
    EXPECT_NEAR(got.mean_q, q.mean().item<double>(), 1e-5) << step;
    for (const auto& o : probes) {
      auto mine = agent.QValues(o.data());
      torch::NoGradGuard no_grad;
      torch::Tensor ref = online->forward(torch::tensor(o).view({1, kObs}));
      for (int k = 0; k < 2; ++k)
        ASSERT_NEAR(mine[k], ref[0][k].item<float>(), 1e-4) << "step " << step;
    }
  }
  EXPECT_GT(clipped, 0);
  EXPECT_GT(unclipped, 0);
}

TEST(DqnAgent, UpdateMatchesAutogradReference) {
  CheckAgainstReference({24, 16}, 0.19);
  CheckAgainstReference({24}, 0.4);
  CheckAgainstReference({16, 24, 8}, 0.1);
}

// ---------------------------------------------------------------------------
// Weights and checkpoints

TEST(DqnAgent, WeightsRoundTripGivesIdenticalQValues) {
  DqnAgent trained(SmallConfig(1));
  ReplayBuffer replay = RandomReplay(200, 4);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 20; ++i) trained.Update(replay, rng);
  std::string blob = trained.SerializeWeights();
  EXPECT_GT(blob.size(), 0u);

  DqnAgent fresh(SmallConfig(99));
  auto probes = RandomProbes(16, 5);
  EXPECT_NE(AllQ(fresh, probes), AllQ(trained, probes));
  fresh.LoadWeights(blob);
  EXPECT_EQ(AllQ(fresh, probes), AllQ(trained, probes));
  EXPECT_EQ(fresh.SerializeWeights(), blob);
  EXPECT_EQ(fresh.updates(), 0u);  // weights only, no counters
}

TEST(DqnAgent, BadWeightsThrowAndLeaveWeightsUnchanged) {
  DqnAgent agent(SmallConfig(1));
  auto probes = RandomProbes(8, 6);
  auto before = AllQ(agent, probes);
  std::string good = agent.SerializeWeights();

  std::vector<std::string> bad = {
      "",
      "garbage that is not a zip archive",
      good.substr(0, good.size() / 2),
      good.substr(0, good.size() - 1),
  };
  std::string flipped = good;
  for (size_t i = 0; i < 64 && i < flipped.size(); ++i) flipped[i] ^= 0x5a;
  bad.push_back(flipped);
  DqnConfig wide = SmallConfig(1);
  wide.hidden = {48, 32};
  bad.push_back(DqnAgent(wide).SerializeWeights());  // shape mismatch
  DqnConfig deep = SmallConfig(1);
  deep.hidden = {32, 32, 32};
  bad.push_back(DqnAgent(deep).SerializeWeights());  // layer count mismatch

  for (size_t i = 0; i < bad.size(); ++i) {
    try {
      agent.LoadWeights(bad[i]);
      ADD_FAILURE() << "blob " << i << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    } catch (...) {
      ADD_FAILURE() << "blob " << i << " threw something other than std::runtime_error";
    }
    EXPECT_EQ(AllQ(agent, probes), before) << "blob " << i;
  }
  try {
    agent.LoadWeights(bad.back());
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kObs) + "-32-32-32-2"), std::string::npos) << e.what();
  }
}

TEST(DqnAgent, CheckpointResumesTrainingIdentically) {
  DqnConfig config = SmallConfig(21);
  ReplayBuffer replay = RandomReplay(500, 7);
  std::string path = TempPath("resume.ckpt");

  DqnAgent a(config);
  std::mt19937_64 rng(8);
  for (int i = 0; i < 10; ++i) a.Update(replay, rng);  // 10 = not a sync point (interval 7)
  a.SaveCheckpoint(path);
  ASSERT_TRUE(std::filesystem::exists(path));
  std::mt19937_64 rng_at_save = rng;
  auto probes = RandomProbes(16, 9);
  auto q_at_save = AllQ(a, probes);
  std::string weights_at_save = a.SerializeWeights();

  std::vector<double> uninterrupted;
  for (int i = 0; i < 15; ++i) uninterrupted.push_back(a.Update(replay, rng).loss);

  // A differently seeded agent that has trained on its own takes everything
  // from the checkpoint.
  DqnAgent b(SmallConfig(77));
  std::mt19937_64 other(1);
  for (int i = 0; i < 3; ++i) b.Update(replay, other);
  b.LoadCheckpoint(path);
  EXPECT_EQ(b.updates(), 10u);
  EXPECT_EQ(AllQ(b, probes), q_at_save);
  EXPECT_EQ(b.SerializeWeights(), weights_at_save);

  std::vector<double> resumed;
  for (int i = 0; i < 15; ++i) resumed.push_back(b.Update(replay, rng_at_save).loss);
  EXPECT_EQ(resumed, uninterrupted);  // target net, Adam state and counter all restored
  EXPECT_EQ(b.updates(), a.updates());
  EXPECT_EQ(AllQ(b, probes), AllQ(a, probes));

  // The first update after loading already depends on the target network
  // and Adam moments: loading only the policy weights does not reproduce it.
  DqnAgent c(SmallConfig(77));
  c.LoadWeights(weights_at_save);
  std::mt19937_64 rng_c = std::mt19937_64(8);
  for (int i = 0; i < 10; ++i) replay.Sample(config.batch_size, rng_c);
  EXPECT_NE(c.Update(replay, rng_c).loss, uninterrupted[0]);

  // No temporary files are left next to the checkpoint.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    files += e.path().filename().string().rfind("resume.ckpt", 0) == 0;
  EXPECT_EQ(files, 1);
  std::filesystem::remove(path);
}

TEST(DqnAgent, CheckpointErrors) {
  std::string path = TempPath("shape.ckpt");
  DqnConfig other = SmallConfig(1);
  other.hidden = {16, 16};
  DqnAgent(other).SaveCheckpoint(path);

  DqnAgent agent(SmallConfig(1));
  auto probes = RandomProbes(4, 1);
  auto before = AllQ(agent, probes);
  try {
    agent.LoadCheckpoint(path);
    ADD_FAILURE() << "a checkpoint of another network shape was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kObs) + "-16-16-2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(kObs) + "-32-32-2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(AllQ(agent, probes), before);

  EXPECT_THROW(agent.LoadCheckpoint(TempPath("missing.ckpt")), std::runtime_error);

  // Truncated and corrupted files.
  std::string good_path = TempPath("good.ckpt");
  agent.SaveCheckpoint(good_path);
  std::string data;
  {
    std::ifstream in(good_path, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const std::string& broken : {data.substr(0, data.size() / 3), std::string("not a zip")}) {
    std::string bad_path = TempPath("broken.ckpt");
    std::ofstream(bad_path, std::ios::binary) << broken;
    EXPECT_THROW(agent.LoadCheckpoint(bad_path), std::runtime_error);
    EXPECT_EQ(AllQ(agent, probes), before);
  }
  // A weights blob is not a checkpoint.
  std::string weights_path = TempPath("weights.bin");
  std::ofstream(weights_path, std::ios::binary) << agent.SerializeWeights();
  EXPECT_THROW(agent.LoadCheckpoint(weights_path), std::runtime_error);

  EXPECT_NO_THROW(agent.LoadCheckpoint(good_path));
  EXPECT_EQ(AllQ(agent, probes), before);
  EXPECT_THROW(agent.SaveCheckpoint("/nonexistent-dir/x/y.ckpt"), std::runtime_error);
}

// ---------------------------------------------------------------------------
// Learning

// A corridor of states 0..6; 0 and 6 are terminal. Stepping into 0 pays 0.5,
// into 6 pays 1.0, everything else 0. With gamma 0.8 the optimal policy is
// "left" in state 1 (0.5 now beats 0.8^4 later) and "right" in states 2..5.
class Corridor {
 public:
  static constexpr int kStates = 7;
  static constexpr double kGamma = 0.8;

  static std::vector<float> Observe(int s) {
    std::vector<float> o(kObs, 0.0f);
    o[s] = 1.0f;                        // one-hot position
    o[kStates] = s / 6.0f;              // and a scalar one
    return o;
  }
  // Returns (next state, reward, done).
  static std::tuple<int, float, bool> Step(int s, int action) {
    int next = action == 0 ? s - 1 : s + 1;
    if (next == 0) return {next, 0.5f, true};
    if (next == kStates - 1) return {next, 1.0f, true};
    return {next, 0.0f, false};
  }
  // Q* by value iteration.
  static std::array<std::array<double, 2>, kStates> OptimalQ() {
    std::array<double, kStates> v{};
    std::array<std::array<double, 2>, kStates> q{};
    for (int iter = 0; iter < 100; ++iter) {
      for (int s = 1; s < kStates - 1; ++s)
        for (int a = 0; a < 2; ++a) {
          auto [next, r, done] = Step(s, a);
          q[s][a] = r + (done ? 0.0 : kGamma * v[next]);
        }
      for (int s = 1; s < kStates - 1; ++s) v[s] = std::max(q[s][0], q[s][1]);
    }
    return q;
  }
};

TEST(DqnAgent, LearnsCorridorOptimalPolicy) {
  auto start = std::chrono::steady_clock::now();
  auto q_star = Corridor::OptimalQ();
  ASSERT_GT(q_star[1][0], q_star[1][1]);  // the test MDP is what the comment says
  for (int s = 2; s < 6; ++s) ASSERT_GT(q_star[s][1], q_star[s][0]);

  DqnConfig c;
  c.hidden = {64, 64};
  c.learning_rate = 1e-3;
  c.gamma = Corridor::kGamma;
  c.batch_size = 64;
  c.target_update_interval = 100;
  c.seed = 3;
  c.device = "cpu";
  DqnAgent agent(c);

  // Experience from a uniformly random policy with random starts, collected
  // while training, through Act() with epsilon 1.
  ReplayBuffer replay(5000);
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> start_state(1, 5);
  int updates = 0;
  while (updates < 4000) {
    int s = start_state(rng);
    for (int step = 0; step < 20; ++step) {
      std::vector<float> o = Corridor::Observe(s);
      int a = agent.Act(o.data(), 1.0, rng);
      auto [next, r, done] = Corridor::Step(s, a);
      Transition t;
      t.observation = o;
      t.action = static_cast<uint8_t>(a);
      t.reward = r;
      t.next_observation = done ? std::vector<float>(kObs, 0.0f) : Corridor::Observe(next);
      t.done = done;
      replay.Add(std::move(t));
      if (replay.size() >= 200) {
        TrainStats st = agent.Update(replay, rng);
        ASSERT_TRUE(std::isfinite(st.loss));
        ++updates;
      }
      if (done) break;
      s = next;
    }
  }

  for (int s = 1; s < 6; ++s) {
    std::vector<float> o = Corridor::Observe(s);
    auto q = agent.QValues(o.data());
    int best = q_star[s][1] > q_star[s][0] ? 1 : 0;
    EXPECT_EQ(agent.Act(o.data(), 0.0, rng), best)
        << "state " << s << " Q=(" << q[0] << ", " << q[1] << ") Q*=(" << q_star[s][0] << ", "
        << q_star[s][1] << ")";
    for (int a = 0; a < 2; ++a) EXPECT_NEAR(q[a], q_star[s][a], 0.05) << "state " << s << " a " << a;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("seconds", std::to_string(seconds));
}

}  // namespace
}  // namespace tensortier
