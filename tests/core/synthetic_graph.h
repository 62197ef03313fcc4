// A finalized synthetic graph of eight layers, the size the polish and copy
// schedule tests run on.
#pragma once

#include "envs/synthetic.h"
#include "envs/workload.h"

namespace tensortier::testing {

inline Workload Synthetic(SyntheticShape shape) {
  SyntheticOptions so;
  so.shape = shape;
  so.layers = 8;
  Workload w = GenerateSynthetic(so);
  w.Finalize();
  return w;
}

}  // namespace tensortier::testing
