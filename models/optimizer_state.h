// A parameter's entry in a LibTorch optimizer's state map, across LibTorch
// versions: 1.x keys torch::optim::Optimizer::state() by the parameter's
// TensorImpl* printed as a string (c10::guts::to_string, which 2.x no longer
// has), 2.x by the TensorImpl* itself.
#pragma once

#include <ATen/core/Tensor.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace tensortier {

template <typename StateMap>
auto FindOptimizerState(StateMap& state, const at::Tensor& param) -> decltype(state.end()) {
  using Key = typename std::decay_t<StateMap>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // what c10::guts::to_string wrote
    key << param.unsafeGetTensorImpl();
    return state.find(key.str());
  } else {
    return state.find(static_cast<Key>(param.unsafeGetTensorImpl()));
  }
}

}  // namespace tensortier
