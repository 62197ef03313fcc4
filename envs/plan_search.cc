#include "envs/plan_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tensortier {
namespace {

// One played episode: its actions, how sure the policy was at each (the gap
// between the two scores; infinite where the action is a deviation, so the
// search does not question it again) and whether the action deviates.
struct Episode {
  std::vector<uint8_t> actions;
  std::vector<float> gaps;
  std::vector<uint8_t> deviates;
  EpisodeSummary summary;
};

// Follows `base` for its first `flip` steps, takes the other action at step
// `flip` (none when flip == base.actions.size()), then the policy with its
// DRAM preference shifted by `bias`.
Episode Play(PlacementEnv& env, const ActionScores& scores, const Episode& base, size_t flip, float bias) {
  Episode e;
  Observation obs = env.Reset();
  size_t step = 0;
  while (!env.done()) {
    uint8_t a;
    if (step < flip) {
      a = base.actions[step];
      e.gaps.push_back(base.gaps[step]);
      e.deviates.push_back(base.deviates[step]);
    } else if (step == flip && flip < base.actions.size()) {
      a = static_cast<uint8_t>(1 - base.actions[step]);
      e.gaps.push_back(std::numeric_limits<float>::infinity());
      e.deviates.push_back(!base.deviates[step]);
    } else {
      auto [dram, slow] = scores(obs);
      if (!std::isfinite(dram) || !std::isfinite(slow))
        throw std::runtime_error("SearchPlan: the policy scored an action as non-finite");
      const float preference = dram - slow - bias;
      a = preference >= 0 ? 0 : 1;
      e.gaps.push_back(std::abs(preference));
      e.deviates.push_back(a != (slow > dram ? 1 : 0));
    }
    e.actions.push_back(a);
    obs = env.Step(a).observation;
    ++step;
  }
  e.summary = env.summary();
  return e;
}

}  // namespace

PlanSearchResult SearchPlan(PlacementEnv& env, const ActionScores& scores, const PlanSearchOptions& options) {
  if (!scores) throw std::invalid_argument("SearchPlan: no action scores");
  if (options.max_rollouts < 1) throw std::invalid_argument("SearchPlan: max_rollouts must be at least 1");
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >= options.max_seconds;
  };

  PlanSearchResult result;
  Episode incumbent = Play(env, scores, Episode{}, 0, 0.0f);  // no step to flip: the greedy episode
  result.rollouts = 1;
  result.greedy = incumbent.summary;
  for (float bias : options.biases) {
    if (result.rollouts >= options.max_rollouts || out_of_time()) break;
    if (!std::isfinite(bias)) throw std::invalid_argument("SearchPlan: biases must be finite");
    if (bias == 0) continue;
    Episode biased = Play(env, scores, Episode{}, 0, bias);
    ++result.rollouts;
    if (FasterEpisode(biased.summary, incumbent.summary)) {
      incumbent = std::move(biased);
      result.bias = bias;
    }
  }
  bool improved = true;
  while (improved && result.rollouts < options.max_rollouts && !out_of_time()) {
    improved = false;
    std::vector<size_t> order(incumbent.actions.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const size_t n = std::min(order.size(), static_cast<size_t>(std::max(options.candidates_per_round, 0)));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [&](size_t a, size_t b) { return incumbent.gaps[a] < incumbent.gaps[b]; });
    for (size_t c = 0; c < n && result.rollouts < options.max_rollouts && !out_of_time(); ++c) {
      const size_t step = order[c];
      if (!std::isfinite(incumbent.gaps[step])) break;  // only deviations left
      Episode candidate = Play(env, scores, incumbent, step, result.bias);
      ++result.rollouts;
      if (FasterEpisode(candidate.summary, incumbent.summary)) {
        incumbent = std::move(candidate);
        ++result.improvements;
        improved = true;
        break;
      }
    }
  }
  result.best = std::move(incumbent.summary);
  for (uint8_t d : incumbent.deviates) result.deviations += d;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tensortier
