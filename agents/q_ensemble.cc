#include "agents/q_ensemble.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "agents/torch_helpers.h"

namespace tensortier {
using namespace agents_internal;

std::unique_ptr<DqnAgent> FoldQEnsemble(const std::vector<const DqnAgent*>& members) {
  if (members.empty()) throw std::invalid_argument("FoldQEnsemble: no members");
  const DqnConfig& first = members[0]->config();
  for (size_t k = 1; k < members.size(); ++k) {
    const DqnConfig& c = members[k]->config();
    if (c.observation_size != first.observation_size || c.num_actions != first.num_actions ||
        c.hidden != first.hidden)
      throw std::invalid_argument("FoldQEnsemble: member " + std::to_string(k) + " has network " +
                                  ShapeText(MlpShape(c.observation_size, c.hidden, c.num_actions)) +
                                  ", member 0 has " +
                                  ShapeText(MlpShape(first.observation_size, first.hidden, first.num_actions)));
  }
  const int64_t k_members = static_cast<int64_t>(members.size());
  std::vector<std::vector<DenseLayer>> nets;
  for (const DqnAgent* m : members) nets.push_back(m->GreedyNetwork());
  const size_t layers = nets[0].size();

  DqnConfig config = first;
  for (int& width : config.hidden) width *= static_cast<int>(k_members);
  std::vector<torch::Tensor> params;
  for (size_t l = 0; l < layers; ++l) {
    const DenseLayer& proto = nets[0][l];
    const bool first_layer = l == 0, last_layer = l + 1 == layers;
    const int64_t in = first_layer ? proto.in : proto.in * k_members;
    const int64_t out = last_layer ? proto.out : proto.out * k_members;
    torch::Tensor weight = torch::zeros({out, in});
    torch::Tensor bias = torch::zeros({out});
    for (int64_t k = 0; k < k_members; ++k) {
      const DenseLayer& layer = nets[k][l];
      torch::Tensor w = torch::from_blob(const_cast<float*>(layer.weight.data()), {layer.out, layer.in}).clone();
      torch::Tensor b = torch::from_blob(const_cast<float*>(layer.bias.data()), {layer.out}).clone();
      const int64_t row = last_layer ? 0 : k * layer.out;
      const int64_t col = first_layer ? 0 : k * layer.in;
      if (last_layer) {
        // The mean of the members' outputs.
        weight.narrow(1, col, layer.in).add_(w / static_cast<double>(k_members));
        bias.add_(b / static_cast<double>(k_members));
      } else {
        weight.narrow(0, row, layer.out).narrow(1, col, layer.in).copy_(w);
        bias.narrow(0, row, layer.out).copy_(b);
      }
    }
    params.push_back(weight);
    params.push_back(bias);
  }
  auto folded = std::make_unique<DqnAgent>(config);
  std::string blob = WithTorchErrors("FoldQEnsemble", [&] {
    torch::serialize::OutputArchive ar;
    WriteNetwork(ar, MlpShape(config.observation_size, config.hidden, config.num_actions), params);
    return SaveArchive(ar);
  });
  folded->LoadWeights(blob);
  folded->SyncTarget();
  return folded;
}

}  // namespace tensortier
