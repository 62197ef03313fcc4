// A model of the zoo (or a TorchScript module) with its optimizer and one
// synthetic batch: what one "training iteration" of TensorTier runs.
//
//   ModelOptions o; o.name = "resnet18"; o.batch_size = 4; o.image_size = 32;
//   auto task = MakeTrainingTask(o);
//   double loss = task->Step();   // zero_grad, forward, cross-entropy, backward, optimizer step
//
// Everything is deterministic for given options: weights from `seed`, the
// batch from `seed`, and the CPU generator is re-seeded with seed + step
// index before each step (dropout masks). Two tasks built from the same
// options produce bit-identical losses, gradients and weights step by step
// (with the same intra-op thread count), which is what the executor's
// correctness tests rely on.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/model_options.h"

namespace tensortier {


// What the allocator, profiler and executor need to know about a tensor that
// outlives an iteration.
enum class PersistentRole { kParameter, kBuffer, kGradient, kOptimizerState, kInput, kTarget };
struct PersistentTensor {
  std::string name;  // "param:features.0.weight", "grad:...", "sgd.momentum:...", "input", ...
  PersistentRole role;
  at::Tensor tensor;
};

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  // One training iteration; returns the loss (a float widened to double).
  virtual double Step() = 0;
  // Every tensor that survives an iteration, in a stable order: parameters,
  // buffers, gradients, optimizer state (each in parameter order), input,
  // target. Gradients and optimizer state exist only after the first Step().
  virtual std::vector<PersistentTensor> PersistentTensors() = 0;
  // Parameters and their gradients, in parameter order (for comparisons).
  virtual std::vector<at::Tensor> Parameters() = 0;
  virtual const ModelOptions& options() const = 0;
  virtual int64_t steps_done() const = 0;
};

// Throws std::invalid_argument for unknown models, bad sizes, or a
// TorchScript file that cannot be loaded.
std::unique_ptr<TrainingTask> MakeTrainingTask(const ModelOptions& options);

}  // namespace tensortier
