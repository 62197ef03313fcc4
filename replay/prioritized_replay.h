// Proportional prioritised replay (Schaul et al. 2016; Ape-X): a ring of
// transitions with a sum tree over p_i = (priority_i + epsilon)^alpha, so
// that transition i is drawn with probability P(i) = p_i / sum_j p_j, and
// importance weights w_i = (N P(i))^-beta / max_j w_j correct the bias.
//
// Priorities may come from anywhere: Add takes the priority a worker
// computed (Ape-X: actors compute initial priorities), or none, and then the
// item gets the largest priority seen so far so that it is replayed at least
// once soon. After a learner step, UpdatePriorities takes |TD error| per
// sampled item. Items are addressed by a key (their insertion number), so
// an update for an item that the ring has overwritten since it was sampled
// is ignored rather than landing on its successor.
//
// Plain C++ (no LibTorch), not synchronised: the learner guards it.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "replay/replay.h"

namespace tensortier {

struct PrioritizedReplayConfig {
  size_t capacity = 100000;
  double alpha = 0.6;    // 0 = uniform, 1 = fully proportional
  double beta = 0.4;     // importance-sampling exponent; anneal towards 1
  double epsilon = 1e-6; // added to every priority so that none is zero
  bool stratified = true;  // one draw per equal slice of the total mass (lower variance)

  void Validate() const;  // throws std::invalid_argument
};

class PrioritizedReplay : public Replay {
 public:
  explicit PrioritizedReplay(PrioritizedReplayConfig config);

  const PrioritizedReplayConfig& config() const { return config_; }
  size_t size() const override { return items_.size(); }
  size_t capacity() const override { return config_.capacity; }
  uint64_t total_added() const override { return total_added_; }
  bool prioritized() const override { return true; }

  // Adds a transition with `priority` (|TD error| or a worker's estimate),
  // or the largest priority seen so far when none is given. Returns its key.
  // Throws std::invalid_argument on a negative or non-finite priority.
  uint64_t Add(Transition t, std::optional<double> priority = std::nullopt);
  // Add, with the row written in place by fill(Transition&) (see
  // ReplayBuffer::AddInPlace: the overwritten row's vectors are reused).
  template <typename Fill>
  uint64_t AddInPlace(Fill&& fill, std::optional<double> priority = std::nullopt) {
    const double p = CheckedPriority(priority);
    if (items_.size() < config_.capacity) {  // next_ == size() until full
      items_.emplace_back();
      raw_.push_back(p);
    }
    fill(items_[next_]);
    return Commit(p);
  }

  // `batch` draws with replacement, P(i) proportional to p_i, with keys,
  // importance weights and probabilities. Requires size() > 0.
  ReplaySample Sample(size_t batch, std::mt19937_64& rng) const;
  void SampleInto(size_t batch, std::mt19937_64& rng, ReplaySample* out) const override;

  // Sets the priorities of the items with these keys (raw priorities, e.g.
  // |TD error|; epsilon and alpha are applied here). Keys of items that have
  // been overwritten are skipped; returns how many were applied.
  size_t UpdatePriorities(const std::vector<uint64_t>& keys, const std::vector<double>& priorities) override;

  void set_beta(double beta);
  double beta() const { return config_.beta; }

  // The raw priority of the item with `key`, if it is still stored.
  std::optional<double> Priority(uint64_t key) const;
  // P(i) of the item with `key`, if it is still stored.
  std::optional<double> Probability(uint64_t key) const;
  double total_mass() const { return sum_[1]; }
  double max_priority() const { return max_priority_; }

  // For checkpoints: items and raw priorities in slot order, the next slot
  // and the insertion count.
  const std::vector<Transition>& items() const { return items_; }
  const std::vector<double>& priorities() const { return raw_; }
  size_t next_slot() const { return next_; }
  void Restore(std::vector<Transition> items, std::vector<double> priorities, size_t next,
               uint64_t total_added);

 private:
  double CheckedPriority(std::optional<double> priority);  // the priority to store; throws on a bad one
  uint64_t Commit(double priority);                          // the row at next_ is written
  double Mass(double priority) const;
  void SetLeaf(size_t slot, double mass);
  size_t FindSlot(double value) const;
  uint64_t KeyOfSlot(size_t slot) const;
  std::optional<size_t> SlotOfKey(uint64_t key) const;

  PrioritizedReplayConfig config_;
  size_t leaves_ = 1;          // power of two >= capacity
  std::vector<double> sum_;    // 1-based heap, sum_[1] = total
  std::vector<double> min_;    // same layout, +inf for empty leaves
  std::vector<Transition> items_;
  std::vector<double> raw_;    // raw priority per slot
  size_t next_ = 0;
  uint64_t total_added_ = 0;
  double max_priority_ = 1.0;
};

}  // namespace tensortier
