#include "worker/exploration.h"

#include <algorithm>

namespace tensortier {

double ScheduledEpsilon(const ExplorationSettings& e, uint64_t weights_version) {
  if (e.schedule_episodes == 0) return e.epsilon;
  const double frac = std::min(1.0, static_cast<double>(weights_version) / e.schedule_episodes);
  return e.epsilon_start + frac * (e.epsilon_end - e.epsilon_start);
}

}  // namespace tensortier
