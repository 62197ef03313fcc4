// A fixed-capacity ring of transitions with uniform sampling. Plain C++ so
// that the learner's ingest path needs no LibTorch.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "replay/replay.h"

namespace tensortier {

class ReplayBuffer : public Replay {
 public:
  explicit ReplayBuffer(size_t capacity);

  void Add(Transition t);
  // Add, with the new row written in place by fill(Transition&): once the
  // ring is full it gets the overwritten row, whose vectors keep their
  // capacity, so ingest allocates nothing per transition.
  template <typename Fill>
  void AddInPlace(Fill&& fill) {
    if (items_.size() < capacity_) items_.emplace_back();  // next_ == size() until full
    fill(items_[next_]);
    next_ = (next_ + 1) % capacity_;
    ++total_added_;
  }
  size_t size() const override { return items_.size(); }
  size_t capacity() const override { return capacity_; }
  uint64_t total_added() const override { return total_added_; }
  bool prioritized() const override { return false; }

  // `batch` indices drawn uniformly with replacement; requires size() > 0.
  std::vector<const Transition*> Sample(size_t batch, std::mt19937_64& rng) const;
  // The same draws into out->transitions; no weights, keys or probabilities.
  void SampleInto(size_t batch, std::mt19937_64& rng, ReplaySample* out) const override;
  size_t UpdatePriorities(const std::vector<uint64_t>&, const std::vector<double>&) override { return 0; }

  const std::vector<Transition>& items() const { return items_; }
  void Restore(std::vector<Transition> items, size_t next, uint64_t total_added);
  size_t next_slot() const { return next_; }

 private:
  size_t capacity_;
  size_t next_ = 0;
  uint64_t total_added_ = 0;
  std::vector<Transition> items_;
};

}  // namespace tensortier
