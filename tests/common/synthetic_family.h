// The synthetic model families tests sweep (envs/synthetic.h), each at the
// generator's default sizes but for its depth.
#pragma once

#include "envs/synthetic.h"

namespace tensortier::testing {

constexpr SyntheticShape kSyntheticFamilies[] = {SyntheticShape::kVggLike, SyntheticShape::kResnetLike,
                                                 SyntheticShape::kMobilenetLike, SyntheticShape::kRnnLike};

inline Workload SyntheticWithLayers(SyntheticShape shape, int layers) {
  SyntheticOptions o;
  o.shape = shape;
  o.layers = layers;
  return GenerateSynthetic(o);
}

}  // namespace tensortier::testing
