// The policy a run starts from, before any worker plays: fresh weights or
// another run's network (LearnerConfig::init_checkpoint), then imitation of
// the baselines' plans and of its own searches (learner/imitation.h). The
// greedy episode after each phase is a candidate for the run's fastest
// policy, so a run never ends below what it started with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "envs/placement_env.h"
#include "learner/learner.h"

namespace tensortier {

// The agent the config names, shaped by the environment: it defines what
// the network sees and does (writes the observation and action sizes into
// config).
std::unique_ptr<PlacementAgent> BuildAgent(LearnerConfig& config);

struct HeldPolicy {
  EpisodeSummary greedy;  // the plan's produced_by names the phase: "dqn-init", "dqn-imitation", ...
  std::string weights;    // the agent's weights then
};

struct StartingPolicy {
  std::unique_ptr<PlacementAgent> agent;  // with the last phase's weights
  std::vector<HeldPolicy> candidates;     // one per phase that ran, in order
};

// Runs the phases `config` asks for and records them in `result`
// (initialized_from and its runtime, imitation, self_imitation). With
// init_checkpoint, config's hidden sizes become the checkpoint's so that
// checkpoints and workers agree; an init_checkpoint that is a directory is
// a portfolio (agents/policy_portfolio.h: pretrain's checkpoints/portfolio),
// and the run starts from the member whose greedy plan is the fastest on
// the workload (initialized_from names it). Throws CheckpointError
// (learner/checkpoint_store.h) for a checkpoint that cannot be read, and
// std::invalid_argument for one of another agent family and for phases the
// agent cannot run.
StartingPolicy StartPolicy(LearnerConfig& config, LearnerResult& result);

}  // namespace tensortier
