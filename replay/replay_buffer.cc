#include "replay/replay_buffer.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace tensortier {

ReplayBuffer::ReplayBuffer(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("ReplayBuffer: capacity must be positive");
}

void ReplayBuffer::Add(Transition t) {
  if (items_.size() < capacity_) {
    items_.push_back(std::move(t));
  } else {
    items_[next_] = std::move(t);
  }
  next_ = (next_ + 1) % capacity_;
  ++total_added_;
}

std::vector<const Transition*> ReplayBuffer::Sample(size_t batch, std::mt19937_64& rng) const {
  ReplaySample s;
  SampleInto(batch, rng, &s);
  return std::move(s.transitions);
}

void ReplayBuffer::SampleInto(size_t batch, std::mt19937_64& rng, ReplaySample* out) const {
  if (items_.empty()) throw std::logic_error("ReplayBuffer::Sample: the buffer is empty");
  out->transitions.resize(batch);
  out->weights.clear();
  out->keys.clear();
  out->probabilities.clear();
  std::uniform_int_distribution<size_t> pick(0, items_.size() - 1);
  for (size_t i = 0; i < batch; ++i) out->transitions[i] = &items_[pick(rng)];
}

void ReplayBuffer::Restore(std::vector<Transition> items, size_t next, uint64_t total_added) {
  if (items.size() > capacity_)
    throw std::invalid_argument("ReplayBuffer::Restore: " + std::to_string(items.size()) +
                                " transitions exceed the capacity of " +
                                std::to_string(capacity_));
  if (next >= capacity_)
    throw std::invalid_argument("ReplayBuffer::Restore: next slot " + std::to_string(next) +
                                " is outside the capacity of " + std::to_string(capacity_));
  // Until the ring is full, the next slot is the end of the stored items.
  if (items.size() < capacity_ && next != items.size())
    throw std::invalid_argument("ReplayBuffer::Restore: next slot " + std::to_string(next) +
                                " does not follow " + std::to_string(items.size()) +
                                " items in a buffer that is not full");
  if (total_added < items.size())
    throw std::invalid_argument("ReplayBuffer::Restore: total_added " +
                                std::to_string(total_added) + " is less than the " +
                                std::to_string(items.size()) + " items restored");
  items_ = std::move(items);
  next_ = next;
  total_added_ = total_added;
}

}  // namespace tensortier
