// Synthetic workloads with realistic shapes, for tests and for training
// before real profiles exist. The graphs mimic a training iteration:
// forward kernels allocate activations kept for backward, backward kernels
// read them and free them, gradients and optimizer state update parameters.
// The recurrent shape unrolls two stacked GRU-like cells over time, so each
// weight is read by every step forward and backward and its gradient is
// summed step by step: reuse no feed-forward shape has. The transformer
// shape keeps attention probabilities and AdamW's two states per parameter.
#pragma once

#include <cstdint>
#include <string>

#include "envs/workload.h"

namespace tensortier {

enum class SyntheticShape { kVggLike, kResnetLike, kMobilenetLike, kTiny, kRnnLike, kTransformerLike };

struct SyntheticOptions {
  SyntheticShape shape = SyntheticShape::kResnetLike;
  int layers = 8;            // forward layers (blocks for resnet- and transformer-like, time steps for rnn-like, at most 1024)
  uint64_t base_bytes = 4ull << 20;
  uint32_t batch_size = 32;
  uint64_t seed = 1;
};

// Parses "vgg", "resnet", "mobilenet", "tiny", "rnn", "transformer"; throws on anything else.
SyntheticShape ParseSyntheticShape(const std::string& name);
const char* SyntheticShapeName(SyntheticShape shape);

Workload GenerateSynthetic(const SyntheticOptions& options);

}  // namespace tensortier
