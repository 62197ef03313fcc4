// Double DQN in LibTorch. Layout choices made for speed on small networks:
//  * every network keeps its parameters in one contiguous tensor (the
//    Linear modules' parameters are views of it), and the online network's
//    gradients live in one contiguous tensor too, so gradient clipping, Adam
//    and the target sync are a handful of whole-tensor operations instead of
//    several per parameter;
//  * Update runs the forward and backward passes itself (addmm / mm / ReLU
//    mask into preallocated buffers, under InferenceMode) instead of building
//    an autograd graph: the online network sees [states; next states] in one
//    pass, and no tensor is allocated per update on the CPU. The test
//    UpdateMatchesAutogradReference checks it against autograd +
//    huber_loss + clip_grad_norm_ + torch::optim::Adam;
//  * Adam is applied to the flat tensors with exactly the arithmetic of
//    torch::optim::Adam (betas 0.9/0.999, eps 1e-8, no weight decay);
//  * single-observation inference (Act, QValues) bypasses LibTorch and runs a
//    plain C++ forward pass over the online parameters (read in place on the
//    CPU, through a host mirror refreshed after updates on CUDA), with no
//    allocation once a thread has warmed up.
// Concurrency: Act and QValues may run on several threads at once, but not
// while Update, SyncTarget, LoadWeights or LoadState runs.
#include "agents/dqn_agent.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "agents/dqfd.h"
#include "agents/flat_net.h"
#include "agents/torch_helpers.h"

namespace tensortier {
using namespace agents_internal;
namespace {

constexpr double kAdamBeta1 = 0.9;
constexpr double kAdamBeta2 = 0.999;
constexpr double kAdamEps = 1e-8;
constexpr const char* kStateFormat = "tensortier.dqn.checkpoint";

// ---------------------------------------------------------------------------
// Config validation and JSON.

[[noreturn]] void BadConfig(const std::string& what) { agents_internal::BadConfig("DqnConfig", what); }

void Validate(const DqnConfig& c) {
  if (c.observation_size < 1) BadConfig("observation_size must be at least 1");
  if (c.num_actions < 1 || c.num_actions > 256)
    BadConfig("num_actions must be in [1, 256] (actions are stored as uint8)");
  CheckHidden("DqnConfig", c.hidden);
  if (!(c.learning_rate > 0) || !std::isfinite(c.learning_rate))
    BadConfig("learning_rate must be positive");
  if (!(c.gamma >= 0 && c.gamma <= 1)) BadConfig("gamma must be in [0, 1]");
  if (c.batch_size < 1) BadConfig("batch_size must be at least 1");
  if (!(c.huber_delta > 0) || !std::isfinite(c.huber_delta))
    BadConfig("huber_delta must be positive");
  if (!(c.grad_clip_norm > 0)) BadConfig("grad_clip_norm must be positive");
  if (c.target_update_interval < 1) BadConfig("target_update_interval must be at least 1");
  if (!(c.epsilon_start >= 0 && c.epsilon_start <= 1)) BadConfig("epsilon_start must be in [0, 1]");
  if (!(c.epsilon_end >= 0 && c.epsilon_end <= 1)) BadConfig("epsilon_end must be in [0, 1]");
  if (c.epsilon_decay_episodes < 0) BadConfig("epsilon_decay_episodes must not be negative");
  if (c.replay_capacity < 1) BadConfig("replay_capacity must be at least 1");
  if (c.learning_starts < 0) BadConfig("learning_starts must not be negative");
  if (c.updates_per_episode < 0) BadConfig("updates_per_episode must not be negative");
  if (!(c.demo_fraction >= 0 && c.demo_fraction <= 1)) BadConfig("demo_fraction must be in [0, 1]");
  if (!(c.demo_margin >= 0) || !std::isfinite(c.demo_margin)) BadConfig("demo_margin must be finite and >= 0");
  if (!(c.demo_loss_weight >= 0) || !std::isfinite(c.demo_loss_weight))
    BadConfig("demo_loss_weight must be finite and >= 0");
  if (!(c.demo_class_balance >= 0 && c.demo_class_balance <= 1)) BadConfig("demo_class_balance must be in [0, 1]");
  CheckDevice("DqnConfig", c.device);
}

std::vector<int64_t> NetworkShape(const DqnConfig& c) { return MlpShape(c.observation_size, c.hidden, c.num_actions); }

// ---------------------------------------------------------------------------
// Networks.

// Host-side forward pass for one observation; weights in the flat layout.
inline float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

const ConfigJson<DqnConfig>& JsonFields() {
  static const ConfigJson<DqnConfig> fields("DqnConfig", {
      {"observation_size", &DqnConfig::observation_size},
      {"num_actions", &DqnConfig::num_actions},
      {"hidden", &DqnConfig::hidden},
      {"learning_rate", &DqnConfig::learning_rate},
      {"gamma", &DqnConfig::gamma},
      {"batch_size", &DqnConfig::batch_size},
      {"huber_delta", &DqnConfig::huber_delta},
      {"grad_clip_norm", &DqnConfig::grad_clip_norm},
      {"target_update_interval", &DqnConfig::target_update_interval},
      {"epsilon_start", &DqnConfig::epsilon_start},
      {"epsilon_end", &DqnConfig::epsilon_end},
      {"epsilon_decay_episodes", &DqnConfig::epsilon_decay_episodes},
      {"replay_capacity", &DqnConfig::replay_capacity},
      {"learning_starts", &DqnConfig::learning_starts},
      {"updates_per_episode", &DqnConfig::updates_per_episode},
      {"seed", &DqnConfig::seed},
      {"device", &DqnConfig::device},
      {"demo_fraction", &DqnConfig::demo_fraction},
      {"demo_margin", &DqnConfig::demo_margin},
      {"demo_loss_weight", &DqnConfig::demo_loss_weight},
      {"demo_class_balance", &DqnConfig::demo_class_balance},
  });
  return fields;
}

}  // namespace

std::string DqnConfig::ToJson() const { return JsonFields().Write(*this); }

DqnConfig DqnConfig::FromJson(const std::string& text) {
  DqnConfig c = JsonFields().Read(text);
  Validate(c);
  return c;
}

// ---------------------------------------------------------------------------

struct DqnAgent::Impl {
  torch::Device device;
  bool on_cpu;
  int64_t batch;
  std::vector<int64_t> shape;
  int64_t numel = 0;  // declared before spans, which sets it
  std::vector<LayerSpan> spans;
  int64_t max_width = 0;
  FlatNet online;  // activations for [states; next states], 2 * batch rows
  FlatNet target;  // activations for next states, batch rows
  torch::Tensor exp_avg;     // Adam moments, flat
  torch::Tensor exp_avg_sq;
  torch::Tensor denom;       // Adam scratch
  int64_t adam_step = 0;
  torch::Tensor weight_mean;  // flat, as online.flat (FoldWeightsIntoMean)
  uint64_t weights_folded = 0;

  // Batch staging on the host: [states; next states], actions,
  // [reward; discount (gamma, or 0 at episode ends)].
  std::vector<float> h_obs;
  std::vector<int64_t> h_act;
  std::vector<float> h_rd;
  std::vector<float> h_weight;  // importance weights (prioritised replay)
  Demonstrations demonstrations;  // DQfD: the expert's transitions (agents/dqfd.h)
  std::vector<const Transition*> demo_sample;  // scratch: a batch of demonstrations
  int64_t expert_rows = 0;      // of the batch being trained, the first rows that are demonstrations

  // Device tensors of one batch (views of the host staging on the CPU).
  torch::Tensor obs;          // [2B, obs]
  torch::Tensor states;       // [B, obs]
  torch::Tensor next_states;  // [B, obs]
  torch::Tensor actions;      // [B, 1] int64
  torch::Tensor rd;           // [2, B]
  torch::Tensor reward, discount;  // [B] views of rd
  torch::Tensor weight;       // [B, 1] importance weights
  torch::Tensor h_obs_t, h_act_t, h_rd_t, h_weight_t;  // host tensors to copy from (GPU only)

  // Update scratch.
  torch::Tensor q_states;      // [B, A] view of the online activations
  torch::Tensor q_next_online; // [B, A] view
  torch::Tensor next_action;   // [B, 1] int64
  torch::Tensor next_q;        // [B, 1]
  torch::Tensor td_target;     // [B]
  torch::Tensor q_taken;       // [B, 1]
  torch::Tensor td_error;      // [B]
  torch::Tensor grad_q;        // [B, A]
  std::vector<torch::Tensor> layer_inputs;  // per layer, [B, in] views (states rows)
  std::vector<torch::Tensor> grad_hidden;   // per layer >= 1, dLoss/d(input), [B, in]
  std::vector<torch::Tensor> grad_pre;      // per layer >= 1, through the ReLU below, [B, in]

  // Flat gradients and their per-layer views.
  torch::Tensor grad;
  std::vector<torch::Tensor> grad_weights, grad_biases;

  // Host copy of the online parameters for inference when they live on a GPU.
  mutable std::mutex mirror_mu;
  mutable std::atomic<bool> mirror_stale{true};
  mutable std::vector<float> mirror;

  static std::vector<LayerSpan> Spans(const std::vector<int64_t>& shape, int64_t* numel) {
    std::vector<LayerSpan> spans;
    int64_t off = 0;
    for (size_t i = 0; i + 1 < shape.size(); ++i) {
      LayerSpan s;
      s.in = shape[i];
      s.out = shape[i + 1];
      s.weight_offset = off;
      off += s.in * s.out;
      s.bias_offset = off;
      off += s.out;
      spans.push_back(s);
    }
    *numel = off;
    return spans;
  }

  Impl(const DqnConfig& c, torch::Device dev)
      : device(dev),
        on_cpu(dev.is_cpu()),
        batch(c.batch_size),
        shape(NetworkShape(c)),
        spans(Spans(shape, &numel)),
        online(shape, spans, numel, 2 * batch, dev, c.seed),
        target(shape, spans, numel, batch, dev, c.seed) {
    for (int64_t w : shape) max_width = std::max(max_width, w);
    torch::NoGradGuard no_grad;
    target.flat.copy_(online.flat);
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
    auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(dev);
    exp_avg = torch::zeros_like(online.flat);
    exp_avg_sq = torch::zeros_like(online.flat);
    denom = torch::empty_like(online.flat);

    const int64_t n = c.observation_size, a = c.num_actions;
    h_obs.assign(static_cast<size_t>(2 * batch * n), 0.0f);
    h_act.assign(static_cast<size_t>(batch), 0);
    h_rd.assign(static_cast<size_t>(2 * batch), 0.0f);
    h_weight.assign(static_cast<size_t>(batch), 1.0f);
    h_obs_t = torch::from_blob(h_obs.data(), {2 * batch, n}, torch::kFloat32);
    h_act_t = torch::from_blob(h_act.data(), {batch, 1}, torch::kInt64);
    h_rd_t = torch::from_blob(h_rd.data(), {2, batch}, torch::kFloat32);
    h_weight_t = torch::from_blob(h_weight.data(), {batch, 1}, torch::kFloat32);
    if (on_cpu) {
      obs = h_obs_t;
      actions = h_act_t;
      rd = h_rd_t;
      weight = h_weight_t;
    } else {
      obs = torch::empty({2 * batch, n}, f32);
      actions = torch::empty({batch, 1}, i64);
      rd = torch::empty({2, batch}, f32);
      weight = torch::empty({batch, 1}, f32);
    }
    states = obs.narrow(0, 0, batch);
    next_states = obs.narrow(0, batch, batch);
    reward = rd[0];
    discount = rd[1];

    q_states = online.activations.back().narrow(0, 0, batch);
    q_next_online = online.activations.back().narrow(0, batch, batch);
    next_action = torch::empty({batch, 1}, i64);
    next_q = torch::empty({batch, 1}, f32);
    td_target = torch::empty({batch}, f32);
    q_taken = torch::empty({batch, 1}, f32);
    td_error = torch::empty({batch}, f32);
    grad_q = torch::empty({batch, a}, f32);
    for (size_t l = 0; l < spans.size(); ++l) {
      layer_inputs.push_back(l == 0 ? states : online.activations[l - 1].narrow(0, 0, batch));
      grad_hidden.push_back(l == 0 ? torch::Tensor() : torch::empty({batch, spans[l].in}, f32));
      grad_pre.push_back(l == 0 ? torch::Tensor() : torch::empty({batch, spans[l].in}, f32));
    }

    grad = torch::zeros_like(online.flat);
    for (const LayerSpan& s : spans) {
      grad_weights.push_back(grad.narrow(0, s.weight_offset, s.in * s.out).view({s.out, s.in}));
      grad_biases.push_back(grad.narrow(0, s.bias_offset, s.out));
    }
  }

  const float* HostWeights() const {
    if (on_cpu) return online.flat.data_ptr<float>();
    if (mirror_stale.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mirror_mu);
      if (mirror_stale.load(std::memory_order_relaxed)) {
        torch::Tensor cpu = online.flat.detach().to(torch::kCPU).contiguous();
        mirror.assign(cpu.data_ptr<float>(), cpu.data_ptr<float>() + numel);
        mirror_stale.store(false, std::memory_order_release);
      }
    }
    return mirror.data();
  }

  void Changed() { mirror_stale.store(true, std::memory_order_release); }

  // Q-values of one observation into q[num_actions].
  void HostForward(const float* x, float* q) const {
    const float* w = HostWeights();
    thread_local std::vector<float> scratch;
    if (scratch.size() < static_cast<size_t>(2 * max_width)) scratch.resize(2 * max_width);
    const float* in = x;
    float* bufs[2] = {scratch.data(), scratch.data() + max_width};
    for (size_t l = 0; l < spans.size(); ++l) {
      const LayerSpan& s = spans[l];
      bool last = l + 1 == spans.size();
      float* out = last ? q : bufs[l % 2];
      const float* weight = w + s.weight_offset;
      const float* bias = w + s.bias_offset;
      for (int64_t o = 0; o < s.out; ++o) {
        float v = Dot(weight + o * s.in, in, s.in) + bias[o];
        out[o] = last ? v : std::max(v, 0.0f);
      }
      in = out;
    }
  }

  // Copies CPU tensors (already validated) into a network's parameters.
  static void Assign(FlatNet& net, const std::vector<torch::Tensor>& values) {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < values.size(); ++i) net.params[i].copy_(values[i]);
  }
};

DqnAgent::DqnAgent(DqnConfig config) : config_(std::move(config)) {
  Validate(config_);
  torch::Device device = ResolveDevice("DqnAgent", config_.device);
  impl_ = std::make_unique<Impl>(config_, device);
}

DqnAgent::~DqnAgent() = default;
DqnAgent::DqnAgent(DqnAgent&&) noexcept = default;
DqnAgent& DqnAgent::operator=(DqnAgent&&) noexcept = default;

std::string DqnAgent::device_name() const { return impl_->device.str(); }

AgentSchedule DqnAgent::schedule() const {
  return {config_.replay_capacity, config_.learning_starts, config_.updates_per_episode};
}

int DqnAgent::Act(const float* observation, double epsilon, std::mt19937_64& rng) const {
  const int actions = config_.num_actions;
  if (epsilon > 0) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng) < epsilon) return std::uniform_int_distribution<int>(0, actions - 1)(rng);
  }
  return Greedy(observation);
}

int DqnAgent::Greedy(const float* observation) const {
  const int actions = config_.num_actions;
  thread_local std::vector<float> q;
  if (q.size() < static_cast<size_t>(actions)) q.resize(actions);
  impl_->HostForward(observation, q.data());
  return static_cast<int>(std::max_element(q.begin(), q.begin() + actions) - q.begin());
}

std::vector<DenseLayer> DqnAgent::GreedyNetwork() const {
  const float* w = impl_->HostWeights();
  std::vector<DenseLayer> layers;
  for (const LayerSpan& span : impl_->spans) {
    DenseLayer l;
    l.in = span.in;
    l.out = span.out;
    l.weight.assign(w + span.weight_offset, w + span.weight_offset + span.in * span.out);
    l.bias.assign(w + span.bias_offset, w + span.bias_offset + span.out);
    layers.push_back(std::move(l));
  }
  return layers;
}

std::vector<float> DqnAgent::QValues(const float* observation) const {
  std::vector<float> q(config_.num_actions);
  impl_->HostForward(observation, q.data());
  return q;
}

void DqnAgent::SetDemonstrations(std::vector<Transition> demonstrations) {
  impl_->demonstrations.Set(std::move(demonstrations), config_.observation_size, config_.num_actions,
                            "DqnAgent::SetDemonstrations");
}

size_t DqnAgent::demonstrations() const { return impl_->demonstrations.size(); }

TrainStats DqnAgent::PretrainStep(std::mt19937_64& rng) {
  Impl& m = *impl_;
  if (m.demonstrations.empty()) throw std::logic_error("DqnAgent::PretrainStep: no demonstrations");
  m.demo_sample.resize(static_cast<size_t>(m.batch));
  m.demonstrations.Draw(m.demo_sample.size(), m.demo_sample, rng, config_.demo_class_balance);
  m.expert_rows = m.batch;
  TrainStats stats = Update(m.demo_sample, {}, nullptr);
  m.expert_rows = 0;
  return stats;
}

TrainStats DqnAgent::Update(Replay& replay, std::mt19937_64& rng) {
  if (replay.size() == 0) throw std::logic_error("DqnAgent::Update: the replay buffer is empty");
  replay.SampleInto(static_cast<size_t>(impl_->batch), rng, &sample_);
  if (!replay.prioritized()) {
    Impl& m = *impl_;
    const int64_t demo_rows = m.demonstrations.RowsOf(m.batch, config_.demo_fraction);
    if (demo_rows > 0)
      m.demonstrations.Draw(static_cast<size_t>(demo_rows), sample_.transitions, rng, config_.demo_class_balance);
    m.expert_rows = demo_rows;
    TrainStats stats = Update(sample_.transitions, {}, nullptr);
    m.expert_rows = 0;
    return stats;
  }
  TrainStats stats = Update(sample_.transitions, sample_.weights, &abs_td_errors_);
  if (!stats.skipped) replay.UpdatePriorities(sample_.keys, abs_td_errors_);
  return stats;
}

TrainStats DqnAgent::Update(const std::vector<const Transition*>& sample,
                            const std::vector<float>& importance_weights, std::vector<double>* abs_td_errors) {
  InitTorchThreads();  // this thread may not be the one that made the agent
  Impl& m = *impl_;
  const int64_t batch = m.batch;
  const int64_t obs = config_.observation_size;
  const float gamma = static_cast<float>(config_.gamma);
  // The network's buffers are sized for batch_size rows.
  if (sample.size() != static_cast<size_t>(batch))
    throw std::invalid_argument("DqnAgent::Update: a batch of " + std::to_string(sample.size()) +
                                " transitions, the agent's batch size is " + std::to_string(batch));
  const bool weighted = !importance_weights.empty();
  if (weighted && importance_weights.size() != sample.size())
    throw std::invalid_argument("DqnAgent::Update: " + std::to_string(importance_weights.size()) +
                                " importance weights for " + std::to_string(sample.size()) + " transitions");
  for (float w : importance_weights)
    if (!(w >= 0) || !std::isfinite(w))
      throw std::invalid_argument("DqnAgent::Update: importance weights must be finite and non-negative");

  // Stage the batch on the host.
  if (weighted) std::copy(importance_weights.begin(), importance_weights.end(), m.h_weight.begin());
  float* h_obs = m.h_obs.data();
  float* h_next = h_obs + batch * obs;
  for (int64_t i = 0; i < batch; ++i) {
    const Transition& t = *sample[i];
    if (t.observation.size() != static_cast<size_t>(obs))
      throw std::invalid_argument("DqnAgent::Update: a transition has an observation of " +
                                  std::to_string(t.observation.size()) + " floats, expected " +
                                  std::to_string(obs));
    std::memcpy(h_obs + i * obs, t.observation.data(), obs * sizeof(float));
    if (t.next_observation.size() == static_cast<size_t>(obs)) {
      std::memcpy(h_next + i * obs, t.next_observation.data(), obs * sizeof(float));
    } else if (t.done && t.next_observation.empty()) {
      std::memset(h_next + i * obs, 0, obs * sizeof(float));
    } else {
      throw std::invalid_argument("DqnAgent::Update: a transition has a next observation of " +
                                  std::to_string(t.next_observation.size()) +
                                  " floats, expected " + std::to_string(obs));
    }
    if (t.action >= config_.num_actions)
      throw std::invalid_argument("DqnAgent::Update: a transition has action " +
                                  std::to_string(t.action) + " but the agent has " +
                                  std::to_string(config_.num_actions) + " actions");
    m.h_act[i] = t.action;
    m.h_rd[i] = t.reward;
    m.h_rd[batch + i] = t.done ? 0.0f : gamma;
  }

  // Everything below is plain tensor arithmetic into preallocated buffers:
  // no autograd graph, no allocations on the CPU.
  c10::InferenceMode inference;
  if (!m.on_cpu) {
    m.obs.copy_(m.h_obs_t);
    m.actions.copy_(m.h_act_t);
    m.rd.copy_(m.h_rd_t);
    if (weighted) m.weight.copy_(m.h_weight_t);
  }

  // Forward: the online network on states and next states in one pass, the
  // target network on next states.
  m.online.Forward(m.obs);
  const torch::Tensor& q_next_target = m.target.Forward(m.next_states);

  // Double-DQN target: the online network picks the next action, the target
  // network values it.
  at::argmax_out(m.next_action, m.q_next_online, 1, /*keepdim=*/true);
  at::gather_out(m.next_q, q_next_target, 1, m.next_action);
  at::addcmul_out(m.td_target, m.reward, m.discount, m.next_q.view({batch}));
  at::gather_out(m.q_taken, m.q_states, 1, m.actions);
  at::sub_out(m.td_error, m.q_taken.view({batch}), m.td_target);

  // Huber loss (mean over the batch) and its gradient with respect to the
  // Q-values: clamp(error, -delta, delta) / batch at the taken actions.
  const double delta = config_.huber_delta;
  m.grad_q.zero_();
  m.grad_q.scatter_(1, m.actions, m.td_error.view({batch, 1}));
  m.grad_q.clamp_(-delta, delta);
  m.grad_q.mul_(1.0 / static_cast<double>(batch));
  // Weighted loss mean_i w_i huber(e_i): each row's gradient scales by w_i.
  if (weighted) m.grad_q.mul_(m.weight);
  double margin_loss = 0;
  if (m.expert_rows > 0 && config_.demo_loss_weight > 0)
    margin_loss = AddLargeMarginGradient(m.q_states, m.actions, m.expert_rows, batch, config_.demo_margin,
                                         config_.demo_loss_weight, m.grad_q);

  // Backward through Linear(-ReLU) layers, into the flat gradient.
  const size_t layers = m.spans.size();
  const torch::Tensor* grad_out = &m.grad_q;
  for (size_t l = layers; l-- > 0;) {
    at::mm_out(m.grad_weights[l], grad_out->t(), m.layer_inputs[l]);
    at::sum_out(m.grad_biases[l], *grad_out, {0});
    if (l == 0) break;
    at::mm_out(m.grad_hidden[l], *grad_out, m.online.params[2 * l]);
    at::threshold_backward_out(m.grad_pre[l], m.grad_hidden[l], m.layer_inputs[l], 0);
    grad_out = &m.grad_pre[l];
  }

  TrainStats stats;
  // clip_grad_norm_ over all parameters at once.
  torch::Tensor norm = m.grad.norm();
  if (m.on_cpu) {
    stats.grad_norm = norm.item<double>();
    double coef = config_.grad_clip_norm / (stats.grad_norm + 1e-6);
    if (coef < 1) m.grad.mul_(coef);
    // Loss and mean Q from the host-visible buffers.
    const float* err = m.td_error.data_ptr<float>();
    const float* q = m.q_taken.data_ptr<float>();
    double loss = 0, sum_q = 0;
    if (abs_td_errors) abs_td_errors->resize(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) {
      double e = std::abs(static_cast<double>(err[i]));
      const double huber = e < delta ? 0.5 * e * e : delta * (e - 0.5 * delta);
      loss += weighted ? m.h_weight[i] * huber : huber;
      sum_q += q[i];
      if (abs_td_errors) (*abs_td_errors)[i] = e;
    }
    stats.loss = loss / batch + margin_loss;
    stats.mean_q = sum_q / batch;
  } else {
    m.grad.mul_((config_.grad_clip_norm / (norm + 1e-6)).clamp_max_(1.0));
    torch::Tensor loss = weighted ? (at::huber_loss(m.q_taken.view({batch}), m.td_target, at::Reduction::None, delta) *
                                     m.weight.view({batch}))
                                        .mean()
                                  : at::huber_loss(m.q_taken.view({batch}), m.td_target, at::Reduction::Mean, delta);
    torch::Tensor all = torch::stack({loss, m.q_taken.mean(), norm}).to(torch::kCPU);
    const float* v = all.data_ptr<float>();
    stats.loss = v[0] + margin_loss;
    stats.mean_q = v[1];
    stats.grad_norm = v[2];
    if (abs_td_errors) {
      torch::Tensor td = m.td_error.abs().to(torch::kCPU).to(torch::kDouble).contiguous();
      abs_td_errors->assign(td.data_ptr<double>(), td.data_ptr<double>() + batch);
    }
  }

  // One NaN step would make every weight NaN for the rest of the run.
  if (!std::isfinite(stats.loss) || !std::isfinite(stats.grad_norm)) {
    stats.skipped = true;
    return stats;
  }
  // Adam, with torch::optim::Adam's arithmetic.
  ++m.adam_step;
  double bias1 = 1 - std::pow(kAdamBeta1, static_cast<double>(m.adam_step));
  double bias2 = 1 - std::pow(kAdamBeta2, static_cast<double>(m.adam_step));
  m.exp_avg.mul_(kAdamBeta1).add_(m.grad, 1 - kAdamBeta1);
  m.exp_avg_sq.mul_(kAdamBeta2).addcmul_(m.grad, m.grad, 1 - kAdamBeta2);
  at::sqrt_out(m.denom, m.exp_avg_sq);
  m.denom.div_(std::sqrt(bias2)).add_(kAdamEps);
  m.online.flat.addcdiv_(m.exp_avg, m.denom, -config_.learning_rate / bias1);
  m.Changed();

  ++updates_;
  if (updates_ % static_cast<uint64_t>(config_.target_update_interval) == 0) SyncTarget();
  return stats;
}

void DqnAgent::SetLearningRate(double learning_rate) {
  if (!(learning_rate > 0) || !std::isfinite(learning_rate))
    throw std::invalid_argument("DqnAgent::SetLearningRate: the learning rate must be positive and finite");
  config_.learning_rate = learning_rate;  // Update reads it at every step
}

void DqnAgent::SyncTarget() {
  torch::NoGradGuard no_grad;
  impl_->target.flat.copy_(impl_->online.flat);
}

void DqnAgent::FoldWeightsIntoMean() {
  torch::NoGradGuard no_grad;
  Impl& m = *impl_;
  if (m.weights_folded == 0)
    m.weight_mean = m.online.flat.clone();
  else
    m.weight_mean.add_(m.online.flat - m.weight_mean, 1.0 / static_cast<double>(m.weights_folded + 1));
  ++m.weights_folded;
}

uint64_t DqnAgent::weights_folded() const { return impl_->weights_folded; }

void DqnAgent::LoadWeightMean() {
  Impl& m = *impl_;
  if (m.weights_folded == 0) throw std::logic_error("DqnAgent::LoadWeightMean: no weights were folded into the mean");
  torch::NoGradGuard no_grad;
  m.online.flat.copy_(m.weight_mean);
  m.Changed();
}

void DqnAgent::ClearWeightMean() {
  impl_->weight_mean = torch::Tensor();
  impl_->weights_folded = 0;
}

std::string DqnAgent::SerializeWeights() const {
  return WithTorchErrors("DqnAgent::SerializeWeights", [&] {
    torch::serialize::OutputArchive ar;
    WriteNetwork(ar, impl_->shape, impl_->online.params);
    return SaveArchive(ar);
  });
}

void DqnAgent::LoadWeights(const std::string& blob) {
  // Everything is read and checked before any parameter changes.
  std::vector<torch::Tensor> values =
      WithTorchErrors("DqnAgent::LoadWeights: unreadable weights blob", [&] {
        torch::serialize::InputArchive ar;
        ar.load_from(blob.data(), blob.size(), torch::Device(torch::kCPU));
        return ReadNetwork(ar, impl_->shape, "weights blob");
      });
  Impl::Assign(impl_->online, values);
  impl_->Changed();
}

std::string DqnAgent::SaveState() const {
  const Impl& m = *impl_;
  return WithTorchErrors("DqnAgent::SaveState", [&] {
    torch::serialize::OutputArchive ar;
    WriteStateHeader(ar, kStateFormat, config_.ToJson(), updates_);
    ar.write("adam_step", c10::IValue(m.adam_step));
    torch::serialize::OutputArchive online(ar.compilation_unit());
    WriteNetwork(online, m.shape, m.online.params);
    ar.write("online", online);
    torch::serialize::OutputArchive target(ar.compilation_unit());
    WriteNetwork(target, m.shape, m.target.params);
    ar.write("target", target);
    ar.write("adam_exp_avg", m.exp_avg.to(torch::kCPU).clone(), /*is_buffer=*/true);
    ar.write("adam_exp_avg_sq", m.exp_avg_sq.to(torch::kCPU).clone(), /*is_buffer=*/true);
    return SaveArchive(ar);
  });
}

DqnConfig DqnAgent::StateConfig(const std::string& bytes, const std::string& what) {
  return ParseStateConfig<DqnConfig>(StateConfigJson(bytes, what, kStateFormat), what);
}

DqnConfig DqnAgent::ReadCheckpointConfig(const std::string& path) {
  return StateConfig(ReadAgentCheckpoint(path), "checkpoint '" + path + "'");
}

std::unique_ptr<DqnAgent> DqnAgent::FromCheckpoint(const std::string& path, const std::string& device) {
  const std::string state = ReadAgentCheckpoint(path);
  const std::string what = "checkpoint '" + path + "'";
  DqnConfig config = StateConfig(state, what);
  config.device = device;
  auto agent = std::make_unique<DqnAgent>(config);
  agent->LoadState(state);
  return agent;
}

void DqnAgent::LoadState(const std::string& bytes) {
  Impl& m = *impl_;
  const std::string what = "DQN agent state";
  struct Loaded {
    std::vector<torch::Tensor> online, target;
    torch::Tensor exp_avg, exp_avg_sq;
    int64_t updates = 0, adam_step = 0;
  };
  Loaded in = WithTorchErrors("DqnAgent::LoadState", [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(bytes.data(), bytes.size(), torch::Device(torch::kCPU));
    StateHeader header = ReadStateHeader(ar, what, kStateFormat);
    const DqnConfig saved = ParseStateConfig<DqnConfig>(header.config_json, what);
    if (NetworkShape(saved) != m.shape)
      throw std::runtime_error(what + " was saved by an agent with network " +
                               ShapeText(NetworkShape(saved)) + "; this agent's network is " +
                               ShapeText(m.shape));
    Loaded out;
    c10::IValue adam_step = ReadValue(ar, "adam_step", what);
    if (!adam_step.isInt() || adam_step.toInt() < 0) throw std::runtime_error(what + " has invalid counters");
    out.updates = header.updates;
    out.adam_step = adam_step.toInt();
    torch::serialize::InputArchive online, target;
    if (!ar.try_read("online", online) || !ar.try_read("target", target))
      throw std::runtime_error(what + " lacks a network");
    out.online = ReadNetwork(online, m.shape, what + " (online network)");
    out.target = ReadNetwork(target, m.shape, what + " (target network)");
    for (auto [key, dst] : {std::pair<const char*, torch::Tensor*>{"adam_exp_avg", &out.exp_avg},
                            {"adam_exp_avg_sq", &out.exp_avg_sq}}) {
      if (!ar.try_read(key, *dst, /*is_buffer=*/true))
        throw std::runtime_error(what + " lacks '" + key + "'");
      if (dst->dim() != 1 || dst->numel() != m.numel || dst->scalar_type() != torch::kFloat32)
        throw std::runtime_error(what + ": '" + key + "' does not match the network");
    }
    return out;
  });

  torch::NoGradGuard no_grad;
  Impl::Assign(m.online, in.online);
  Impl::Assign(m.target, in.target);
  m.exp_avg.copy_(in.exp_avg);
  m.exp_avg_sq.copy_(in.exp_avg_sq);
  m.adam_step = in.adam_step;
  updates_ = static_cast<uint64_t>(in.updates);
  m.Changed();
}

}  // namespace tensortier
