#include "agents/agent.h"

#include <cstring>
#include <stdexcept>

#include "agents/dqn_agent.h"
#include "agents/sac_agent.h"
#include "common/files.h"
#include "common/framed_file.h"

namespace tensortier {

ActionScores ScoresOf(const PlacementAgent& agent) {
  return [&agent](const Observation& o) {
    const std::vector<float> s = agent.ActionScores(o.data());
    return std::make_pair(s.at(0), s.at(1));
  };
}

void PlacementAgent::SetDemonstrations(std::vector<Transition>) {
  throw std::logic_error(name() + " does not learn from demonstrations");
}

TrainStats PlacementAgent::PretrainStep(std::mt19937_64&) {
  throw std::logic_error(name() + " does not learn from demonstrations");
}

void PlacementAgent::SetLearningRate(double) {
  throw std::logic_error(name() + " does not change its learning rate");
}

void PlacementAgent::FoldWeightsIntoMean() { throw std::logic_error(name() + " keeps no mean of its weights"); }
void PlacementAgent::LoadWeightMean() { throw std::logic_error(name() + " keeps no mean of its weights"); }
void PlacementAgent::ClearWeightMean() { throw std::logic_error(name() + " keeps no mean of its weights"); }
namespace {

constexpr FileFrame kAgentCheckpointFrame{"TTAGNT", 1, "TensorTier agent checkpoint"};  // "TTAGNT01"

// Before the frame (TensorTier 0.1) a .ckpt file was the bare state: a
// LibTorch archive, which is a zip file.
bool IsBareState(const std::string& file) { return file.size() >= 4 && std::memcmp(file.data(), "PK\x03\x04", 4) == 0; }

}  // namespace

void PlacementAgent::SaveCheckpoint(const std::string& path) const { WriteAgentCheckpoint(path, SaveState()); }

void PlacementAgent::LoadCheckpoint(const std::string& path) {
  const std::string state = ReadAgentCheckpoint(path);
  try {
    LoadState(state);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void WriteAgentCheckpoint(const std::string& path, const std::string& state) {
  WriteFileAtomically(path, FramePayload(kAgentCheckpointFrame, state));
}

std::string ReadAgentCheckpoint(const std::string& path) {
  std::string file = ReadFile(path);
  // Checkpoints of the previous release are kept readable (runs made with it
  // hold <agent>-best.ckpt files that bench and export should still take);
  // they carry no checksum, so nothing but LibTorch's parser checks them.
  if (!HasFrameMagic(kAgentCheckpointFrame, file) && IsBareState(file)) return file;
  return VerifiedPayload(kAgentCheckpointFrame, file, path);
}

std::unique_ptr<PlacementAgent> MakeAgent(const std::string& name, const std::string& config_json,
                                          const std::string& device) {
  if (name == "dqn") {
    DqnConfig c = config_json.empty() ? DqnConfig{} : DqnConfig::FromJson(config_json);
    if (!device.empty()) c.device = device;
    return std::make_unique<DqnAgent>(c);
  }
  if (name == "sac") {
    SacConfig c = config_json.empty() ? SacConfig{} : SacConfig::FromJson(config_json);
    if (!device.empty()) c.device = device;
    return std::make_unique<SacAgent>(c);
  }
  throw std::invalid_argument("unknown agent '" + name + "' (dqn, sac)");
}

namespace {

// An `Agent` of the settings `state` was saved with, on `device`; null, with
// the reason in `error`, when `state` is not that agent's.
template <typename Agent>
std::unique_ptr<PlacementAgent> AgentForState(const std::string& state, const std::string& device,
                                              const std::string& what, std::string* error) {
  try {
    auto c = Agent::StateConfig(state, what);
    c.device = device;
    return std::make_unique<Agent>(c);
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<PlacementAgent> LoadAgentState(const std::string& state, const std::string& device,
                                               const std::string& what) {
  std::string dqn_error, sac_error;
  std::unique_ptr<PlacementAgent> agent = AgentForState<DqnAgent>(state, device, what, &dqn_error);
  if (!agent) agent = AgentForState<SacAgent>(state, device, what, &sac_error);
  if (!agent)
    throw std::runtime_error(what + " is not an agent's state (as DQN: " + dqn_error + "; as SAC: " + sac_error + ")");
  // A network of another MDP would read past or short of the observations
  // it is given: the observation grew from 15 to 17 floats, then 18 (docs/mdp.md).
  const int observation_size = agent->name() == "dqn" ? DqnAgent::StateConfig(state, what).observation_size
                                                      : SacAgent::StateConfig(state, what).observation_size;
  if (observation_size != kObservationSize)
    throw std::runtime_error(what + ": its network takes " + std::to_string(observation_size) +
                             " observation floats, this build's placement MDP has " + std::to_string(kObservationSize) +
                             " (docs/mdp.md): train it again with this build");
  try {
    agent->LoadState(state);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
  return agent;
}

std::unique_ptr<PlacementAgent> LoadAgentCheckpoint(const std::string& path, const std::string& device) {
  return LoadAgentState(ReadAgentCheckpoint(path), device, "checkpoint '" + path + "'");
}

}  // namespace tensortier
