#include "agents/agent.h"

#include <stdexcept>

#include "agents/dqn_agent.h"
#include "agents/sac_agent.h"

namespace tensortier {

TrainStats PlacementAgent::Update(PrioritizedReplay&, std::mt19937_64&) {
  throw std::logic_error(name() + " has no prioritised-replay update");
}

namespace {

class DqnPlacementAgent : public PlacementAgent {
 public:
  explicit DqnPlacementAgent(DqnConfig config) : agent_(std::move(config)) {}
  std::string name() const override { return "dqn"; }
  std::string config_json() const override { return agent_.config().ToJson(); }
  std::string device_name() const override { return agent_.device_name(); }
  AgentSchedule schedule() const override {
    const DqnConfig& c = agent_.config();
    return {c.replay_capacity, c.learning_starts, c.updates_per_episode};
  }
  int Act(const float* o, double epsilon, std::mt19937_64& rng) const override { return agent_.Act(o, epsilon, rng); }
  int Greedy(const float* o) const override { return agent_.Act(o, 0.0, rng_); }
  using PlacementAgent::Update;
  TrainStats Update(const ReplayBuffer& replay, std::mt19937_64& rng) override {
    return Stats(agent_.Update(replay, rng));
  }
  bool supports_prioritized_replay() const override { return true; }
  TrainStats Update(PrioritizedReplay& replay, std::mt19937_64& rng) override {
    return Stats(agent_.Update(replay, rng));
  }
  uint64_t updates() const override { return agent_.updates(); }
  std::string SerializeWeights() const override { return agent_.SerializeWeights(); }
  void LoadWeights(const std::string& blob) override { agent_.LoadWeights(blob); }
  void SaveCheckpoint(const std::string& path) const override { agent_.SaveCheckpoint(path); }
  void LoadCheckpoint(const std::string& path) override { agent_.LoadCheckpoint(path); }

 private:
  static TrainStats Stats(const UpdateStats& s) {
    TrainStats t;
    t.loss = s.loss;
    t.mean_q = s.mean_q;
    t.skipped = s.skipped;
    return t;
  }
  DqnAgent agent_;
  mutable std::mt19937_64 rng_{0};  // unused at epsilon 0
};

class SacPlacementAgent : public PlacementAgent {
 public:
  explicit SacPlacementAgent(SacConfig config) : agent_(std::move(config)) {}
  std::string name() const override { return "sac"; }
  std::string config_json() const override { return agent_.config().ToJson(); }
  std::string device_name() const override { return agent_.device_name(); }
  AgentSchedule schedule() const override {
    const SacConfig& c = agent_.config();
    return {c.replay_capacity, c.learning_starts, c.updates_per_episode};
  }
  int Act(const float* o, double epsilon, std::mt19937_64& rng) const override { return agent_.Act(o, epsilon, rng); }
  int Greedy(const float* o) const override { return agent_.Act(o, SacActMode::kGreedy, rng_); }
  TrainStats Update(const ReplayBuffer& replay, std::mt19937_64& rng) override {
    return Stats(agent_.Update(replay, rng));
  }
  bool supports_prioritized_replay() const override { return true; }
  TrainStats Update(PrioritizedReplay& replay, std::mt19937_64& rng) override {
    return Stats(agent_.Update(replay, rng));
  }
  uint64_t updates() const override { return agent_.updates(); }
  std::string SerializeWeights() const override { return agent_.SerializeWeights(); }
  void LoadWeights(const std::string& blob) override { agent_.LoadWeights(blob); }
  void SaveCheckpoint(const std::string& path) const override { agent_.SaveCheckpoint(path); }
  void LoadCheckpoint(const std::string& path) override { agent_.LoadCheckpoint(path); }

 private:
  static TrainStats Stats(const SacUpdateStats& s) {
    TrainStats t;
    t.loss = s.critic_loss;
    t.mean_q = s.mean_q;
    t.entropy = s.entropy;
    t.alpha = s.alpha;
    t.skipped = s.skipped;
    return t;
  }
  SacAgent agent_;
  mutable std::mt19937_64 rng_{0};  // greedy acting draws nothing
};

}  // namespace

std::unique_ptr<PlacementAgent> MakeAgent(const std::string& name, const std::string& config_json,
                                          const std::string& device) {
  if (name == "dqn") {
    DqnConfig c = config_json.empty() ? DqnConfig{} : DqnConfig::FromJson(config_json);
    if (!device.empty()) c.device = device;
    return std::make_unique<DqnPlacementAgent>(c);
  }
  if (name == "sac") {
    SacConfig c = config_json.empty() ? SacConfig{} : SacConfig::FromJson(config_json);
    if (!device.empty()) c.device = device;
    return std::make_unique<SacPlacementAgent>(c);
  }
  throw std::invalid_argument("unknown agent '" + name + "' (dqn, sac)");
}

std::unique_ptr<PlacementAgent> LoadAgentCheckpoint(const std::string& path, const std::string& device) {
  std::string dqn_error, sac_error;
  std::unique_ptr<PlacementAgent> agent;
  try {
    DqnConfig c = DqnAgent::ReadCheckpointConfig(path);
    c.device = device;
    agent = std::make_unique<DqnPlacementAgent>(c);
  } catch (const std::exception& e) {
    dqn_error = e.what();
  }
  if (!agent) {
    try {
      SacConfig c = SacAgent::ReadCheckpointConfig(path);
      c.device = device;
      agent = std::make_unique<SacPlacementAgent>(c);
    } catch (const std::exception& e) {
      sac_error = e.what();
    }
  }
  if (!agent)
    throw std::runtime_error(path + " is not an agent checkpoint (as DQN: " + dqn_error + "; as SAC: " + sac_error + ")");
  agent->LoadCheckpoint(path);
  return agent;
}

}  // namespace tensortier
