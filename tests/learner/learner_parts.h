// Shared pieces of the learner parts' unit tests (no sockets, no threads of
// the learner's own): a small workload and a small agent on the CPU.
#pragma once

#include <capnp/message.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "agents/agent.h"
#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "envs/workload_spec.h"
#include "learner/checkpoint_message.h"
#include "learner/learner.h"

namespace tensortier::testing {

inline Workload SmallWorkload() { return LoadWorkloadSpec("synthetic:vgg:3"); }

inline EnvConfig SmallEnv(const Workload& w) {
  EnvConfig env;
  env.dram_limit_bytes = w.peak_live_bytes() / 3;
  return env;
}

inline DqnConfig SmallDqn(uint64_t seed) {
  DqnConfig c;
  c.observation_size = kObservationSize;
  c.num_actions = 2;
  c.hidden = {16, 16};
  c.batch_size = 8;
  c.learning_starts = 16;
  c.updates_per_episode = 4;
  c.device = "cpu";
  c.seed = seed;
  return c;
}

// A test with a run directory of its own (and its checkpoints/ folder),
// removed afterwards, and a learner config that writes there: the small
// workload, environment and DQN (from `dqn_seed`).
class RunDirTest : public ::testing::Test {
 protected:
  RunDirTest(const std::string& prefix, uint64_t dqn_seed) : prefix_(prefix), dqn_seed_(dqn_seed) {}
  void SetUp() override {
    run_dir_ = ::testing::TempDir() + "/" + prefix_ + "_" + std::to_string(getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir());
    config_.workload = SmallWorkload();
    config_.env = SmallEnv(config_.workload);
    config_.run_dir = run_dir_;
    config_.dqn = SmallDqn(dqn_seed_);
  }
  void TearDown() override { std::filesystem::remove_all(run_dir_); }
  std::string dir() const { return run_dir_ + "/checkpoints"; }

  std::string run_dir_;
  LearnerConfig config_;

 private:
  std::string prefix_;
  uint64_t dqn_seed_;
};

// A transition of the right shape: every observation float `value`.
inline Transition Row(float value, uint8_t action, float reward = 0, bool done = false) {
  Transition t;
  t.observation.assign(kObservationSize, value);
  t.next_observation = t.observation;
  t.action = action;
  t.reward = reward;
  t.done = done;
  return t;
}

inline std::unique_ptr<PlacementAgent> SmallAgent(uint64_t seed) {
  return MakeAgent("dqn", SmallDqn(seed).ToJson());
}

// `words` words of Cap'n Proto framing that is sound (one segment, its
// size right) around garbage: what a checksum cannot tell from a checkpoint.
inline std::string GarbageMessage(uint32_t words) {
  std::string payload(8 * static_cast<size_t>(words), '\x5a');
  const uint32_t table[2] = {0, words - 1};  // one segment, of the words after the table
  std::memcpy(&payload[0], table, sizeof table);
  return payload;
}

// A part's checkpoint section in a message of its own: what a part's test
// saves and loads without the rest of a payload.
template <typename Section>
class SectionMessage {
 public:
  typename Section::Builder Init() { return message_->initRoot<Section>(); }
  typename Section::Builder Get() { return message_->getRoot<Section>(); }  // to spoil what was saved
  typename Section::Reader Read() { return message_->getRoot<Section>().asReader(); }
  std::string Bytes() { return PayloadOf(*message_); }

 private:
  // Behind a pointer: a message builder's destructor may throw, a test
  // fixture's may not.
  std::unique_ptr<capnp::MallocMessageBuilder> message_ = std::make_unique<capnp::MallocMessageBuilder>();
};

}  // namespace tensortier::testing
