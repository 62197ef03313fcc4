// What `--workload` accepts: a workload file (written by `tensortier
// profile` or `tensortier generate`), or a synthetic graph
// "synthetic:SHAPE[:LAYERS[:BASE_BYTES]]" with SHAPE one of vgg, resnet,
// mobilenet, tiny.
#pragma once

#include <string>

#include "envs/workload.h"

namespace tensortier {

// Throws std::invalid_argument / std::runtime_error naming what is wrong.
Workload LoadWorkloadSpec(const std::string& spec);

}  // namespace tensortier
