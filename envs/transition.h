// One step of experience in the placement MDP, as workers send it and
// replay stores it.
#pragma once

#include <cstdint>
#include <vector>

namespace tensortier {

struct Transition {
  std::vector<float> observation;
  uint8_t action = 0;
  float reward = 0;
  std::vector<float> next_observation;
  bool done = false;
};

}  // namespace tensortier
