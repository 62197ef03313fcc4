#include "agents/dqfd.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace tensortier {

void Demonstrations::Set(std::vector<Transition> transitions, int observation_size, int num_actions,
                         const std::string& who) {
  for (const Transition& t : transitions) {
    if (t.observation.size() != static_cast<size_t>(observation_size) || t.action >= num_actions)
      throw std::invalid_argument(who + ": a transition does not fit the network (" +
                                  std::to_string(t.observation.size()) + " floats, action " +
                                  std::to_string(t.action) + ")");
    for (float v : t.observation)
      if (!std::isfinite(v)) throw std::invalid_argument(who + ": a non-finite observation");
    if (!std::isfinite(t.reward)) throw std::invalid_argument(who + ": a non-finite reward");
  }
  transitions_ = std::move(transitions);
  std::vector<std::vector<uint32_t>> by_action(static_cast<size_t>(std::max(num_actions, 1)));
  for (size_t i = 0; i < transitions_.size(); ++i) by_action[transitions_[i].action].push_back(static_cast<uint32_t>(i));
  by_action_.clear();
  for (auto& indices : by_action)
    if (!indices.empty()) by_action_.push_back(std::move(indices));
}

int64_t Demonstrations::RowsOf(int64_t batch, double fraction) const {
  if (transitions_.empty()) return 0;
  return std::min<int64_t>(batch, static_cast<int64_t>(std::llround(fraction * static_cast<double>(batch))));
}

void Demonstrations::Draw(size_t rows, std::vector<const Transition*>& batch, std::mt19937_64& rng,
                          double class_balance) const {
  if (transitions_.empty()) throw std::logic_error("Demonstrations::Draw: no demonstrations");
  std::uniform_int_distribution<size_t> pick(0, transitions_.size() - 1);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<size_t> pick_action(0, by_action_.size() - 1);
  for (size_t i = 0; i < rows && i < batch.size(); ++i) {
    if (class_balance > 0 && coin(rng) < class_balance) {
      const std::vector<uint32_t>& of_action = by_action_[pick_action(rng)];
      batch[i] = &transitions_[of_action[std::uniform_int_distribution<size_t>(0, of_action.size() - 1)(rng)]];
    } else {
      batch[i] = &transitions_[pick(rng)];
    }
  }
}

double AddLargeMarginGradient(const torch::Tensor& q_all, const torch::Tensor& expert_actions, int64_t expert_rows,
                              int64_t batch, double margin, double weight, torch::Tensor& grad_q) {
  const int64_t e = expert_rows;
  torch::Tensor q = q_all.narrow(0, 0, e);
  torch::Tensor a_e = expert_actions.narrow(0, 0, e);
  torch::Tensor augmented = q + static_cast<float>(margin);
  augmented.scatter_(1, a_e, q.gather(1, a_e));
  torch::Tensor a_star = augmented.argmax(1, /*keepdim=*/true);
  torch::Tensor per_row = augmented.gather(1, a_star) - q.gather(1, a_e);
  const double scale = weight / static_cast<double>(batch);
  torch::Tensor g = torch::zeros({e, q.size(1)}, q.options());
  g.scatter_add_(1, a_star, torch::full({e, 1}, static_cast<float>(scale), q.options()));
  g.scatter_add_(1, a_e, torch::full({e, 1}, static_cast<float>(-scale), q.options()));
  grad_q.narrow(0, 0, e).add_(g);
  return weight * per_row.sum().item<double>() / static_cast<double>(batch);
}

}  // namespace tensortier
