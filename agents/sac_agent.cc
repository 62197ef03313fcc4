// Soft actor-critic in LibTorch: the discrete agent of sac_agent.h and the
// continuous heat-weight agent of heat_weight_agent.h share this translation
// unit (one slow LibTorch compile instead of two) and the network, optimiser
// and serialisation plumbing below.
//
// Training uses plain autograd with torch::nn modules and torch::optim::Adam
// (correctness first); the losses follow CleanRL's sac_atari.py (discrete)
// and sac_continuous_action.py (continuous), see the headers. Acting does
// not touch LibTorch: a host mirror of the actor's parameters, refreshed
// after every actor update, runs a plain C++ forward pass.
//
// Concurrency: Act, ActionProbabilities and QValues may run on several
// threads at once, but not while Update, LoadWeights or LoadCheckpoint runs.
#include "agents/sac_agent.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "agents/heat_weight_agent.h"
#include "common/files.h"

namespace tensortier {
namespace {

using Json = nlohmann::json;

constexpr const char* kSacCheckpointFormat = "tensortier.sac.checkpoint";
constexpr const char* kHeatCheckpointFormat = "tensortier.heat_sac.checkpoint";
constexpr int64_t kCheckpointVersion = 1;

// ---------------------------------------------------------------------------
// Config JSON helpers. `who` prefixes every message ("SacConfig").

[[noreturn]] void BadConfig(const char* who, const std::string& what) {
  throw std::invalid_argument(std::string(who) + ": " + what);
}

std::string Describe(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + s;
}

int AsInt(const char* who, const std::string& key, const Json& v) {
  if (!v.is_number_integer()) BadConfig(who, "'" + key + "' must be an integer, got " + Describe(v));
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int>::max()))
      BadConfig(who, "'" + key + "' is out of range: " + v.dump());
    return static_cast<int>(u);
  }
  int64_t i = v.get<int64_t>();
  if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max())
    BadConfig(who, "'" + key + "' is out of range: " + v.dump());
  return static_cast<int>(i);
}

double AsDouble(const char* who, const std::string& key, const Json& v) {
  if (!v.is_number()) BadConfig(who, "'" + key + "' must be a number, got " + Describe(v));
  return v.get<double>();
}

uint64_t AsU64(const char* who, const std::string& key, const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  BadConfig(who, "'" + key + "' must be a non-negative integer, got " + Describe(v));
}

bool AsBool(const char* who, const std::string& key, const Json& v) {
  if (!v.is_boolean()) BadConfig(who, "'" + key + "' must be true or false, got " + Describe(v));
  return v.get<bool>();
}

std::string AsString(const char* who, const std::string& key, const Json& v) {
  if (!v.is_string()) BadConfig(who, "'" + key + "' must be a string, got " + Describe(v));
  return v.get<std::string>();
}

std::vector<int> AsIntList(const char* who, const std::string& key, const Json& v) {
  if (!v.is_array()) BadConfig(who, "'" + key + "' must be an array of integers, got " + Describe(v));
  std::vector<int> out;
  for (const auto& h : v) out.push_back(AsInt(who, key + "[]", h));
  return out;
}

Json ParseObject(const char* who, const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    BadConfig(who, std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) BadConfig(who, "expected a JSON object, got " + Describe(j));
  return j;
}

bool ValidDevice(const std::string& device) {
  if (device == "auto" || device == "cpu" || device == "cuda") return true;
  return device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 8 &&
         std::all_of(device.begin() + 5, device.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void CheckPositive(const char* who, const char* key, double v) {
  if (!(v > 0) || !std::isfinite(v)) BadConfig(who, std::string(key) + " must be positive");
}

void Validate(const SacConfig& c) {
  const char* who = "SacConfig";
  if (c.observation_size < 1) BadConfig(who, "observation_size must be at least 1");
  if (c.num_actions < 2 || c.num_actions > 256)
    BadConfig(who, "num_actions must be in [2, 256] (actions are stored as uint8)");
  if (c.hidden.empty()) BadConfig(who, "hidden must list at least one layer size");
  for (int h : c.hidden)
    if (h < 1) BadConfig(who, "hidden layer sizes must be at least 1");
  CheckPositive(who, "actor_learning_rate", c.actor_learning_rate);
  CheckPositive(who, "critic_learning_rate", c.critic_learning_rate);
  CheckPositive(who, "alpha_learning_rate", c.alpha_learning_rate);
  CheckPositive(who, "initial_alpha", c.initial_alpha);
  if (!(c.gamma >= 0 && c.gamma <= 1)) BadConfig(who, "gamma must be in [0, 1]");
  if (!(c.tau > 0 && c.tau <= 1)) BadConfig(who, "tau must be in (0, 1]");
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
  if (!ValidDevice(c.device)) BadConfig(who, "device '" + c.device + "' is not one of auto, cpu, cuda, cuda:N");
}

void Validate(const HeatSacConfig& c) {
  const char* who = "HeatSacConfig";
  if (c.observation_size < 1) BadConfig(who, "observation_size must be at least 1");
  if (c.action_size < 1) BadConfig(who, "action_size must be at least 1");
  if (c.hidden.empty()) BadConfig(who, "hidden must list at least one layer size");
  for (int h : c.hidden)
    if (h < 1) BadConfig(who, "hidden layer sizes must be at least 1");
  CheckPositive(who, "actor_learning_rate", c.actor_learning_rate);
  CheckPositive(who, "critic_learning_rate", c.critic_learning_rate);
  CheckPositive(who, "alpha_learning_rate", c.alpha_learning_rate);
  CheckPositive(who, "initial_alpha", c.initial_alpha);
  if (!(c.gamma >= 0 && c.gamma <= 1)) BadConfig(who, "gamma must be in [0, 1]");
  if (!(c.tau > 0 && c.tau <= 1)) BadConfig(who, "tau must be in (0, 1]");
  if (c.batch_size < 1) BadConfig(who, "batch_size must be at least 1");
  if (c.actor_update_interval < 1) BadConfig(who, "actor_update_interval must be at least 1");
  if (!std::isfinite(c.target_entropy)) BadConfig(who, "target_entropy must be finite");
  if (!(c.log_std_min < c.log_std_max) || !std::isfinite(c.log_std_min) || !std::isfinite(c.log_std_max))
    BadConfig(who, "need log_std_min < log_std_max");
  if (!ValidDevice(c.device)) BadConfig(who, "device '" + c.device + "' is not one of auto, cpu, cuda, cuda:N");
}

torch::Device ResolveDevice(const char* who, const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "auto")
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (!torch::cuda::is_available())
    throw std::runtime_error(std::string(who) + ": device '" + name +
                             "' was requested but CUDA is not available to this LibTorch build "
                             "or machine (use \"auto\" or \"cpu\")");
  int index = name.size() > 5 ? std::stoi(name.substr(5)) : 0;
  int count = static_cast<int>(torch::cuda::device_count());
  if (index >= count)
    throw std::runtime_error(std::string(who) + ": device '" + name + "' does not exist (" +
                             std::to_string(count) + " CUDA device(s))");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

// ---------------------------------------------------------------------------
// Networks.

std::vector<int64_t> MlpShape(int in, const std::vector<int>& hidden, int out) {
  std::vector<int64_t> shape{in};
  for (int h : hidden) shape.push_back(h);
  shape.push_back(out);
  return shape;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "-" : "") + std::to_string(shape[i]);
  return s;
}

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
Mlp MakeMlp(const std::vector<int64_t>& shape, uint64_t seed, torch::Device device) {
  Mlp net(shape);
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (auto& layer : net->layers) {
    double bound = 1.0 / std::sqrt(static_cast<double>(layer->weight.size(1)));
    layer->weight.uniform_(-bound, bound, gen);
    layer->bias.uniform_(-bound, bound, gen);
  }
  net->to(device);
  return net;
}

Mlp CloneMlp(const Mlp& source, const std::vector<int64_t>& shape, torch::Device device) {
  Mlp net(shape);
  net->to(device);
  torch::NoGradGuard no_grad;
  auto dst = net->parameters();
  auto src = source->parameters();
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
  for (auto& p : dst) p.set_requires_grad(false);
  return net;
}

void WriteMlp(torch::serialize::OutputArchive& ar, const std::vector<int64_t>& shape, const Mlp& net) {
  ar.write("shape", torch::tensor(shape, torch::kInt64), /*is_buffer=*/true);
  for (size_t i = 0; i < net->layers.size(); ++i) {
    torch::serialize::OutputArchive layer(ar.compilation_unit());
    layer.write("weight", net->layers[i]->weight.detach().to(torch::kCPU).clone());
    layer.write("bias", net->layers[i]->bias.detach().to(torch::kCPU).clone());
    ar.write("fc" + std::to_string(i), layer);
  }
}

// Reads a network written by WriteMlp, checked against `shape`; CPU tensors
// in parameter order (weight, bias, weight, ...). Throws std::runtime_error.
std::vector<torch::Tensor> ReadMlp(torch::serialize::InputArchive& ar, const std::vector<int64_t>& shape,
                                   const std::string& what) {
  torch::Tensor stored;
  if (!ar.try_read("shape", stored, /*is_buffer=*/true) || stored.dim() != 1 ||
      stored.scalar_type() != torch::kInt64)
    throw std::runtime_error(what + " has no network shape record");
  stored = stored.to(torch::kCPU).contiguous();
  std::vector<int64_t> got(stored.data_ptr<int64_t>(), stored.data_ptr<int64_t>() + stored.numel());
  if (got != shape)
    throw std::runtime_error(what + " holds a network of shape " + ShapeText(got) +
                             " but this agent's network is " + ShapeText(shape));
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i + 1 < shape.size(); ++i) {
    std::string name = "fc" + std::to_string(i);
    torch::serialize::InputArchive layer;
    if (!ar.try_read(name, layer)) throw std::runtime_error(what + " lacks layer " + name);
    for (const char* field : {"weight", "bias"}) {
      torch::Tensor t;
      if (!layer.try_read(field, t)) throw std::runtime_error(what + " lacks " + name + "." + field);
      std::vector<int64_t> want = std::string(field) == "weight" ? std::vector<int64_t>{shape[i + 1], shape[i]}
                                                                 : std::vector<int64_t>{shape[i + 1]};
      if (t.sizes().vec() != want || t.scalar_type() != torch::kFloat32)
        throw std::runtime_error(what + ": " + name + "." + field + " has shape " + ShapeText(t.sizes().vec()) +
                                 ", expected " + ShapeText(want) + " (Float)");
      torch::Tensor v = t.detach().to(torch::kCPU).contiguous();
      if (!torch::isfinite(v).all().item<bool>())
        throw std::runtime_error(what + ": " + name + "." + field + " holds non-finite values");
      out.push_back(v);
    }
  }
  return out;
}

void AssignMlp(Mlp& net, const std::vector<torch::Tensor>& values) {
  torch::NoGradGuard no_grad;
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

std::string SaveArchive(torch::serialize::OutputArchive& ar) {
  std::ostringstream os;
  ar.save_to(os);
  return os.str();
}

template <typename Fn>
auto WithTorchErrors(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw std::runtime_error(what + ": " + e.what_without_backtrace());
  } catch (const std::runtime_error&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

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

std::unique_ptr<torch::optim::Adam> MakeAdam(std::vector<torch::Tensor> params, double lr) {
  return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(lr));
}

// exp(log alpha) on the host, computed the same way wherever it is refreshed
// (so that a restored agent reports exactly the alpha it was saved with).
double AlphaOf(const torch::Tensor& log_alpha) {
  return std::exp(static_cast<double>(log_alpha.detach().to(torch::kCPU).item<float>()));
}

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

  void StepCritic(const torch::Tensor& loss, double clip) {
    critic_flat->grad.zero_();
    loss.backward();
    critic_flat->CheckGradients();
    if (clip > 0) critic_flat->ClipGradNorm(clip);
    critic_opt->step();
  }

  void StepActor(const torch::Tensor& loss, double clip) {
    actor_flat->grad.zero_();
    loss.backward();
    actor_flat->CheckGradients();
    if (clip > 0) actor_flat->ClipGradNorm(clip);
    actor_opt->step();
  }

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
torch::Tensor Stage(std::vector<float>& v, std::vector<int64_t> shape, torch::Device device) {
  torch::Tensor t = torch::from_blob(v.data(), shape, torch::kFloat32);
  return device.is_cpu() ? t : t.to(device);
}

void CheckObservation(const char* who, const std::vector<float>& v, int64_t size, const char* field) {
  if (v.size() != static_cast<size_t>(size))
    throw std::invalid_argument(std::string(who) + ": a transition has " + field + " of " +
                                std::to_string(v.size()) + " floats, expected " + std::to_string(size));
}

// Reads the common checkpoint header and returns the stored config JSON.
std::string ReadCheckpointHeader(torch::serialize::InputArchive& ar, const std::string& what, const char* format,
                                 int64_t* updates) {
  auto read_value = [&](const char* key) {
    c10::IValue v;
    if (!ar.try_read(key, v)) throw std::runtime_error(what + " lacks '" + key + "'");
    return v;
  };
  c10::IValue f = read_value("format");
  if (!f.isString() || f.toStringRef() != format)
    throw std::runtime_error(what + " is not a " + format + " file");
  c10::IValue version = read_value("version");
  if (!version.isInt() || version.toInt() != kCheckpointVersion)
    throw std::runtime_error(what + " has an unsupported version");
  c10::IValue u = read_value("updates");
  if (!u.isInt() || u.toInt() < 0) throw std::runtime_error(what + " has an invalid update counter");
  *updates = u.toInt();
  c10::IValue config = read_value("config");
  if (!config.isString()) throw std::runtime_error(what + " has no config record");
  return config.toStringRef();
}

}  // namespace

// ===========================================================================
// Discrete SAC.

std::string SacConfig::ToJson() const {
  Json j = {
      {"observation_size", observation_size},
      {"num_actions", num_actions},
      {"hidden", hidden},
      {"actor_learning_rate", actor_learning_rate},
      {"critic_learning_rate", critic_learning_rate},
      {"alpha_learning_rate", alpha_learning_rate},
      {"gamma", gamma},
      {"tau", tau},
      {"target_update_interval", target_update_interval},
      {"actor_update_interval", actor_update_interval},
      {"batch_size", batch_size},
      {"autotune_alpha", autotune_alpha},
      {"initial_alpha", initial_alpha},
      {"target_entropy_scale", target_entropy_scale},
      {"grad_clip_norm", grad_clip_norm},
      {"reward_scale", reward_scale},
      {"replay_capacity", replay_capacity},
      {"learning_starts", learning_starts},
      {"updates_per_episode", updates_per_episode},
      {"seed", seed},
      {"device", device},
  };
  return j.dump(2);
}

SacConfig SacConfig::FromJson(const std::string& text) {
  const char* who = "SacConfig";
  Json j = ParseObject(who, text);
  SacConfig c;
  for (const auto& [key, v] : j.items()) {
    if (key == "observation_size") c.observation_size = AsInt(who, key, v);
    else if (key == "num_actions") c.num_actions = AsInt(who, key, v);
    else if (key == "hidden") c.hidden = AsIntList(who, key, v);
    else if (key == "actor_learning_rate") c.actor_learning_rate = AsDouble(who, key, v);
    else if (key == "critic_learning_rate") c.critic_learning_rate = AsDouble(who, key, v);
    else if (key == "alpha_learning_rate") c.alpha_learning_rate = AsDouble(who, key, v);
    else if (key == "gamma") c.gamma = AsDouble(who, key, v);
    else if (key == "tau") c.tau = AsDouble(who, key, v);
    else if (key == "target_update_interval") c.target_update_interval = AsInt(who, key, v);
    else if (key == "actor_update_interval") c.actor_update_interval = AsInt(who, key, v);
    else if (key == "batch_size") c.batch_size = AsInt(who, key, v);
    else if (key == "autotune_alpha") c.autotune_alpha = AsBool(who, key, v);
    else if (key == "initial_alpha") c.initial_alpha = AsDouble(who, key, v);
    else if (key == "target_entropy_scale") c.target_entropy_scale = AsDouble(who, key, v);
    else if (key == "grad_clip_norm") c.grad_clip_norm = AsDouble(who, key, v);
    else if (key == "reward_scale") c.reward_scale = AsDouble(who, key, v);
    else if (key == "replay_capacity") c.replay_capacity = AsInt(who, key, v);
    else if (key == "learning_starts") c.learning_starts = AsInt(who, key, v);
    else if (key == "updates_per_episode") c.updates_per_episode = AsInt(who, key, v);
    else if (key == "seed") c.seed = AsU64(who, key, v);
    else if (key == "device") c.device = AsString(who, key, v);
    else BadConfig(who, "unknown key '" + key + "'");
  }
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

SacAgent::~SacAgent() = default;
SacAgent::SacAgent(SacAgent&&) noexcept = default;
SacAgent& SacAgent::operator=(SacAgent&&) noexcept = default;

std::string SacAgent::device_name() const { return impl_->device.str(); }
double SacAgent::alpha() const { return impl_->alpha_value; }

int SacAgent::Act(const float* observation, double /*epsilon*/, std::mt19937_64& rng) const {
  return Act(observation, SacActMode::kSample, rng);
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

std::vector<float> SacAgent::QValues(const float* observation) const {
  const int64_t n = config_.observation_size;
  c10::InferenceMode guard;
  torch::Tensor x = torch::from_blob(const_cast<float*>(observation), {1, n}, torch::kFloat32).to(impl_->device);
  torch::Tensor q = torch::min(impl_->q1->forward(x), impl_->q2->forward(x)).to(torch::kCPU).contiguous();
  return std::vector<float>(q.data_ptr<float>(), q.data_ptr<float>() + q.numel());
}

SacUpdateStats SacAgent::Update(const ReplayBuffer& replay, std::mt19937_64& rng) {
  if (replay.size() == 0) throw std::logic_error("SacAgent::Update: the replay buffer is empty");
  return Update(replay.Sample(static_cast<size_t>(config_.batch_size), rng));
}

SacUpdateStats SacAgent::Update(PrioritizedReplay& replay, std::mt19937_64& rng) {
  if (replay.size() == 0) throw std::logic_error("SacAgent::Update: the replay buffer is empty");
  PrioritizedSample s = replay.Sample(static_cast<size_t>(config_.batch_size), rng);
  std::vector<double> td;
  SacUpdateStats stats = Update(s.transitions, s.weights, &td);
  if (!stats.skipped) replay.UpdatePriorities(s.keys, td);
  return stats;
}

SacUpdateStats SacAgent::Update(const std::vector<const Transition*>& batch,
                                const std::vector<float>& importance_weights, std::vector<double>* td_errors) {
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
    std::memcpy(&m.h_obs[i * n], t.observation.data(), n * sizeof(float));
    if (t.next_observation.size() == static_cast<size_t>(n))
      std::memcpy(&m.h_next[i * n], t.next_observation.data(), n * sizeof(float));
    else if (t.done && t.next_observation.empty())
      std::memset(&m.h_next[i * n], 0, n * sizeof(float));
    else
      CheckObservation(who, t.next_observation, n, "a next observation");
    if (t.action >= A)
      throw std::invalid_argument(std::string(who) + ": a transition has action " + std::to_string(t.action) +
                                  " but the agent has " + std::to_string(A) + " actions");
    m.h_action[i] = t.action;
    m.h_reward[i] = static_cast<float>(config_.reward_scale * t.reward);
    m.h_discount[i] = t.done ? 0.0f : static_cast<float>(config_.gamma);
  }
  if (weighted) std::copy(importance_weights.begin(), importance_weights.end(), m.h_weight.begin());

  SacUpdateStats stats;
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
    stats.critic_loss = all[0].item<double>();
    stats.mean_q = all[1].item<double>();
    if (td_errors) {
      torch::Tensor td = (0.5 * (m.e1.abs() + m.e2.abs())).to(torch::kCPU).to(torch::kDouble).contiguous();
      td_errors->assign(td.data_ptr<double>(), td.data_ptr<double>() + B);
    }
  }
  if (!std::isfinite(stats.critic_loss)) {  // one NaN step would poison every weight
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

void SacAgent::SaveCheckpoint(const std::string& path) const {
  std::string data = WithTorchErrors("SacAgent::SaveCheckpoint", [&] {
    torch::serialize::OutputArchive ar;
    ar.write("format", c10::IValue(std::string(kSacCheckpointFormat)));
    ar.write("version", c10::IValue(kCheckpointVersion));
    ar.write("config", c10::IValue(config_.ToJson()));
    ar.write("updates", c10::IValue(static_cast<int64_t>(updates_)));
    impl_->Save(ar);
    return SaveArchive(ar);
  });
  WriteFileAtomically(path, data);
}

void SacAgent::LoadCheckpoint(const std::string& path) {
  std::string data = ReadFile(path);
  const std::string what = "checkpoint '" + path + "'";
  int64_t updates = 0;
  // Everything is loaded into a new Impl, which replaces the current one
  // only when the whole checkpoint has been read.
  std::unique_ptr<Impl> fresh = WithTorchErrors("SacAgent::LoadCheckpoint", [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(data.data(), data.size(), impl_->device);
    std::string config_json = ReadCheckpointHeader(ar, what, kSacCheckpointFormat, &updates);
    SacConfig saved;
    try {
      saved = SacConfig::FromJson(config_json);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(what + " has an invalid config: " + e.what());
    }
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

SacConfig SacAgent::ReadCheckpointConfig(const std::string& path) {
  std::string data = ReadFile(path);
  const std::string what = "checkpoint '" + path + "'";
  return WithTorchErrors("SacAgent::ReadCheckpointConfig", [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(data.data(), data.size(), torch::Device(torch::kCPU));
    int64_t updates = 0;
    std::string config_json = ReadCheckpointHeader(ar, what, kSacCheckpointFormat, &updates);
    try {
      return SacConfig::FromJson(config_json);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(what + " has an invalid config: " + e.what());
    }
  });
}

std::unique_ptr<SacAgent> SacAgent::FromCheckpoint(const std::string& path, const std::string& device) {
  SacConfig config = ReadCheckpointConfig(path);
  config.device = device;
  auto agent = std::make_unique<SacAgent>(config);
  agent->LoadCheckpoint(path);
  return agent;
}

// ===========================================================================
// Continuous SAC for heat weights.

std::string HeatSacConfig::ToJson() const {
  Json j = {
      {"observation_size", observation_size},
      {"action_size", action_size},
      {"hidden", hidden},
      {"actor_learning_rate", actor_learning_rate},
      {"critic_learning_rate", critic_learning_rate},
      {"alpha_learning_rate", alpha_learning_rate},
      {"gamma", gamma},
      {"tau", tau},
      {"batch_size", batch_size},
      {"actor_update_interval", actor_update_interval},
      {"autotune_alpha", autotune_alpha},
      {"initial_alpha", initial_alpha},
      {"target_entropy", target_entropy},
      {"log_std_min", log_std_min},
      {"log_std_max", log_std_max},
      {"seed", seed},
      {"device", device},
  };
  return j.dump(2);
}

HeatSacConfig HeatSacConfig::FromJson(const std::string& text) {
  const char* who = "HeatSacConfig";
  Json j = ParseObject(who, text);
  HeatSacConfig c;
  for (const auto& [key, v] : j.items()) {
    if (key == "observation_size") c.observation_size = AsInt(who, key, v);
    else if (key == "action_size") c.action_size = AsInt(who, key, v);
    else if (key == "hidden") c.hidden = AsIntList(who, key, v);
    else if (key == "actor_learning_rate") c.actor_learning_rate = AsDouble(who, key, v);
    else if (key == "critic_learning_rate") c.critic_learning_rate = AsDouble(who, key, v);
    else if (key == "alpha_learning_rate") c.alpha_learning_rate = AsDouble(who, key, v);
    else if (key == "gamma") c.gamma = AsDouble(who, key, v);
    else if (key == "tau") c.tau = AsDouble(who, key, v);
    else if (key == "batch_size") c.batch_size = AsInt(who, key, v);
    else if (key == "actor_update_interval") c.actor_update_interval = AsInt(who, key, v);
    else if (key == "autotune_alpha") c.autotune_alpha = AsBool(who, key, v);
    else if (key == "initial_alpha") c.initial_alpha = AsDouble(who, key, v);
    else if (key == "target_entropy") c.target_entropy = AsDouble(who, key, v);
    else if (key == "log_std_min") c.log_std_min = AsDouble(who, key, v);
    else if (key == "log_std_max") c.log_std_max = AsDouble(who, key, v);
    else if (key == "seed") c.seed = AsU64(who, key, v);
    else if (key == "device") c.device = AsString(who, key, v);
    else BadConfig(who, "unknown key '" + key + "'");
  }
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

SacUpdateStats HeatWeightAgent::Update(const ContinuousReplay& replay, std::mt19937_64& rng) {
  if (replay.size() == 0) throw std::logic_error("HeatWeightAgent::Update: the replay buffer is empty");
  return Update(replay.Sample(static_cast<size_t>(config_.batch_size), rng));
}

SacUpdateStats HeatWeightAgent::Update(const std::vector<const ContinuousTransition*>& batch) {
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
    std::memcpy(&m.h_obs[i * n], t.observation.data(), n * sizeof(float));
    if (t.next_observation.size() == static_cast<size_t>(n))
      std::memcpy(&m.h_next[i * n], t.next_observation.data(), n * sizeof(float));
    else if (t.done && t.next_observation.empty())
      std::memset(&m.h_next[i * n], 0, n * sizeof(float));
    else
      CheckObservation(who, t.next_observation, n, "a next observation");
    for (int64_t k = 0; k < A; ++k) m.h_action[i * A + k] = std::clamp(t.action[k], -1.0f, 1.0f);
    m.h_reward[i] = t.reward;
    m.h_discount[i] = t.done ? 0.0f : static_cast<float>(config_.gamma);
  }
  torch::Tensor obs = Stage(m.h_obs, {B, n}, m.device);
  torch::Tensor next = Stage(m.h_next, {B, n}, m.device);
  torch::Tensor action = Stage(m.h_action, {B, A}, m.device);
  torch::Tensor reward = Stage(m.h_reward, {B}, m.device);
  torch::Tensor discount = Stage(m.h_discount, {B}, m.device);

  SacUpdateStats stats;
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
  stats.critic_loss = critic_loss.item<double>();
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

void HeatWeightAgent::SaveCheckpoint(const std::string& path) const {
  std::string data = WithTorchErrors("HeatWeightAgent::SaveCheckpoint", [&] {
    torch::serialize::OutputArchive ar;
    ar.write("format", c10::IValue(std::string(kHeatCheckpointFormat)));
    ar.write("version", c10::IValue(kCheckpointVersion));
    ar.write("config", c10::IValue(config_.ToJson()));
    ar.write("updates", c10::IValue(static_cast<int64_t>(updates_)));
    impl_->Save(ar);
    ar.write("noise_state", impl_->noise.get_state(), /*is_buffer=*/true);
    return SaveArchive(ar);
  });
  WriteFileAtomically(path, data);
}

void HeatWeightAgent::LoadCheckpoint(const std::string& path) {
  std::string data = ReadFile(path);
  const std::string what = "checkpoint '" + path + "'";
  int64_t updates = 0;
  std::unique_ptr<Impl> fresh = WithTorchErrors("HeatWeightAgent::LoadCheckpoint", [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(data.data(), data.size(), impl_->device);
    std::string config_json = ReadCheckpointHeader(ar, what, kHeatCheckpointFormat, &updates);
    HeatSacConfig saved;
    try {
      saved = HeatSacConfig::FromJson(config_json);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(what + " has an invalid config: " + e.what());
    }
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

}  // namespace tensortier
