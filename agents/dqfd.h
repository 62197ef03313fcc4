// Learning from demonstrations for the DQN agent (DQfD, Hester et al. 2018):
// the expert's transitions kept apart from replay, and the large-margin loss
// on them. Internal to agents/ (LibTorch types): DqnAgent is the interface.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "envs/transition.h"

namespace tensortier {

class Demonstrations {
 public:
  // Throws std::invalid_argument (prefixed with `who`) for a transition that
  // does not fit the network or holds a non-finite observation or reward;
  // the set is unchanged then.
  void Set(std::vector<Transition> transitions, int observation_size, int num_actions, const std::string& who);
  size_t size() const { return transitions_.size(); }
  bool empty() const { return transitions_.empty(); }
  // Of a batch of `batch` rows, how many `fraction` gives the demonstrations
  // (none when there are none).
  int64_t RowsOf(int64_t batch, double fraction) const;
  // Points the first `rows` entries of `batch` at demonstrations: each,
  // with probability `class_balance`, a uniform action among those the
  // demonstrations take and then one of its transitions; otherwise one
  // transition drawn uniformly.
  void Draw(size_t rows, std::vector<const Transition*>& batch, std::mt19937_64& rng,
            double class_balance = 0.0) const;

 private:
  std::vector<Transition> transitions_;
  std::vector<std::vector<uint32_t>> by_action_;  // indices of transitions_, per action taken (non-empty ones)
};

// The large-margin loss on the first `expert_rows` rows of a batch of
// `batch`: weight * (max_a [Q(s,a) + margin (a != a_E)] - Q(s,a_E)) / batch.
// Adds its gradient with respect to Q to those rows of `grad_q` (+weight /
// batch at the augmented argmax, -weight / batch at the expert's action:
// they cancel once the expert's action leads by the margin) and returns the
// loss. `q` is [batch, actions], `expert_actions` [batch, 1] int64.
double AddLargeMarginGradient(const torch::Tensor& q, const torch::Tensor& expert_actions, int64_t expert_rows,
                              int64_t batch, double margin, double weight, torch::Tensor& grad_q);

}  // namespace tensortier
