#include "learner/task_frames.h"

#include <algorithm>
#include <cmath>

#include "protocol/codec.h"

namespace tensortier {

// Ape-X: epsilon_i = epsilon^(1 + alpha * i / (N - 1)) for worker i of N.
double ApexEpsilon(double epsilon, double alpha, uint32_t index, uint32_t workers) {
  if (workers <= 1) return epsilon;
  return std::pow(epsilon, 1.0 + alpha * static_cast<double>(index % workers) / static_cast<double>(workers - 1));
}

TaskFrames::TaskFrames(const LearnerConfig& config, const PlacementAgent& agent, bool imitated) {
  base_.task_id = 1;
  base_.workload = config.workload;
  base_.env = config.env;
  // After imitation DQfD explores little (LearnerConfig::imitation).
  base_.exploration.epsilon_start =
      imitated ? std::min(config.dqn.epsilon_start, config.imitation.epsilon_start) : config.dqn.epsilon_start;
  base_.exploration.epsilon_end = config.dqn.epsilon_end;
  base_.exploration.schedule_episodes = static_cast<uint32_t>(config.dqn.epsilon_decay_episodes);
  base_.exploration.epsilon = config.dqn.epsilon_end;
  base_.exploration.seed = config.dqn.seed;
  base_.agent = agent.name();
  base_.agent_config_json = agent.config_json();
  frame_ = EncodeMessage(base_);
  apex_ = config.exploration == ExplorationKind::kApex;
  apex_epsilon_ = config.apex_epsilon;
  apex_alpha_ = config.apex_alpha;
  apex_workers_ = config.apex_workers > 0 ? config.apex_workers : std::max<uint32_t>(config.min_workers, 1);
}

std::string TaskFrames::For(uint32_t exploration_index) const {
  if (!apex_) return frame_;
  TaskMsg t = base_;
  t.exploration.schedule_episodes = 0;  // a fixed epsilon per worker
  t.exploration.epsilon = ApexEpsilon(apex_epsilon_, apex_alpha_, exploration_index, apex_workers_);
  return EncodeMessage(t);
}

}  // namespace tensortier
