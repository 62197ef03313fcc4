// A rate limiter between replay inserts and samples in the manner of
// Reverb's SampleToInsertRatio: the learner neither starves (sampling waits
// for `min_size_to_sample` items) nor overfits a few expensive real
// measurements (samples may not run ahead of inserts * samples_per_insert
// by more than `error_buffer`), and ingest may not run ahead of training by
// more than the same buffer.
//
// Counting follows Reverb: one sample is one item drawn (a batch of 32 is
// 32 samples), one insert is one item added, and the table's size is
// inserts - deletes (a ring buffer that overwrites an item reports a delete).
//
// The ratio may change while the table is in use (the learner derives it
// from the episode lengths it observes, and those change as the policy
// does), so the limiter integrates: every insert beyond the first
// min_size_to_sample earns `credit` at the ratio in force when it was made,
// and a later change of ratio applies to later inserts only. With
// diff = credit - samples:
//   CanInsert(n): size + n <= min_size_to_sample, or
//                 diff + (credit the n inserts would earn) <= error_buffer
//   CanSample(n): size >= min_size_to_sample and diff - n >= -error_buffer
// With a constant ratio, credit = (inserts - min_size_to_sample) *
// samples_per_insert and these are exactly Reverb's conditions (its offset
// of samples_per_insert * min_size_to_sample is the credit not earned by
// the first min_size_to_sample inserts). So as long as every insert and
// sample goes through the limiter, samples <= credit + error_buffer.
// The window between the two bounds is 2 * error_buffer; Validate insists on
// error_buffer >= max(1, samples_per_insert) (and, for batched sampling,
// the learner's batch should fit in it) so that neither side can deadlock.
//
// Thread-safe: the ingest and training threads may share one limiter. The
// Can* calls count refusals ("blocked calls"); Await* block on a condition
// variable until allowed, Close() wakes every waiter.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace tensortier {

struct RateLimiterConfig {
  double samples_per_insert = 8.0;
  uint64_t min_size_to_sample = 256;
  double error_buffer = 256.0;  // items of slack either side of the target ratio

  // Throws std::invalid_argument naming the problem.
  void Validate() const;
};

struct RateLimiterCounters {
  uint64_t inserts = 0;
  uint64_t samples = 0;
  uint64_t deletes = 0;
  uint64_t blocked_inserts = 0;  // CanInsert / TryInsert / AwaitInsert refusals
  uint64_t blocked_samples = 0;  // CanSample / TrySample / AwaitSample refusals
};

class RateLimiter {
 public:
  explicit RateLimiter(RateLimiterConfig config);

  RateLimiterConfig config() const;  // the ratio and buffer in force now

  // A new ratio (and error buffer, validated as in the config) for the
  // inserts from now on; the credit earned so far stays.
  void SetSamplesPerInsert(double samples_per_insert, double error_buffer);

  // Whether n more inserts (samples) are allowed now; a refusal counts as a
  // blocked call. Nothing is recorded on success: call OnInsert / OnSample
  // once the items have really been added (drawn).
  bool CanInsert(uint64_t n = 1);
  bool CanSample(uint64_t n = 1);
  // The same questions without counting anything.
  bool InsertAllowed(uint64_t n = 1) const;
  bool SampleAllowed(uint64_t n = 1) const;

  void OnInsert(uint64_t n = 1);
  void OnSample(uint64_t n = 1);
  void OnDelete(uint64_t n = 1);  // items evicted from the table

  // Check and record in one step (a refusal counts as blocked).
  bool TryInsert(uint64_t n = 1);
  bool TrySample(uint64_t n = 1);

  // Block until allowed, then record. Return false on timeout or Close()
  // (one blocked call is counted per call that had to wait and failed).
  bool AwaitInsert(uint64_t n, std::chrono::milliseconds timeout);
  bool AwaitSample(uint64_t n, std::chrono::milliseconds timeout);
  void Close();
  bool closed() const;

  uint64_t size() const;  // inserts - deletes
  RateLimiterCounters counters() const;
  // Samples owed (positive) or taken ahead (negative): credit - samples.
  double diff() const;
  // The samples that the inserts so far have earned.
  double credit() const;
  // For checkpoints: the insert, sample and delete counts (blocked counters
  // are restored too) and the credit. Without a credit (a checkpoint from
  // before the ratio could change), the inserts earn the current ratio.
  // Throws std::invalid_argument if deletes > inserts or the credit is
  // negative or not finite.
  void Restore(const RateLimiterCounters& counters, std::optional<double> credit = std::nullopt);

  std::string ToJson() const;  // config and counters, for logs and /metrics

 private:
  bool InsertAllowedLocked(uint64_t n) const;
  bool SampleAllowedLocked(uint64_t n) const;
  // Inserts among the next n that earn credit (those beyond min size).
  uint64_t EarningInsertsLocked(uint64_t n) const;
  void RecordInsertLocked(uint64_t n);
  // AwaitInsert and AwaitSample: waits up to `timeout` for `allowed()` (run
  // locked) or Close(); true after `record()`, false on timeout or close,
  // counted in `blocked`.
  template <typename Allowed, typename Record>
  bool Await(std::chrono::milliseconds timeout, Allowed allowed, Record record, uint64_t& blocked);

  RateLimiterConfig config_;
  double credit_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  RateLimiterCounters c_;
  bool closed_ = false;
};

}  // namespace tensortier
