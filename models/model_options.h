// Which model a training iteration runs, and how: LibTorch-free, so that
// callers that only configure a run (the CLI, workers, benchmarks) do not
// pull LibTorch's headers (models/training_task.h builds the task).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tensortier {

struct ModelOptions {
  std::string name = "resnet18";  // a zoo name (ZooModelNames()) or "torchscript"
  std::string torchscript_path;   // with name == "torchscript": a module whose forward(x) gives logits
  int64_t batch_size = 4;
  // Square input images of image_size x image_size x 3. Below 64 pixels the
  // zoo uses the usual small-input (CIFAR-style) variants: a 3x3 stride-1
  // stem and a compact classifier head (see zoo.cc, per model); Inception v3
  // switches below 75 pixels. Minimum: 32 (VGG, Inception), 16 (others).
  int64_t image_size = 32;
  int64_t num_classes = 10;
  std::string optimizer = "sgd";  // "sgd" (with momentum) or "adam"
  double learning_rate = 0.01;
  double momentum = 0.9;
  uint64_t seed = 1;
};

std::vector<std::string> ZooModelNames();

}  // namespace tensortier
