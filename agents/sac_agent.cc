// Discrete soft actor-critic in LibTorch (sac_agent.h). The networks,
// optimisers and their archive are SacCore's (sac_core.h), shared with the
// continuous heat-weight agent.
//
// Training uses torch::nn modules and torch::optim::Adam; the losses follow
// CleanRL's sac_atari.py, see the header. Acting does not touch LibTorch: a
// host mirror of the actor's parameters, refreshed after every actor
// update, runs a plain C++ forward pass.
//
// Concurrency: Act, ActionProbabilities and QValues may run on several
// threads at once, but not while Update, LoadWeights or LoadState runs.
#include "agents/sac_agent.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "agents/sac_core.h"
#include "agents/torch_helpers.h"

namespace tensortier {
using namespace agents_internal;
namespace {

constexpr const char* kStateFormat = "tensortier.sac.checkpoint";

void Validate(const SacConfig& c) {
  const char* who = "SacConfig";
  if (c.observation_size < 1) BadConfig(who, "observation_size must be at least 1");
  if (c.num_actions < 2 || c.num_actions > 256)
    BadConfig(who, "num_actions must be in [2, 256] (actions are stored as uint8)");
  CheckSacCoreSettings(who, c);
  if (c.target_update_interval < 1) BadConfig(who, "target_update_interval must be at least 1");
  if (c.actor_update_interval < 1) BadConfig(who, "actor_update_interval must be at least 1");
  if (c.batch_size < 1) BadConfig(who, "batch_size must be at least 1");
  if (!(c.target_entropy_scale >= 0 && c.target_entropy_scale <= 1))
    BadConfig(who, "target_entropy_scale must be in [0, 1] (of the uniform policy's entropy)");
  if (!(c.grad_clip_norm >= 0) || !std::isfinite(c.grad_clip_norm))
    BadConfig(who, "grad_clip_norm must be 0 (off) or positive");
  CheckPositive(who, "reward_scale", c.reward_scale);
  if (c.replay_capacity < 1) BadConfig(who, "replay_capacity must be at least 1");
  if (c.learning_starts < 0) BadConfig(who, "learning_starts must not be negative");
  if (c.updates_per_episode < 0) BadConfig(who, "updates_per_episode must not be negative");
  CheckDevice(who, c.device);
}



const ConfigJson<SacConfig>& JsonFields() {
  static const ConfigJson<SacConfig> fields("SacConfig", {
      {"observation_size", &SacConfig::observation_size},
      {"num_actions", &SacConfig::num_actions},
      {"hidden", &SacConfig::hidden},
      {"actor_learning_rate", &SacConfig::actor_learning_rate},
      {"critic_learning_rate", &SacConfig::critic_learning_rate},
      {"alpha_learning_rate", &SacConfig::alpha_learning_rate},
      {"gamma", &SacConfig::gamma},
      {"tau", &SacConfig::tau},
      {"target_update_interval", &SacConfig::target_update_interval},
      {"actor_update_interval", &SacConfig::actor_update_interval},
      {"batch_size", &SacConfig::batch_size},
      {"autotune_alpha", &SacConfig::autotune_alpha},
      {"initial_alpha", &SacConfig::initial_alpha},
      {"target_entropy_scale", &SacConfig::target_entropy_scale},
      {"grad_clip_norm", &SacConfig::grad_clip_norm},
      {"reward_scale", &SacConfig::reward_scale},
      {"replay_capacity", &SacConfig::replay_capacity},
      {"learning_starts", &SacConfig::learning_starts},
      {"updates_per_episode", &SacConfig::updates_per_episode},
      {"seed", &SacConfig::seed},
      {"device", &SacConfig::device},
  });
  return fields;
}

}  // namespace

std::string SacConfig::ToJson() const { return JsonFields().Write(*this); }

SacConfig SacConfig::FromJson(const std::string& text) {
  SacConfig c = JsonFields().Read(text);
  Validate(c);
  return c;
}

double SacConfig::TargetEntropy() const {
  // CleanRL: -scale * log(1 / |A|).
  return -target_entropy_scale * std::log(1.0 / static_cast<double>(num_actions));
}

// The layers of one Mlp as plain tensors: weights [out, in] and biases
// [out] (views into a FlatParams value), and where their gradients go.
struct LayerViews {
  std::vector<torch::Tensor> weight, bias, weight_grad, bias_grad;
  static LayerViews Of(const Mlp& net, bool with_grad) {
    LayerViews v;
    for (const auto& layer : net->layers) {
      v.weight.push_back(layer->weight);
      v.bias.push_back(layer->bias);
      if (with_grad) {
        v.weight_grad.push_back(layer->weight.grad());
        v.bias_grad.push_back(layer->bias.grad());
      }
    }
    return v;
  }
};

// One forward pass of an Linear-ReLU-...-Linear network through
// preallocated buffers, keeping each layer's output for the backward pass.
struct MlpPass {
  std::vector<torch::Tensor> out;          // out[l]: layer l after its ReLU; out.back(): logits
  std::vector<torch::Tensor> grad_hidden;  // [l]: dLoss/d(input of layer l), l >= 1
  std::vector<torch::Tensor> grad_pre;     // the same through the ReLU that produced it

  void Allocate(const std::vector<int64_t>& shape, int64_t batch, const torch::TensorOptions& f32) {
    out.clear();
    grad_hidden.clear();
    grad_pre.clear();
    for (size_t l = 0; l + 1 < shape.size(); ++l) {
      out.push_back(torch::empty({batch, shape[l + 1]}, f32));
      grad_hidden.push_back(torch::empty({batch, shape[l]}, f32));
      grad_pre.push_back(torch::empty({batch, shape[l]}, f32));
    }
  }

  const torch::Tensor& Forward(const torch::Tensor& x, const LayerViews& net) {
    const torch::Tensor* in = &x;
    input = x;
    for (size_t l = 0; l < out.size(); ++l) {
      at::addmm_out(out[l], net.bias[l], *in, net.weight[l].t());
      if (l + 1 < out.size()) out[l].relu_();
      in = &out[l];
    }
    return out.back();
  }

  // Writes dLoss/dparameters of the last Forward, given dLoss/dlogits, into
  // net's gradient views (overwriting them: every parameter gets one).
  void Backward(const torch::Tensor& grad_logits, LayerViews& net) {
    const torch::Tensor* g = &grad_logits;
    for (size_t l = out.size(); l-- > 0;) {
      const torch::Tensor& layer_in = l == 0 ? input : out[l - 1];
      at::mm_out(net.weight_grad[l], g->t(), layer_in);
      at::sum_out(net.bias_grad[l], *g, {0});
      if (l == 0) break;
      at::mm_out(grad_hidden[l], *g, net.weight[l]);
      // ReLU's backward, as autograd does it: through where the output is positive.
      at::threshold_backward_out(grad_pre[l], grad_hidden[l], out[l - 1], 0);
      g = &grad_pre[l];
    }
  }

  torch::Tensor input;
};

struct SacAgent::Impl : SacCore {
  const SacConfig config;
  double target_entropy;
  // Batch staging on the host.
  std::vector<float> h_obs, h_next, h_reward, h_discount, h_weight;
  std::vector<int64_t> h_action;

  // The update runs its own forward and backward passes (addmm / mm / ReLU
  // masks into buffers kept between updates, under InferenceMode) instead
  // of building an autograd graph: for networks this small, graph
  // construction, allocation and dispatch were most of an update's time.
  // The arithmetic is the autograd update's (the gradient of each loss
  // written out below); torch::optim::Adam still applies the steps, so
  // checkpoints and optimiser state are unchanged.
  LayerViews actor_net, q1_net, q2_net, q1t_net, q2t_net;
  int64_t batch = 0;  // the buffers below are shaped for this batch size
  MlpPass actor_pass, q1_pass, q2_pass, next_actor_pass, q1t_pass, q2t_pass;
  torch::Tensor obs, next, reward, discount, action, weight;  // the staged batch on the device
  torch::Tensor next_logp, next_p, next_q, next_v, y;          // critic target
  torch::Tensor q1a, q2a, e1, e2, grad_e, grad_q1, grad_q2;    // critic loss
  torch::Tensor logp, p, min_q, actor_term, actor_row, grad_logits;  // actor loss
  torch::Tensor alpha_grad;

  Impl(const SacConfig& c, torch::Device dev)
      : SacCore(dev, MlpShape(c.observation_size, c.hidden, c.num_actions),
                MlpShape(c.observation_size, c.hidden, c.num_actions), c.seed, c.actor_learning_rate,
                c.critic_learning_rate, c.alpha_learning_rate, c.initial_alpha),
        config(c),
        target_entropy(c.TargetEntropy()) {
    actor_net = LayerViews::Of(actor, true);
    q1_net = LayerViews::Of(q1, true);
    q2_net = LayerViews::Of(q2, true);
    q1t_net = LayerViews::Of(q1t, false);
    q2t_net = LayerViews::Of(q2t, false);
    alpha_grad = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  }

  // Shapes the host staging and the device buffers for batches of `b`.
  void EnsureBatch(int64_t b) {
    if (b == batch) return;
    batch = b;
    const int64_t n = config.observation_size, a = config.num_actions;
    h_obs.assign(b * n, 0.0f);
    h_next.assign(b * n, 0.0f);
    h_reward.assign(b, 0.0f);
    h_discount.assign(b, 0.0f);
    h_weight.assign(b, 0.0f);
    h_action.assign(b, 0);
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    auto stage = [&](std::vector<float>& v, std::vector<int64_t> shape) {
      return device.is_cpu() ? torch::from_blob(v.data(), shape, torch::kFloat32) : torch::empty(shape, f32);
    };
    obs = stage(h_obs, {b, n});
    next = stage(h_next, {b, n});
    reward = stage(h_reward, {b});
    discount = stage(h_discount, {b});
    weight = stage(h_weight, {b});
    action = device.is_cpu() ? torch::from_blob(h_action.data(), {b, 1}, torch::kInt64)
                             : torch::empty({b, 1}, torch::TensorOptions().dtype(torch::kInt64).device(device));
    for (MlpPass* pass : {&actor_pass, &next_actor_pass}) pass->Allocate(actor_shape, b, f32);
    for (MlpPass* pass : {&q1_pass, &q2_pass, &q1t_pass, &q2t_pass}) pass->Allocate(critic_shape, b, f32);
    for (torch::Tensor* t : {&next_logp, &next_p, &next_q, &grad_q1, &grad_q2, &logp, &p, &min_q, &actor_term,
                             &grad_logits})
      *t = torch::empty({b, a}, f32);
    for (torch::Tensor* t : {&next_v, &y, &e1, &e2, &grad_e, &actor_row}) *t = torch::empty({b}, f32);
    q1a = torch::empty({b, 1}, f32);
    q2a = torch::empty({b, 1}, f32);
  }

  // The host batch onto the device (on the CPU the tensors are views of it).
  void Upload(bool weighted) {
    if (device.is_cpu()) return;
    obs.copy_(torch::from_blob(h_obs.data(), obs.sizes(), torch::kFloat32));
    next.copy_(torch::from_blob(h_next.data(), next.sizes(), torch::kFloat32));
    reward.copy_(torch::from_blob(h_reward.data(), reward.sizes(), torch::kFloat32));
    discount.copy_(torch::from_blob(h_discount.data(), discount.sizes(), torch::kFloat32));
    action.copy_(torch::from_blob(h_action.data(), action.sizes(), torch::kInt64));
    if (weighted) weight.copy_(torch::from_blob(h_weight.data(), weight.sizes(), torch::kFloat32));
  }

  // Probabilities of one observation into p[num_actions], in double.
  void HostProbabilities(const float* x, double* p) const {
    const int a = config.num_actions;
    thread_local std::vector<float> logits;
    if (logits.size() < static_cast<size_t>(a)) logits.resize(a);
    host.Forward(x, logits.data());
    double max = *std::max_element(logits.begin(), logits.begin() + a);
    double sum = 0;
    for (int i = 0; i < a; ++i) sum += (p[i] = std::exp(static_cast<double>(logits[i]) - max));
    for (int i = 0; i < a; ++i) p[i] /= sum;
  }
};

SacAgent::SacAgent(SacConfig config) : config_(std::move(config)) {
  Validate(config_);
  impl_ = std::make_unique<Impl>(config_, ResolveDevice("SacAgent", config_.device));
}

AgentSchedule SacAgent::schedule() const {
  return {config_.replay_capacity, config_.learning_starts, config_.updates_per_episode};
}

SacAgent::~SacAgent() = default;
SacAgent::SacAgent(SacAgent&&) noexcept = default;
SacAgent& SacAgent::operator=(SacAgent&&) noexcept = default;

std::string SacAgent::device_name() const { return impl_->device.str(); }
double SacAgent::alpha() const { return impl_->alpha_value; }

int SacAgent::Act(const float* observation, double /*epsilon*/, std::mt19937_64& rng) const {
  return Act(observation, SacActMode::kSample, rng);
}

int SacAgent::Greedy(const float* observation) const {
  thread_local std::mt19937_64 unused(0);  // greedy acting draws nothing
  return Act(observation, SacActMode::kGreedy, unused);
}

int SacAgent::Act(const float* observation, SacActMode mode, std::mt19937_64& rng) const {
  const int a = config_.num_actions;
  thread_local std::vector<double> p;
  if (p.size() < static_cast<size_t>(a)) p.resize(a);
  impl_->HostProbabilities(observation, p.data());
  if (mode == SacActMode::kGreedy) return static_cast<int>(std::max_element(p.begin(), p.begin() + a) - p.begin());
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  for (int i = 0; i < a; ++i) {
    if (u < p[i]) return i;
    u -= p[i];
  }
  return a - 1;
}

std::vector<float> SacAgent::ActionProbabilities(const float* observation) const {
  std::vector<double> p(config_.num_actions);
  impl_->HostProbabilities(observation, p.data());
  return std::vector<float>(p.begin(), p.end());
}

std::vector<DenseLayer> SacAgent::GreedyNetwork() const {
  // The host mirror, refreshed after every actor update: what Act reads.
  const HostMlp& host = impl_->host;
  std::vector<DenseLayer> layers;
  for (const HostMlp::Span& span : host.spans) {
    DenseLayer l;
    l.in = span.in;
    l.out = span.out;
    l.weight.assign(host.flat.begin() + span.weight, host.flat.begin() + span.weight + span.in * span.out);
    l.bias.assign(host.flat.begin() + span.bias, host.flat.begin() + span.bias + span.out);
    layers.push_back(std::move(l));
  }
  return layers;
}

std::vector<float> SacAgent::QValues(const float* observation) const {
  const int64_t n = config_.observation_size;
  c10::InferenceMode guard;
  torch::Tensor x = torch::from_blob(const_cast<float*>(observation), {1, n}, torch::kFloat32).to(impl_->device);
  torch::Tensor q = torch::min(impl_->q1->forward(x), impl_->q2->forward(x)).to(torch::kCPU).contiguous();
  return std::vector<float>(q.data_ptr<float>(), q.data_ptr<float>() + q.numel());
}

TrainStats SacAgent::Update(Replay& replay, std::mt19937_64& rng) {
  if (replay.size() == 0) throw std::logic_error("SacAgent::Update: the replay buffer is empty");
  replay.SampleInto(static_cast<size_t>(config_.batch_size), rng, &sample_);
  if (!replay.prioritized()) return Update(sample_.transitions);
  TrainStats stats = Update(sample_.transitions, sample_.weights, &td_errors_);
  if (!stats.skipped) replay.UpdatePriorities(sample_.keys, td_errors_);
  return stats;
}

TrainStats SacAgent::Update(const std::vector<const Transition*>& batch, const std::vector<float>& importance_weights,
                            std::vector<double>* td_errors) {
  InitTorchThreads();  // this thread may not be the one that made the agent
  const char* who = "SacAgent::Update";
  if (batch.empty()) throw std::invalid_argument(std::string(who) + ": empty batch");
  if (!importance_weights.empty() && importance_weights.size() != batch.size())
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(importance_weights.size()) +
                                " importance weights for " + std::to_string(batch.size()) + " transitions");
  Impl& m = *impl_;
  const int64_t B = static_cast<int64_t>(batch.size());
  const int64_t n = config_.observation_size;
  const int64_t A = config_.num_actions;
  const bool weighted = !importance_weights.empty();

  // Stage the batch.
  m.EnsureBatch(B);
  for (int64_t i = 0; i < B; ++i) {
    const Transition& t = *batch[i];
    CheckObservation(who, t.observation, n, "an observation");
    StageObservations(who, t.observation, t.next_observation, t.done, n, &m.h_obs[i * n], &m.h_next[i * n]);
    if (t.action >= A)
      throw std::invalid_argument(std::string(who) + ": a transition has action " + std::to_string(t.action) +
                                  " but the agent has " + std::to_string(A) + " actions");
    m.h_action[i] = t.action;
    m.h_reward[i] = static_cast<float>(config_.reward_scale * t.reward);
    m.h_discount[i] = t.done ? 0.0f : static_cast<float>(config_.gamma);
  }
  if (weighted) std::copy(importance_weights.begin(), importance_weights.end(), m.h_weight.begin());

  TrainStats stats;
  const double alpha = m.alpha_value;
  const double inv_batch = 1.0 / static_cast<double>(B);
  {
    c10::InferenceMode inference;
    m.Upload(weighted);

    // Critic target, the exact expectation over the next action:
    // y = r + discount sum_a' pi(a'|s') [min_j Qt_j(s', a') - alpha log pi(a'|s')].
    at::log_softmax_out(m.next_logp, m.next_actor_pass.Forward(m.next, m.actor_net), 1);
    at::minimum_out(m.next_q, m.q1t_pass.Forward(m.next, m.q1t_net), m.q2t_pass.Forward(m.next, m.q2t_net));
    at::exp_out(m.next_p, m.next_logp);
    m.next_q.sub_(m.next_logp, alpha).mul_(m.next_p);
    at::sum_out(m.next_v, m.next_q, {1});
    at::addcmul_out(m.y, m.reward, m.discount, m.next_v);

    // Critics: loss = mean(w e1^2) + mean(w e2^2), e_j = Q_j(s, a) - y, so
    // dloss/dQ_j(s, a) = 2 w e_j / B at the taken action and 0 elsewhere.
    at::gather_out(m.q1a, m.q1_pass.Forward(m.obs, m.q1_net), 1, m.action);
    at::gather_out(m.q2a, m.q2_pass.Forward(m.obs, m.q2_net), 1, m.action);
    at::sub_out(m.e1, m.q1a.view({B}), m.y);
    at::sub_out(m.e2, m.q2a.view({B}), m.y);
    for (auto [e, grad_q, pass, net] : {std::tuple{&m.e1, &m.grad_q1, &m.q1_pass, &m.q1_net},
                                        std::tuple{&m.e2, &m.grad_q2, &m.q2_pass, &m.q2_net}}) {
      at::mul_out(m.grad_e, *e, 2.0 * inv_batch);
      if (weighted) m.grad_e.mul_(m.weight);
      grad_q->zero_().scatter_(1, m.action, m.grad_e.view({B, 1}));
      pass->Backward(*grad_q, *net);
    }
    if (config_.grad_clip_norm > 0) m.critic_flat->ClipGradNorm(config_.grad_clip_norm);

    torch::Tensor critic_loss = weighted ? (m.weight * m.e1.square()).mean() + (m.weight * m.e2.square()).mean()
                                         : m.e1.square().mean() + m.e2.square().mean();
    torch::Tensor all = torch::stack({critic_loss, torch::min(m.q1a, m.q2a).mean()}).to(torch::kCPU);
    stats.loss = all[0].item<double>();
    stats.mean_q = all[1].item<double>();
    if (td_errors) {
      torch::Tensor td = (0.5 * (m.e1.abs() + m.e2.abs())).to(torch::kCPU).to(torch::kDouble).contiguous();
      td_errors->assign(td.data_ptr<double>(), td.data_ptr<double>() + B);
    }
  }
  if (!std::isfinite(stats.loss)) {  // one NaN step would poison every weight
    stats.skipped = true;
    return stats;
  }
  // Outside InferenceMode: the optimiser's state must stay ordinary tensors.
  m.critic_opt->step();

  ++updates_;
  if (updates_ % static_cast<uint64_t>(config_.actor_update_interval) == 0) {
    torch::Tensor entropy, actor_loss, alpha_loss;
    {
      c10::InferenceMode inference;
      // Actor: loss = mean_b sum_a p_a f_a with f = alpha log p - min_j Q_j
      // (the updated critics, detached). Through p = softmax(z) and
      // log p = log_softmax(z): dloss/dz = p (f - sum_a p_a f_a) / B (the
      // alpha term's gradient sums to zero).
      at::log_softmax_out(m.logp, m.actor_pass.Forward(m.obs, m.actor_net), 1);
      at::exp_out(m.p, m.logp);
      at::minimum_out(m.min_q, m.q1_pass.Forward(m.obs, m.q1_net), m.q2_pass.Forward(m.obs, m.q2_net));
      at::mul_out(m.actor_term, m.logp, alpha).sub_(m.min_q);
      at::mul_out(m.grad_logits, m.p, m.actor_term);
      at::sum_out(m.actor_row, m.grad_logits, {1});
      actor_loss = m.actor_row.mean();
      m.actor_term.sub_(m.actor_row.view({B, 1}));
      at::mul_out(m.grad_logits, m.p, m.actor_term).mul_(inv_batch);
      m.actor_pass.Backward(m.grad_logits, m.actor_net);
      if (config_.grad_clip_norm > 0) m.actor_flat->ClipGradNorm(config_.grad_clip_norm);
      entropy = -(m.p * m.logp).sum(1).mean();
      if (config_.autotune_alpha) {
        // loss = mean_b sum_a p_a [-alpha (log p_a + H_target)] with p
        // detached; dloss/dlog_alpha is the loss itself.
        torch::Tensor pressure = (m.p * (m.logp + m.target_entropy)).sum(1).mean();
        alpha_loss = -m.log_alpha.detach().exp() * pressure;
        m.alpha_grad.copy_(alpha_loss.view({1}));
      }
    }
    m.actor_opt->step();
    if (config_.autotune_alpha) {
      m.log_alpha.mutable_grad() = m.alpha_grad;
      m.alpha_opt->step();
      m.alpha_value = AlphaOf(m.log_alpha);
      stats.alpha_loss = alpha_loss.item<double>();
    }
    stats.actor_loss = actor_loss.item<double>();
    stats.entropy = entropy.item<double>();
    stats.actor_updated = true;
    m.host.Refresh(m.actor);
  }
  if (updates_ % static_cast<uint64_t>(config_.target_update_interval) == 0) m.Polyak(config_.tau);
  stats.alpha = m.alpha_value;
  return stats;
}

std::string SacAgent::SerializeWeights() const {
  return WithTorchErrors("SacAgent::SerializeWeights", [&] { return impl_->SerializeActor(); });
}

void SacAgent::LoadWeights(const std::string& blob) { impl_->LoadActor(blob, "SacAgent::LoadWeights"); }

std::string SacAgent::SaveState() const {
  return WithTorchErrors("SacAgent::SaveState", [&] {
    torch::serialize::OutputArchive ar;
    WriteStateHeader(ar, kStateFormat, config_.ToJson(), updates_);
    impl_->Save(ar);
    return SaveArchive(ar);
  });
}

void SacAgent::LoadState(const std::string& bytes) {
  const std::string what = "SAC agent state";
  int64_t updates = 0;
  // Everything is loaded into a new Impl, which replaces the current one
  // only when the whole state has been read.
  std::unique_ptr<Impl> fresh = WithTorchErrors("SacAgent::LoadState", [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(bytes.data(), bytes.size(), impl_->device);
    StateHeader header = ReadStateHeader(ar, what, kStateFormat);
    updates = header.updates;
    const SacConfig saved = ParseStateConfig<SacConfig>(header.config_json, what);
    if (saved.observation_size != config_.observation_size || saved.num_actions != config_.num_actions ||
        saved.hidden != config_.hidden)
      throw std::runtime_error(
          what + " was saved by an agent with network " +
          ShapeText(MlpShape(saved.observation_size, saved.hidden, saved.num_actions)) + "; this agent's is " +
          ShapeText(MlpShape(config_.observation_size, config_.hidden, config_.num_actions)));
    auto out = std::make_unique<Impl>(config_, impl_->device);
    out->Load(ar, what);
    return out;
  });
  impl_ = std::move(fresh);
  updates_ = static_cast<uint64_t>(updates);
}

SacConfig SacAgent::StateConfig(const std::string& bytes, const std::string& what) {
  return ParseStateConfig<SacConfig>(StateConfigJson(bytes, what, kStateFormat), what);
}

SacConfig SacAgent::ReadCheckpointConfig(const std::string& path) {
  return StateConfig(ReadAgentCheckpoint(path), "checkpoint '" + path + "'");
}

std::unique_ptr<SacAgent> SacAgent::FromCheckpoint(const std::string& path, const std::string& device) {
  const std::string state = ReadAgentCheckpoint(path);
  SacConfig config = StateConfig(state, "checkpoint '" + path + "'");
  config.device = device;
  auto agent = std::make_unique<SacAgent>(config);
  agent->LoadState(state);
  return agent;
}

}  // namespace tensortier
