// The continuous soft actor-critic of heat_weight_agent.h in LibTorch:
// plain autograd (correctness first) with the losses of CleanRL's
// sac_continuous_action.py. The networks, optimisers and their archive are
// SacCore's (sac_core.h), shared with the discrete SAC agent. The training
// loop and the Algorithm 1 comparison are in heat_weight_training.cc.
#include "agents/heat_weight_agent.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "agents/sac_core.h"
#include "agents/torch_helpers.h"

namespace tensortier {
using namespace agents_internal;
namespace {

constexpr const char* kStateFormat = "tensortier.heat_sac.checkpoint";

void Validate(const HeatSacConfig& c) {
  const char* who = "HeatSacConfig";
  if (c.observation_size < 1) BadConfig(who, "observation_size must be at least 1");
  if (c.action_size < 1) BadConfig(who, "action_size must be at least 1");
  CheckSacCoreSettings(who, c);
  if (c.batch_size < 1) BadConfig(who, "batch_size must be at least 1");
  if (c.actor_update_interval < 1) BadConfig(who, "actor_update_interval must be at least 1");
  if (!std::isfinite(c.target_entropy)) BadConfig(who, "target_entropy must be finite");
  if (!(c.log_std_min < c.log_std_max) || !std::isfinite(c.log_std_min) || !std::isfinite(c.log_std_max))
    BadConfig(who, "need log_std_min < log_std_max");
  CheckDevice(who, c.device);
}



const ConfigJson<HeatSacConfig>& JsonFields() {
  static const ConfigJson<HeatSacConfig> fields("HeatSacConfig", {
      {"observation_size", &HeatSacConfig::observation_size},
      {"action_size", &HeatSacConfig::action_size},
      {"hidden", &HeatSacConfig::hidden},
      {"actor_learning_rate", &HeatSacConfig::actor_learning_rate},
      {"critic_learning_rate", &HeatSacConfig::critic_learning_rate},
      {"alpha_learning_rate", &HeatSacConfig::alpha_learning_rate},
      {"gamma", &HeatSacConfig::gamma},
      {"tau", &HeatSacConfig::tau},
      {"batch_size", &HeatSacConfig::batch_size},
      {"actor_update_interval", &HeatSacConfig::actor_update_interval},
      {"autotune_alpha", &HeatSacConfig::autotune_alpha},
      {"initial_alpha", &HeatSacConfig::initial_alpha},
      {"target_entropy", &HeatSacConfig::target_entropy},
      {"log_std_min", &HeatSacConfig::log_std_min},
      {"log_std_max", &HeatSacConfig::log_std_max},
      {"seed", &HeatSacConfig::seed},
      {"device", &HeatSacConfig::device},
  });
  return fields;
}

}  // namespace

std::string HeatSacConfig::ToJson() const { return JsonFields().Write(*this); }

HeatSacConfig HeatSacConfig::FromJson(const std::string& text) {
  HeatSacConfig c = JsonFields().Read(text);
  Validate(c);
  return c;
}

struct HeatWeightAgent::Impl : SacCore {
  const HeatSacConfig config;
  double target_entropy;
  at::Generator noise;  // reparameterisation noise of updates (checkpointed)
  std::vector<float> h_obs, h_next, h_action, h_reward, h_discount;

  Impl(const HeatSacConfig& c, torch::Device dev)
      : SacCore(dev, MlpShape(c.observation_size, c.hidden, 2 * c.action_size),
                MlpShape(c.observation_size + c.action_size, c.hidden, 1), c.seed, c.actor_learning_rate,
                c.critic_learning_rate, c.alpha_learning_rate, c.initial_alpha),
        config(c),
        target_entropy(c.target_entropy != 0 ? c.target_entropy : -static_cast<double>(c.action_size)),
        noise(at::make_generator<at::CPUGeneratorImpl>(c.seed ^ 0x5AC5AC5AC5AC5AC5ull)) {}

  torch::Tensor LogStd(const torch::Tensor& raw) const {
    const double lo = config.log_std_min, hi = config.log_std_max;
    return lo + 0.5 * (hi - lo) * (torch::tanh(raw) + 1.0);
  }

  // A reparameterised draw of tanh(N(mean, std)) and its log-probability
  // (with the tanh change of variables), [B, A] and [B].
  std::pair<torch::Tensor, torch::Tensor> Sample(const torch::Tensor& obs) {
    const int64_t A = config.action_size;
    torch::Tensor out = actor->forward(obs);
    torch::Tensor mean = out.narrow(1, 0, A);
    torch::Tensor log_std = LogStd(out.narrow(1, A, A));
    torch::Tensor eps = torch::randn({obs.size(0), A}, noise, torch::TensorOptions().dtype(torch::kFloat32));
    if (!device.is_cpu()) eps = eps.to(device);
    torch::Tensor x = mean + log_std.exp() * eps;
    torch::Tensor a = torch::tanh(x);
    constexpr double kHalfLog2Pi = 0.91893853320467274178;
    torch::Tensor logp = (-0.5 * eps.square() - log_std - kHalfLog2Pi - torch::log(1 - a.square() + 1e-6)).sum(1);
    return {a, logp};
  }

  torch::Tensor MinQ(Mlp& a, Mlp& b, const torch::Tensor& obs, const torch::Tensor& act) {
    torch::Tensor in = torch::cat({obs, act}, 1);
    return torch::min(a->forward(in), b->forward(in)).view({obs.size(0)});
  }
};

ContinuousReplay::ContinuousReplay(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("ContinuousReplay: capacity must be positive");
}

void ContinuousReplay::Add(ContinuousTransition t) {
  if (items_.size() < capacity_)
    items_.push_back(std::move(t));
  else
    items_[next_] = std::move(t);
  next_ = (next_ + 1) % capacity_;
}

std::vector<const ContinuousTransition*> ContinuousReplay::Sample(size_t batch, std::mt19937_64& rng) const {
  if (items_.empty()) throw std::logic_error("ContinuousReplay::Sample: the buffer is empty");
  std::vector<const ContinuousTransition*> out;
  out.reserve(batch);
  std::uniform_int_distribution<size_t> pick(0, items_.size() - 1);
  for (size_t i = 0; i < batch; ++i) out.push_back(&items_[pick(rng)]);
  return out;
}

HeatWeightAgent::HeatWeightAgent(HeatSacConfig config) : config_(std::move(config)) {
  Validate(config_);
  impl_ = std::make_unique<Impl>(config_, ResolveDevice("HeatWeightAgent", config_.device));
}

HeatWeightAgent::~HeatWeightAgent() = default;
HeatWeightAgent::HeatWeightAgent(HeatWeightAgent&&) noexcept = default;
HeatWeightAgent& HeatWeightAgent::operator=(HeatWeightAgent&&) noexcept = default;

std::string HeatWeightAgent::device_name() const { return impl_->device.str(); }
double HeatWeightAgent::alpha() const { return impl_->alpha_value; }

std::vector<float> HeatWeightAgent::Act(const float* observation, bool deterministic, std::mt19937_64& rng) const {
  const int A = config_.action_size;
  thread_local std::vector<float> out;
  if (out.size() < static_cast<size_t>(2 * A)) out.resize(2 * A);
  impl_->host.Forward(observation, out.data());
  std::vector<float> action(A);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double lo = config_.log_std_min, hi = config_.log_std_max;
  for (int i = 0; i < A; ++i) {
    double x = out[i];
    if (!deterministic) {
      double log_std = lo + 0.5 * (hi - lo) * (std::tanh(static_cast<double>(out[A + i])) + 1.0);
      x += std::exp(log_std) * normal(rng);
    }
    action[i] = static_cast<float>(std::tanh(x));
  }
  return action;
}

TrainStats HeatWeightAgent::Update(const ContinuousReplay& replay, std::mt19937_64& rng) {
  if (replay.size() == 0) throw std::logic_error("HeatWeightAgent::Update: the replay buffer is empty");
  return Update(replay.Sample(static_cast<size_t>(config_.batch_size), rng));
}

TrainStats HeatWeightAgent::Update(const std::vector<const ContinuousTransition*>& batch) {
  InitTorchThreads();  // this thread may not be the one that made the agent
  const char* who = "HeatWeightAgent::Update";
  if (batch.empty()) throw std::invalid_argument(std::string(who) + ": empty batch");
  Impl& m = *impl_;
  const int64_t B = static_cast<int64_t>(batch.size());
  const int64_t n = config_.observation_size;
  const int64_t A = config_.action_size;
  m.h_obs.resize(B * n);
  m.h_next.resize(B * n);
  m.h_action.resize(B * A);
  m.h_reward.resize(B);
  m.h_discount.resize(B);
  for (int64_t i = 0; i < B; ++i) {
    const ContinuousTransition& t = *batch[i];
    CheckObservation(who, t.observation, n, "an observation");
    CheckObservation(who, t.action, A, "an action");
    StageObservations(who, t.observation, t.next_observation, t.done, n, &m.h_obs[i * n], &m.h_next[i * n]);
    for (int64_t k = 0; k < A; ++k) m.h_action[i * A + k] = std::clamp(t.action[k], -1.0f, 1.0f);
    m.h_reward[i] = t.reward;
    m.h_discount[i] = t.done ? 0.0f : static_cast<float>(config_.gamma);
  }
  torch::Tensor obs = Stage(m.h_obs, {B, n}, m.device);
  torch::Tensor next = Stage(m.h_next, {B, n}, m.device);
  torch::Tensor action = Stage(m.h_action, {B, A}, m.device);
  torch::Tensor reward = Stage(m.h_reward, {B}, m.device);
  torch::Tensor discount = Stage(m.h_discount, {B}, m.device);

  TrainStats stats;
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    auto [next_a, next_logp] = m.Sample(next);
    torch::Tensor next_q = m.MinQ(m.q1t, m.q2t, next, next_a) - m.alpha_value * next_logp;
    y = reward + discount * next_q;
  }
  torch::Tensor in = torch::cat({obs, action}, 1);
  torch::Tensor q1 = m.q1->forward(in).view({B});
  torch::Tensor q2 = m.q2->forward(in).view({B});
  torch::Tensor critic_loss = torch::mse_loss(q1, y) + torch::mse_loss(q2, y);
  m.StepCritic(critic_loss, 0.0);
  stats.loss = critic_loss.item<double>();
  stats.mean_q = torch::min(q1, q2).detach().mean().item<double>();

  ++updates_;
  const uint64_t interval = static_cast<uint64_t>(config_.actor_update_interval);
  if (updates_ % interval == 0) {
    // TD3-style delayed actor updates, compensated as CleanRL does: as many
    // actor steps as critic steps overall.
    for (uint64_t i = 0; i < interval; ++i) {
      auto [a, logp] = m.Sample(obs);
      torch::Tensor actor_loss = (m.alpha_value * logp - m.MinQ(m.q1, m.q2, obs, a)).mean();
      m.StepActor(actor_loss, 0.0);
      torch::Tensor logp_d = logp.detach();
      stats.actor_loss = actor_loss.item<double>();
      stats.entropy = -logp_d.mean().item<double>();
      if (config_.autotune_alpha) {
        torch::Tensor alpha_loss = (-m.log_alpha.exp() * (logp_d + m.target_entropy)).mean();
        m.StepAlpha(alpha_loss);
        stats.alpha_loss = alpha_loss.item<double>();
      }
    }
    stats.actor_updated = true;
    m.host.Refresh(m.actor);
  }
  m.Polyak(config_.tau);
  stats.alpha = m.alpha_value;
  return stats;
}

std::string HeatWeightAgent::SerializeWeights() const {
  return WithTorchErrors("HeatWeightAgent::SerializeWeights", [&] { return impl_->SerializeActor(); });
}

void HeatWeightAgent::LoadWeights(const std::string& blob) { impl_->LoadActor(blob, "HeatWeightAgent::LoadWeights"); }

std::string HeatWeightAgent::SaveState() const {
  return WithTorchErrors("HeatWeightAgent::SaveState", [&] {
    torch::serialize::OutputArchive ar;
    WriteStateHeader(ar, kStateFormat, config_.ToJson(), updates_);
    impl_->Save(ar);
    ar.write("noise_state", impl_->noise.get_state(), /*is_buffer=*/true);
    return SaveArchive(ar);
  });
}

void HeatWeightAgent::LoadState(const std::string& bytes) {
  const std::string what = "heat-weight agent state";
  int64_t updates = 0;
  std::unique_ptr<Impl> fresh = WithTorchErrors("HeatWeightAgent::LoadState", [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(bytes.data(), bytes.size(), impl_->device);
    StateHeader header = ReadStateHeader(ar, what, kStateFormat);
    updates = header.updates;
    const HeatSacConfig saved = ParseStateConfig<HeatSacConfig>(header.config_json, what);
    if (saved.observation_size != config_.observation_size || saved.action_size != config_.action_size ||
        saved.hidden != config_.hidden)
      throw std::runtime_error(what + " was saved by an agent with other network sizes");
    auto out = std::make_unique<Impl>(config_, impl_->device);
    out->Load(ar, what);
    torch::Tensor state;
    if (!ar.try_read("noise_state", state, /*is_buffer=*/true))
      throw std::runtime_error(what + " lacks 'noise_state'");
    out->noise.set_state(state.to(torch::kCPU));
    return out;
  });
  impl_ = std::move(fresh);
  updates_ = static_cast<uint64_t>(updates);
}

void HeatWeightAgent::SaveCheckpoint(const std::string& path) const { WriteAgentCheckpoint(path, SaveState()); }

void HeatWeightAgent::LoadCheckpoint(const std::string& path) { LoadState(ReadAgentCheckpoint(path)); }

}  // namespace tensortier
