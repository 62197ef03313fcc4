#include "agents/sac_core.h"

namespace tensortier {
namespace agents_internal {

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
  WriteNetwork(ar, shape, net->parameters());
}

std::vector<torch::Tensor> ReadMlp(torch::serialize::InputArchive& ar, const std::vector<int64_t>& shape,
                                   const std::string& what) {
  return ReadNetwork(ar, shape, what, FiniteCheck::kRequire);
}

void AssignMlp(Mlp& net, const std::vector<torch::Tensor>& values) {
  torch::NoGradGuard no_grad;
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

std::unique_ptr<torch::optim::Adam> MakeAdam(std::vector<torch::Tensor> params, double lr) {
  return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(lr));
}

double AlphaOf(const torch::Tensor& log_alpha) {
  return std::exp(static_cast<double>(log_alpha.detach().to(torch::kCPU).item<float>()));
}

torch::Tensor Stage(std::vector<float>& v, std::vector<int64_t> shape, torch::Device device) {
  torch::Tensor t = torch::from_blob(v.data(), shape, torch::kFloat32);
  return device.is_cpu() ? t : t.to(device);
}

void CheckObservation(const char* who, const std::vector<float>& v, int64_t size, const char* field) {
  if (v.size() != static_cast<size_t>(size))
    throw std::invalid_argument(std::string(who) + ": a transition has " + field + " of " +
                                std::to_string(v.size()) + " floats, expected " + std::to_string(size));
}

void StageObservations(const char* who, const std::vector<float>& observation, const std::vector<float>& next,
                       bool done, int64_t n, float* observation_row, float* next_row) {
  std::memcpy(observation_row, observation.data(), n * sizeof(float));
  if (next.size() == static_cast<size_t>(n))
    std::memcpy(next_row, next.data(), n * sizeof(float));
  else if (done && next.empty())
    std::memset(next_row, 0, n * sizeof(float));
  else
    CheckObservation(who, next, n, "a next observation");
}

}  // namespace agents_internal
}  // namespace tensortier
