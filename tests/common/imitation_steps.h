// Imitation configs of tests: short runs, named by their three sizes.
#pragma once

#include "learner/imitation.h"

namespace tensortier::testing {

// Imitation's pre-training steps, DAgger rounds and steps per round; the
// rest at the defaults.
inline ImitationConfig ImitationSteps(int pretrain_updates, int dagger_rounds, int updates_per_round) {
  ImitationConfig c;
  c.pretrain_updates = pretrain_updates;
  c.dagger_rounds = dagger_rounds;
  c.updates_per_round = updates_per_round;
  return c;
}

}  // namespace tensortier::testing
