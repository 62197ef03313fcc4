// The reference points every comparison needs: the ideal (everything in
// DRAM, no limit), the floor (everything in the slow tier), a seeded random
// static placement that still respects the limit, and first-touch NUMA.
#pragma once

#include "policies/policy.h"

namespace tensortier {

// Each is the decision of a StatelessPolicy (MakePolicy names them).

// "all-dram": ignores the limit: the plan carries dram_limit_bytes = 0, the
// "infinite DRAM" every result is normalised by.
PolicyResult DecideAllDram(const Workload& w, const PolicyContext& ctx);

// "all-slow".
PolicyResult DecideAllSlow(const Workload& w, const PolicyContext& ctx);

// "random": visits tensors in a seeded random order and puts each in DRAM
// with probability 1/2 when it fits for its whole lifetime; never migrates.
PolicyResult DecideRandom(const Workload& w, const PolicyContext& ctx);

// "first-touch": AutoTM's first-touch NUMA / DeepTM's Origin-TF
// (envs/first_touch.h).
PolicyResult DecideFirstTouch(const Workload& w, const PolicyContext& ctx);

}  // namespace tensortier
