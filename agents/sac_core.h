// Internal to agents/: the soft actor-critic machinery that the discrete
// SAC agent (sac_agent.cc) and the continuous heat-weight agent
// (heat_weight_agent.cc) share: networks, their flat parameter storage,
// the actor's host mirror and SacCore (actor, twin critics, targets, log
// alpha, three Adam optimisers, and their archive).
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "agents/torch_helpers.h"

namespace tensortier {
namespace agents_internal {

// Linear-ReLU-...-Linear.
struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const std::vector<int64_t>& shape) {
    for (size_t i = 0; i + 1 < shape.size(); ++i)
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(shape[i], shape[i + 1])));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (i + 1 < layers.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(Mlp);

// A network with Linear's default initialisation (uniform in +-1/sqrt(fan_in)),
// drawn from a generator of our own so that the seed alone decides it.
Mlp MakeMlp(const std::vector<int64_t>& shape, uint64_t seed, torch::Device device);
// A copy of `source` whose parameters require no gradient (a target network).
Mlp CloneMlp(const Mlp& source, const std::vector<int64_t>& shape, torch::Device device);
void WriteMlp(torch::serialize::OutputArchive& ar, const std::vector<int64_t>& shape, const Mlp& net);
// A network written by WriteMlp, checked against `shape` and for
// non-finite values; CPU tensors in parameter order. Throws std::runtime_error.
std::vector<torch::Tensor> ReadMlp(torch::serialize::InputArchive& ar, const std::vector<int64_t>& shape,
                                   const std::string& what);
void AssignMlp(Mlp& net, const std::vector<torch::Tensor>& values);

// Host copy of a network's parameters (weight, bias per layer, row-major)
// for single-observation inference without LibTorch.
struct HostMlp {
  struct Span {
    int64_t in = 0, out = 0, weight = 0, bias = 0;
  };
  std::vector<Span> spans;
  std::vector<float> flat;
  int64_t max_width = 0;

  explicit HostMlp(const std::vector<int64_t>& shape) {
    int64_t off = 0;
    for (size_t i = 0; i + 1 < shape.size(); ++i) {
      Span s{shape[i], shape[i + 1], off, off + shape[i] * shape[i + 1]};
      off = s.bias + s.out;
      spans.push_back(s);
      max_width = std::max(max_width, s.out);
    }
    flat.assign(static_cast<size_t>(off), 0.0f);
  }

  void Refresh(const Mlp& net) {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < spans.size(); ++i) {
      torch::Tensor w = net->layers[i]->weight.detach().to(torch::kCPU).contiguous();
      torch::Tensor b = net->layers[i]->bias.detach().to(torch::kCPU).contiguous();
      std::memcpy(flat.data() + spans[i].weight, w.data_ptr<float>(), w.numel() * sizeof(float));
      std::memcpy(flat.data() + spans[i].bias, b.data_ptr<float>(), b.numel() * sizeof(float));
    }
  }

  // out[shape.back()] = net(x).
  void Forward(const float* x, float* out) const {
    thread_local std::vector<float> scratch;
    if (scratch.size() < static_cast<size_t>(2 * max_width)) scratch.resize(2 * max_width);
    const float* in = x;
    float* bufs[2] = {scratch.data(), scratch.data() + max_width};
    for (size_t l = 0; l < spans.size(); ++l) {
      const Span& s = spans[l];
      const bool last = l + 1 == spans.size();
      float* dst = last ? out : bufs[l % 2];
      const float* w = flat.data() + s.weight;
      const float* b = flat.data() + s.bias;
      for (int64_t o = 0; o < s.out; ++o) {
        const float* row = w + o * s.in;
        float acc[4] = {0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 4 <= s.in; i += 4)
          for (int k = 0; k < 4; ++k) acc[k] += row[i + k] * in[i + k];
        float v = (acc[0] + acc[2]) + (acc[1] + acc[3]);
        for (; i < s.in; ++i) v += row[i] * in[i];
        v += b[o];
        dst[o] = last ? v : std::max(v, 0.0f);
      }
      in = dst;
    }
  }
};

// Validation of the settings SacCore is built from, which the configs of
// both SAC agents (SacConfig, HeatSacConfig) carry under the same names.
template <typename Config>
void CheckSacCoreSettings(const char* who, const Config& c) {
  CheckHidden(who, c.hidden);
  CheckPositive(who, "actor_learning_rate", c.actor_learning_rate);
  CheckPositive(who, "critic_learning_rate", c.critic_learning_rate);
  CheckPositive(who, "alpha_learning_rate", c.alpha_learning_rate);
  CheckPositive(who, "initial_alpha", c.initial_alpha);
  if (!(c.gamma >= 0 && c.gamma <= 1)) BadConfig(who, "gamma must be in [0, 1]");
  if (!(c.tau > 0 && c.tau <= 1)) BadConfig(who, "tau must be in (0, 1]");
}

std::unique_ptr<torch::optim::Adam> MakeAdam(std::vector<torch::Tensor> params, double lr);
// exp(log alpha) on the host, computed the same way wherever it is refreshed
// (so that a restored agent reports exactly the alpha it was saved with).
double AlphaOf(const torch::Tensor& log_alpha);

// Parameters of one or more modules kept in one contiguous tensor, with
// their gradients in another: each module parameter becomes a leaf whose
// data is a view of `value` and whose .grad is a view of `grad` (autograd
// accumulates into an existing .grad in place). The optimiser, gradient
// clipping and Polyak averaging then work on one tensor each instead of one
// per layer, which is most of an update's cost for networks this small.
struct FlatParams {
  torch::Tensor value;  // leaf handed to torch::optim::Adam; .grad() is `grad`
  torch::Tensor grad;
  std::vector<torch::Tensor> members;

  FlatParams(std::vector<torch::Tensor> params, torch::Device device, bool trainable) : members(std::move(params)) {
    torch::NoGradGuard no_grad;
    int64_t numel = 0;
    for (const auto& p : members) numel += p.numel();
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    value = torch::empty({numel}, f32);
    if (trainable) grad = torch::zeros({numel}, f32);
    int64_t off = 0;
    for (auto& p : members) {
      const int64_t n = p.numel();
      torch::Tensor view = value.narrow(0, off, n).view(p.sizes());
      view.copy_(p);
      p.set_data(view);
      p.set_requires_grad(trainable);
      if (trainable) p.mutable_grad() = grad.narrow(0, off, n).view(p.sizes());
      off += n;
    }
    if (trainable) {
      value.set_requires_grad(true);
      value.mutable_grad() = grad;
    }
  }

  // Autograd accumulates into an existing .grad in place; were a member's
  // .grad ever replaced, its gradient would bypass the flat buffer and the
  // optimiser would silently see zeros. Cheap enough to check every step.
  void CheckGradients() const {
    for (const auto& p : members)
      if (!p.grad().defined() || !p.grad().is_alias_of(grad))
        throw std::logic_error("SacAgent: a parameter's gradient left the flat gradient buffer");
  }

  // clip_grad_norm_ over all members at once (max_norm > 0).
  void ClipGradNorm(double max_norm) {
    torch::NoGradGuard no_grad;
    torch::Tensor norm = grad.norm();
    grad.mul_((max_norm / (norm + 1e-6)).clamp_max_(1.0));
  }
};

// What the discrete and continuous agents share: an actor, twin critics
// and their Polyak targets, log alpha, three Adam optimisers, and the
// actor's host mirror.
struct SacCore {
  torch::Device device;
  std::vector<int64_t> actor_shape, critic_shape;
  Mlp actor{nullptr}, q1{nullptr}, q2{nullptr}, q1t{nullptr}, q2t{nullptr};
  torch::Tensor log_alpha;
  std::unique_ptr<FlatParams> actor_flat, critic_flat, target_flat;  // critics: q1 then q2
  std::unique_ptr<torch::optim::Adam> actor_opt, critic_opt, alpha_opt;
  HostMlp host;
  double alpha_value = 1.0;  // exp(log_alpha), cached on the host

  SacCore(torch::Device dev, std::vector<int64_t> actor_shape_, std::vector<int64_t> critic_shape_,
          uint64_t seed, double actor_lr, double critic_lr, double alpha_lr, double initial_alpha)
      : device(dev),
        actor_shape(std::move(actor_shape_)),
        critic_shape(std::move(critic_shape_)),
        host(actor_shape) {
    // Distinct seeds: the twin critics must start apart.
    actor = MakeMlp(actor_shape, seed, device);
    q1 = MakeMlp(critic_shape, seed + 0x9E3779B97F4A7C15ull, device);
    q2 = MakeMlp(critic_shape, seed + 2 * 0x9E3779B97F4A7C15ull, device);
    q1t = CloneMlp(q1, critic_shape, device);
    q2t = CloneMlp(q2, critic_shape, device);
    auto both = [](const Mlp& a, const Mlp& b) {
      std::vector<torch::Tensor> v = a->parameters();
      for (auto& p : b->parameters()) v.push_back(p);
      return v;
    };
    actor_flat = std::make_unique<FlatParams>(actor->parameters(), device, true);
    critic_flat = std::make_unique<FlatParams>(both(q1, q2), device, true);
    target_flat = std::make_unique<FlatParams>(both(q1t, q2t), device, false);
    log_alpha = torch::full({1}, std::log(initial_alpha),
                            torch::TensorOptions().dtype(torch::kFloat32).device(device))
                    .requires_grad_(true);
    alpha_value = AlphaOf(log_alpha);
    actor_opt = MakeAdam({actor_flat->value}, actor_lr);
    critic_opt = MakeAdam({critic_flat->value}, critic_lr);
    alpha_opt = MakeAdam({log_alpha}, alpha_lr);
    host.Refresh(actor);
  }

  void Polyak(double tau) {
    torch::NoGradGuard no_grad;
    target_flat->value.lerp_(critic_flat->value, tau);
  }

  // One autograd step of `loss` on the networks whose parameters `params`
  // holds; `clip` 0 leaves the gradient's norm as it is.
  static void Step(FlatParams& params, torch::optim::Adam& opt, const torch::Tensor& loss, double clip) {
    params.grad.zero_();
    loss.backward();
    params.CheckGradients();
    if (clip > 0) params.ClipGradNorm(clip);
    opt.step();
  }
  void StepCritic(const torch::Tensor& loss, double clip) { Step(*critic_flat, *critic_opt, loss, clip); }
  void StepActor(const torch::Tensor& loss, double clip) { Step(*actor_flat, *actor_opt, loss, clip); }

  void StepAlpha(const torch::Tensor& loss) {
    alpha_opt->zero_grad();
    loss.backward();
    alpha_opt->step();
    alpha_value = AlphaOf(log_alpha);
  }

  void Save(torch::serialize::OutputArchive& ar) const {
    auto net = [&](const char* key, const std::vector<int64_t>& shape, const Mlp& m) {
      torch::serialize::OutputArchive sub(ar.compilation_unit());
      WriteMlp(sub, shape, m);
      ar.write(key, sub);
    };
    net("actor", actor_shape, actor);
    net("q1", critic_shape, q1);
    net("q2", critic_shape, q2);
    net("q1_target", critic_shape, q1t);
    net("q2_target", critic_shape, q2t);
    ar.write("log_alpha", log_alpha.detach().to(torch::kCPU).clone(), /*is_buffer=*/true);
    auto opt = [&](const char* key, const torch::optim::Adam& o) {
      torch::serialize::OutputArchive sub(ar.compilation_unit());
      o.save(sub);
      ar.write(key, sub);
    };
    opt("actor_optimizer", *actor_opt);
    opt("critic_optimizer", *critic_opt);
    opt("alpha_optimizer", *alpha_opt);
  }

  // Loads a checkpoint written by Save into this (freshly built) core.
  // Throws; the caller discards the core on failure.
  void Load(torch::serialize::InputArchive& ar, const std::string& what) {
    auto net = [&](const char* key, const std::vector<int64_t>& shape, Mlp& m) {
      torch::serialize::InputArchive sub;
      if (!ar.try_read(key, sub)) throw std::runtime_error(what + " lacks network '" + key + "'");
      AssignMlp(m, ReadMlp(sub, shape, what + " (" + key + ")"));
    };
    net("actor", actor_shape, actor);
    net("q1", critic_shape, q1);
    net("q2", critic_shape, q2);
    net("q1_target", critic_shape, q1t);
    net("q2_target", critic_shape, q2t);
    torch::Tensor la;
    if (!ar.try_read("log_alpha", la, /*is_buffer=*/true) || la.numel() != 1 ||
        la.scalar_type() != torch::kFloat32 || !std::isfinite(la.to(torch::kCPU).item<float>()))
      throw std::runtime_error(what + " lacks a valid 'log_alpha'");
    {
      torch::NoGradGuard no_grad;
      log_alpha.copy_(la.view({1}));
    }
    alpha_value = AlphaOf(log_alpha);
    auto opt = [&](const char* key, torch::optim::Adam& o) {
      torch::serialize::InputArchive sub;
      if (!ar.try_read(key, sub)) throw std::runtime_error(what + " lacks '" + key + "'");
      o.load(sub);
    };
    opt("actor_optimizer", *actor_opt);
    opt("critic_optimizer", *critic_opt);
    opt("alpha_optimizer", *alpha_opt);
    host.Refresh(actor);
  }

  std::string SerializeActor() const {
    torch::serialize::OutputArchive ar;
    WriteMlp(ar, actor_shape, actor);
    return SaveArchive(ar);
  }

  void LoadActor(const std::string& blob, const char* who) {
    std::vector<torch::Tensor> values = WithTorchErrors(std::string(who) + ": unreadable weights blob", [&] {
      torch::serialize::InputArchive ar;
      ar.load_from(blob.data(), blob.size(), torch::Device(torch::kCPU));
      return ReadMlp(ar, actor_shape, "weights blob");
    });
    AssignMlp(actor, values);
    host.Refresh(actor);
  }
};


// Stages host vectors as a device tensor (a view of the vector on the CPU).
torch::Tensor Stage(std::vector<float>& v, std::vector<int64_t> shape, torch::Device device);
// Throws std::invalid_argument unless `v` holds `size` floats.
void CheckObservation(const char* who, const std::vector<float>& v, int64_t size, const char* field);
// Copies a transition's observation (already checked to hold n floats) and
// its next observation into staging rows of n floats; a terminal
// transition may leave the next observation empty (zeros are staged).
void StageObservations(const char* who, const std::vector<float>& observation, const std::vector<float>& next,
                       bool done, int64_t n, float* observation_row, float* next_row);

}  // namespace agents_internal
}  // namespace tensortier
