#include "replay/prioritized_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace tensortier {

void PrioritizedReplayConfig::Validate() const {
  if (capacity == 0) throw std::invalid_argument("PrioritizedReplay: capacity must be positive");
  if (!(alpha >= 0) || !std::isfinite(alpha))
    throw std::invalid_argument("PrioritizedReplay: alpha must be a non-negative number");
  if (!(beta >= 0) || !std::isfinite(beta))
    throw std::invalid_argument("PrioritizedReplay: beta must be a non-negative number");
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    throw std::invalid_argument("PrioritizedReplay: epsilon must be positive");
}

PrioritizedReplay::PrioritizedReplay(PrioritizedReplayConfig config) : config_(config) {
  config_.Validate();
  while (leaves_ < config_.capacity) leaves_ *= 2;
  sum_.assign(2 * leaves_, 0.0);
  min_.assign(2 * leaves_, std::numeric_limits<double>::infinity());
  items_.reserve(std::min<size_t>(config_.capacity, 1 << 16));
}

double PrioritizedReplay::Mass(double priority) const {
  return std::pow(priority + config_.epsilon, config_.alpha);
}

void PrioritizedReplay::SetLeaf(size_t slot, double mass) {
  size_t i = leaves_ + slot;
  sum_[i] = mass;
  min_[i] = mass;
  // Parents are recomputed from their children (not adjusted by a delta),
  // so rounding never accumulates however many updates there are.
  for (i /= 2; i >= 1; i /= 2) {
    sum_[i] = sum_[2 * i] + sum_[2 * i + 1];
    min_[i] = std::min(min_[2 * i], min_[2 * i + 1]);
  }
}

size_t PrioritizedReplay::FindSlot(double value) const {
  size_t i = 1;
  while (i < leaves_) {
    const size_t left = 2 * i;
    // Into the left subtree when the value falls in it, or when the right
    // one holds no mass (rounding at the upper edge).
    if (value < sum_[left] || !(sum_[left + 1] > 0)) {
      i = left;
    } else {
      value -= sum_[left];
      i = left + 1;
    }
  }
  return std::min(i - leaves_, items_.size() - 1);
}

uint64_t PrioritizedReplay::KeyOfSlot(size_t slot) const {
  if (items_.size() < config_.capacity) return slot;
  const size_t cap = config_.capacity;
  const size_t back = (next_ + cap - 1 - slot) % cap;  // how many inserts ago
  return total_added_ - 1 - back;
}

std::optional<size_t> PrioritizedReplay::SlotOfKey(uint64_t key) const {
  if (key >= total_added_ || key + items_.size() < total_added_) return std::nullopt;
  return static_cast<size_t>(key % config_.capacity);
}

double PrioritizedReplay::CheckedPriority(std::optional<double> priority) {
  if (!priority) return max_priority_;
  const double p = *priority;
  if (!(p >= 0) || !std::isfinite(p))
    throw std::invalid_argument("PrioritizedReplay::Add: priority must be finite and non-negative");
  max_priority_ = std::max(max_priority_, p);
  return p;
}

uint64_t PrioritizedReplay::Commit(double p) {
  const size_t slot = next_;
  raw_[slot] = p;
  SetLeaf(slot, Mass(p));
  next_ = (next_ + 1) % config_.capacity;
  return total_added_++;
}

uint64_t PrioritizedReplay::Add(Transition t, std::optional<double> priority) {
  return AddInPlace([&](Transition& row) { row = std::move(t); }, priority);
}

ReplaySample PrioritizedReplay::Sample(size_t batch, std::mt19937_64& rng) const {
  ReplaySample out;
  SampleInto(batch, rng, &out);
  return out;
}

void PrioritizedReplay::SampleInto(size_t batch, std::mt19937_64& rng, ReplaySample* out) const {
  if (items_.empty()) throw std::logic_error("PrioritizedReplay::Sample: the buffer is empty");
  out->keys.resize(batch);
  out->transitions.resize(batch);
  out->weights.resize(batch);
  out->probabilities.resize(batch);
  const double total = sum_[1];
  const double min_mass = min_[1];
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double below_total = std::nextafter(total, 0.0);
  for (size_t j = 0; j < batch; ++j) {
    double value = config_.stratified
                       ? (static_cast<double>(j) + unit(rng)) * total / static_cast<double>(batch)
                       : unit(rng) * total;
    value = std::min(value, below_total);
    const size_t slot = FindSlot(value);
    const double mass = sum_[leaves_ + slot];
    out->keys[j] = KeyOfSlot(slot);
    out->transitions[j] = &items_[slot];
    out->probabilities[j] = mass / total;
    // (N P_i)^-beta / max_j (N P_j)^-beta = (p_i / p_min)^-beta.
    out->weights[j] = static_cast<float>(std::pow(mass / min_mass, -config_.beta));
  }
}

size_t PrioritizedReplay::UpdatePriorities(const std::vector<uint64_t>& keys,
                                           const std::vector<double>& priorities) {
  if (keys.size() != priorities.size())
    throw std::invalid_argument("PrioritizedReplay::UpdatePriorities: " +
                                std::to_string(keys.size()) + " keys but " +
                                std::to_string(priorities.size()) + " priorities");
  for (double p : priorities)
    if (!(p >= 0) || !std::isfinite(p))
      throw std::invalid_argument(
          "PrioritizedReplay::UpdatePriorities: priorities must be finite and non-negative");
  size_t applied = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<size_t> slot = SlotOfKey(keys[i]);
    if (!slot) continue;
    raw_[*slot] = priorities[i];
    SetLeaf(*slot, Mass(priorities[i]));
    max_priority_ = std::max(max_priority_, priorities[i]);
    ++applied;
  }
  return applied;
}

void PrioritizedReplay::set_beta(double beta) {
  if (!(beta >= 0) || !std::isfinite(beta))
    throw std::invalid_argument("PrioritizedReplay: beta must be a non-negative number");
  config_.beta = beta;
}

std::optional<double> PrioritizedReplay::Priority(uint64_t key) const {
  std::optional<size_t> slot = SlotOfKey(key);
  if (!slot) return std::nullopt;
  return raw_[*slot];
}

std::optional<double> PrioritizedReplay::Probability(uint64_t key) const {
  std::optional<size_t> slot = SlotOfKey(key);
  if (!slot) return std::nullopt;
  return sum_[leaves_ + *slot] / sum_[1];
}

void PrioritizedReplay::Restore(std::vector<Transition> items, std::vector<double> priorities,
                                size_t next, uint64_t total_added) {
  const size_t cap = config_.capacity;
  if (items.size() != priorities.size())
    throw std::invalid_argument("PrioritizedReplay::Restore: " + std::to_string(items.size()) +
                                " items but " + std::to_string(priorities.size()) + " priorities");
  if (items.size() > cap)
    throw std::invalid_argument("PrioritizedReplay::Restore: " + std::to_string(items.size()) +
                                " items exceed the capacity of " + std::to_string(cap));
  if (items.size() < cap ? (next != items.size() || total_added != items.size())
                         : (next != total_added % cap))
    throw std::invalid_argument(
        "PrioritizedReplay::Restore: next slot " + std::to_string(next) + " and total_added " +
        std::to_string(total_added) + " do not fit " + std::to_string(items.size()) +
        " items in a ring of " + std::to_string(cap));
  for (double p : priorities)
    if (!(p >= 0) || !std::isfinite(p))
      throw std::invalid_argument("PrioritizedReplay::Restore: a priority is negative or not finite");
  items_ = std::move(items);
  raw_ = std::move(priorities);
  next_ = next % cap;
  total_added_ = total_added;
  std::fill(sum_.begin(), sum_.end(), 0.0);
  std::fill(min_.begin(), min_.end(), std::numeric_limits<double>::infinity());
  max_priority_ = 1.0;
  for (size_t s = 0; s < items_.size(); ++s) {
    sum_[leaves_ + s] = min_[leaves_ + s] = Mass(raw_[s]);
    max_priority_ = std::max(max_priority_, raw_[s]);
  }
  for (size_t i = leaves_ - 1; i >= 1; --i) {
    sum_[i] = sum_[2 * i] + sum_[2 * i + 1];
    min_[i] = std::min(min_[2 * i], min_[2 * i + 1]);
  }
}

}  // namespace tensortier
