// The reference points every comparison needs: the ideal (everything in
// DRAM, no limit), the floor (everything in the slow tier), a seeded random
// static placement that still respects the limit, and first-touch NUMA.
#pragma once

#include "policies/policy.h"

namespace tensortier {

// Ignores the limit: the plan carries dram_limit_bytes = 0, the "infinite
// DRAM" every result is normalised by.
class AllDramPolicy : public PlacementPolicy {
 public:
  std::string name() const override { return "all-dram"; }

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;
};

class AllSlowPolicy : public PlacementPolicy {
 public:
  std::string name() const override { return "all-slow"; }

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;
};

// Visits tensors in a seeded random order and puts each in DRAM with
// probability 1/2 when it fits for its whole lifetime; never migrates.
class RandomPolicy : public PlacementPolicy {
 public:
  std::string name() const override { return "random"; }

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;
};

// AutoTM's first-touch NUMA / DeepTM's Origin-TF (envs/first_touch.h).
class FirstTouchPolicy : public PlacementPolicy {
 public:
  std::string name() const override { return "first-touch"; }

 protected:
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;
};

}  // namespace tensortier
