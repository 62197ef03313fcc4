// The epsilon a worker acts with. The learner hands every worker its
// ExplorationSettings with the task: one schedule for all (epsilon falls
// linearly from epsilon_start to epsilon_end over schedule_episodes weights
// versions; DqnConfig's epsilon_* fields) or, with Ape-X, a fixed epsilon of
// its own (schedule_episodes = 0).
#pragma once

#include <cstdint>

#include "protocol/messages.h"

namespace tensortier {

// Epsilon for an episode played with weights version `weights_version` (one
// version per episode report the learner counted).
double ScheduledEpsilon(const ExplorationSettings& e, uint64_t weights_version);

}  // namespace tensortier
