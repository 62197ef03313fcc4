// An ensemble of DQN networks of one shape, folded into one DQN network
// whose Q-values are the members' mean. The fold is exact: the members'
// hidden layers sit side by side (block-diagonal weights) and the output
// layer averages them, so greedy action, plan-time search, export and
// fine-tuning (`train --init`) all see one plain Linear-ReLU network.
#pragma once

#include <memory>
#include <vector>

#include "agents/dqn_agent.h"

namespace tensortier {

// Members must agree on observation size, actions and hidden widths, and
// be at least one; throws std::invalid_argument naming the first that
// differs. The result's hidden widths are K times the members', its other
// settings (seed, learning rate, ...) those of members[0]; its target
// network equals its online network, its optimiser state is fresh.
std::unique_ptr<DqnAgent> FoldQEnsemble(const std::vector<const DqnAgent*>& members);

}  // namespace tensortier
