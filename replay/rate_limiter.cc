#include "replay/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tensortier {

void RateLimiterConfig::Validate() const {
  if (!(samples_per_insert > 0) || !std::isfinite(samples_per_insert))
    throw std::invalid_argument("RateLimiterConfig: samples_per_insert must be positive");
  if (!std::isfinite(error_buffer) || error_buffer < std::max(1.0, samples_per_insert))
    throw std::invalid_argument(
        "RateLimiterConfig: error_buffer must be at least max(1, samples_per_insert) = " +
        std::to_string(std::max(1.0, samples_per_insert)) +
        ", or inserts and samples can block each other forever");
}

RateLimiter::RateLimiter(RateLimiterConfig config) : config_(config) { config_.Validate(); }

RateLimiterConfig RateLimiter::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

void RateLimiter::SetSamplesPerInsert(double samples_per_insert, double error_buffer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RateLimiterConfig next = config_;
    next.samples_per_insert = samples_per_insert;
    next.error_buffer = error_buffer;
    next.Validate();
    config_ = next;
  }
  cv_.notify_all();
}

uint64_t RateLimiter::EarningInsertsLocked(uint64_t n) const {
  const uint64_t min = config_.min_size_to_sample;
  const uint64_t before = c_.inserts > min ? c_.inserts - min : 0;
  const uint64_t after = c_.inserts + n > min ? c_.inserts + n - min : 0;
  return after - before;
}

bool RateLimiter::InsertAllowedLocked(uint64_t n) const {
  if (closed_) return false;
  const uint64_t size = c_.inserts - c_.deletes;
  if (size + n <= config_.min_size_to_sample) return true;
  const double diff = credit_ + static_cast<double>(EarningInsertsLocked(n)) * config_.samples_per_insert -
                      static_cast<double>(c_.samples);
  return diff <= config_.error_buffer;
}

bool RateLimiter::SampleAllowedLocked(uint64_t n) const {
  if (closed_) return false;
  const uint64_t size = c_.inserts - c_.deletes;
  if (size < config_.min_size_to_sample || size == 0) return false;
  return credit_ - static_cast<double>(c_.samples + n) >= -config_.error_buffer;
}

bool RateLimiter::InsertAllowed(uint64_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return InsertAllowedLocked(n);
}

bool RateLimiter::SampleAllowed(uint64_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return SampleAllowedLocked(n);
}

bool RateLimiter::CanInsert(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (InsertAllowedLocked(n)) return true;
  ++c_.blocked_inserts;
  return false;
}

bool RateLimiter::CanSample(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (SampleAllowedLocked(n)) return true;
  ++c_.blocked_samples;
  return false;
}

void RateLimiter::OnInsert(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RecordInsertLocked(n);
  }
  cv_.notify_all();
}

void RateLimiter::OnSample(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    c_.samples += n;
  }
  cv_.notify_all();
}

void RateLimiter::OnDelete(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (n > c_.inserts - c_.deletes)
      throw std::logic_error("RateLimiter::OnDelete: more deletes than items in the table");
    c_.deletes += n;
  }
  cv_.notify_all();
}

bool RateLimiter::TryInsert(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!InsertAllowedLocked(n)) {
      ++c_.blocked_inserts;
      return false;
    }
    RecordInsertLocked(n);
  }
  cv_.notify_all();
  return true;
}

bool RateLimiter::TrySample(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!SampleAllowedLocked(n)) {
      ++c_.blocked_samples;
      return false;
    }
    c_.samples += n;
  }
  cv_.notify_all();
  return true;
}

template <typename Allowed, typename Record>
bool RateLimiter::Await(std::chrono::milliseconds timeout, Allowed allowed, Record record, uint64_t& blocked) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return closed_ || allowed(); }) || closed_) {
      ++blocked;
      return false;
    }
    record();
  }
  cv_.notify_all();
  return true;
}

bool RateLimiter::AwaitInsert(uint64_t n, std::chrono::milliseconds timeout) {
  return Await(timeout, [&] { return InsertAllowedLocked(n); }, [&] { RecordInsertLocked(n); }, c_.blocked_inserts);
}

bool RateLimiter::AwaitSample(uint64_t n, std::chrono::milliseconds timeout) {
  return Await(timeout, [&] { return SampleAllowedLocked(n); }, [&] { c_.samples += n; }, c_.blocked_samples);
}

void RateLimiter::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool RateLimiter::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

uint64_t RateLimiter::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return c_.inserts - c_.deletes;
}

RateLimiterCounters RateLimiter::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return c_;
}

void RateLimiter::RecordInsertLocked(uint64_t n) {
  credit_ += static_cast<double>(EarningInsertsLocked(n)) * config_.samples_per_insert;
  c_.inserts += n;
}

double RateLimiter::diff() const {
  std::lock_guard<std::mutex> lock(mu_);
  return credit_ - static_cast<double>(c_.samples);
}

double RateLimiter::credit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return credit_;
}

void RateLimiter::Restore(const RateLimiterCounters& counters, std::optional<double> credit) {
  if (counters.deletes > counters.inserts)
    throw std::invalid_argument("RateLimiter::Restore: more deletes than inserts");
  if (credit && !(std::isfinite(*credit) && *credit >= 0))
    throw std::invalid_argument("RateLimiter::Restore: the credit must be finite and >= 0");
  {
    std::lock_guard<std::mutex> lock(mu_);
    c_ = counters;
    const uint64_t min = config_.min_size_to_sample;
    credit_ = credit ? *credit
                     : static_cast<double>(c_.inserts > min ? c_.inserts - min : 0) * config_.samples_per_insert;
  }
  cv_.notify_all();
}

std::string RateLimiter::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  const RateLimiterCounters& c = c_;
  std::ostringstream os;
  os << "{\"samples_per_insert\": " << config_.samples_per_insert
     << ", \"min_size_to_sample\": " << config_.min_size_to_sample
     << ", \"error_buffer\": " << config_.error_buffer << ", \"credit\": " << credit_
     << ", \"inserts\": " << c.inserts
     << ", \"samples\": " << c.samples << ", \"deletes\": " << c.deletes
     << ", \"blocked_inserts\": " << c.blocked_inserts
     << ", \"blocked_samples\": " << c.blocked_samples << "}";
  return os.str();
}

}  // namespace tensortier
