// What a worker is told to do when it joins (TaskMsg): the workload, the
// environment, the agent and its exploration. With the epsilon schedule
// every worker gets the same frame (encoded once); with Ape-X exploration
// worker i of N gets its own fixed epsilon, kept by its incarnation's
// exploration index across reconnects (FleetRegistry).
#pragma once

#include <cstdint>
#include <string>

#include "agents/agent.h"
#include "learner/learner.h"
#include "protocol/messages.h"

namespace tensortier {

class TaskFrames {
 public:
  // `config` after a resume: the exploration schedule is the checkpoint's.
  // `imitated`: the agent learned from LearnerConfig::expert_plans first.
  TaskFrames(const LearnerConfig& config, const PlacementAgent& agent, bool imitated = false);

  // The encoded task for the worker with this exploration index.
  std::string For(uint32_t exploration_index) const;
  const TaskMsg& task() const { return base_; }

 private:
  TaskMsg base_;
  std::string frame_;      // base_, encoded
  bool apex_ = false;
  double apex_epsilon_ = 0, apex_alpha_ = 0;
  uint32_t apex_workers_ = 1;  // N
};

}  // namespace tensortier
