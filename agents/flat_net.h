// The DQN agent's network as one contiguous parameter tensor with
// preallocated activations: the agent runs its own forward and backward
// passes over it (agents/dqn_agent.cc). Internal to agents/ (LibTorch types).
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tensortier {

// The Q-network's layers: flatten (observations arrive flat, [rows, obs]),
// then Linear-ReLU-...-Linear. The modules hold the parameters; training
// runs its own forward and backward passes over them (see Update).
struct QNetImpl : torch::nn::Module {
  explicit QNetImpl(const std::vector<int64_t>& shape) {
    for (size_t i = 0; i + 1 < shape.size(); ++i)
      layers.push_back(register_module("fc" + std::to_string(i),
                                       torch::nn::Linear(shape[i], shape[i + 1])));
  }
  std::vector<torch::nn::Linear> layers;
};

struct LayerSpan {
  int64_t in = 0, out = 0;
  int64_t weight_offset = 0, bias_offset = 0;  // into the flat parameter tensor
};

// A network whose parameters are views of one contiguous tensor, in the
// order fc0.weight, fc0.bias, fc1.weight, ..., with activation buffers for
// batches of `rows` observations.
struct FlatNet {
  std::shared_ptr<QNetImpl> net;
  torch::Tensor flat;
  std::vector<torch::Tensor> params;          // weight, bias, weight, bias, ...
  std::vector<torch::Tensor> weights_t;       // W^T views, [in, out]
  std::vector<torch::Tensor> biases;
  std::vector<torch::Tensor> activations;     // per layer, [rows, out]; ReLU applied in place

  FlatNet(const std::vector<int64_t>& shape, const std::vector<LayerSpan>& spans,
          int64_t numel, int64_t rows, torch::Device device, uint64_t seed) {
    torch::NoGradGuard no_grad;
    net = std::make_shared<QNetImpl>(shape);
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    flat = torch::empty({numel}, f32);
    // Linear's default initialisation (weights and biases uniform in
    // +-1/sqrt(fan_in)), drawn from a generator of our own so that the seed
    // decides the weights without touching LibTorch's global generator.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (size_t i = 0; i < net->layers.size(); ++i) {
      auto& layer = net->layers[i];
      const LayerSpan& s = spans[i];
      double bound = 1.0 / std::sqrt(static_cast<double>(s.in));
      layer->weight.uniform_(-bound, bound, gen);
      layer->bias.uniform_(-bound, bound, gen);
      params.push_back(Adopt(layer->weight, s.weight_offset));
      params.push_back(Adopt(layer->bias, s.bias_offset));
      weights_t.push_back(params[2 * i].t());
      biases.push_back(params[2 * i + 1]);
      activations.push_back(torch::empty({rows, s.out}, f32));
    }
  }

  // Moves `p` into `flat` at `offset` and makes it a view of it. Gradients
  // are computed by hand, so the parameters do not require them.
  torch::Tensor Adopt(torch::Tensor& p, int64_t offset) {
    auto view = flat.narrow(0, offset, p.numel()).view(p.sizes());
    view.copy_(p);
    p.set_data(view);
    p.requires_grad_(false);
    return p;
  }

  // Forward pass of `x` ([rows, in]) into the activation buffers; returns
  // the Q-values, [rows, actions].
  const torch::Tensor& Forward(const torch::Tensor& x) {
    const torch::Tensor* in = &x;
    for (size_t l = 0; l < activations.size(); ++l) {
      at::addmm_out(activations[l], biases[l], *in, weights_t[l]);
      if (l + 1 < activations.size()) activations[l].relu_();
      in = &activations[l];
    }
    return activations.back();
  }
};

}  // namespace tensortier
