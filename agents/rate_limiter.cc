#include "agents/rate_limiter.h"

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

RateLimiter::RateLimiter(RateLimiterConfig config) : config_(config) {
  config_.Validate();
  const double offset = config_.samples_per_insert * static_cast<double>(config_.min_size_to_sample);
  min_diff_ = offset - config_.error_buffer;
  max_diff_ = offset + config_.error_buffer;
}

bool RateLimiter::InsertAllowedLocked(uint64_t n) const {
  if (closed_) return false;
  const uint64_t size = c_.inserts - c_.deletes;
  if (size + n <= config_.min_size_to_sample) return true;
  const double diff = static_cast<double>(c_.inserts + n) * config_.samples_per_insert -
                      static_cast<double>(c_.samples);
  return diff <= max_diff_;
}

bool RateLimiter::SampleAllowedLocked(uint64_t n) const {
  if (closed_) return false;
  const uint64_t size = c_.inserts - c_.deletes;
  if (size < config_.min_size_to_sample || size == 0) return false;
  const double diff = static_cast<double>(c_.inserts) * config_.samples_per_insert -
                      static_cast<double>(c_.samples + n);
  return diff >= min_diff_;
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
    c_.inserts += n;
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
    c_.inserts += n;
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

bool RateLimiter::AwaitInsert(uint64_t n, std::chrono::milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return closed_ || InsertAllowedLocked(n); }) ||
        closed_) {
      ++c_.blocked_inserts;
      return false;
    }
    c_.inserts += n;
  }
  cv_.notify_all();
  return true;
}

bool RateLimiter::AwaitSample(uint64_t n, std::chrono::milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return closed_ || SampleAllowedLocked(n); }) ||
        closed_) {
      ++c_.blocked_samples;
      return false;
    }
    c_.samples += n;
  }
  cv_.notify_all();
  return true;
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

double RateLimiter::diff() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<double>(c_.inserts) * config_.samples_per_insert -
         static_cast<double>(c_.samples);
}

void RateLimiter::Restore(const RateLimiterCounters& counters) {
  if (counters.deletes > counters.inserts)
    throw std::invalid_argument("RateLimiter::Restore: more deletes than inserts");
  {
    std::lock_guard<std::mutex> lock(mu_);
    c_ = counters;
  }
  cv_.notify_all();
}

std::string RateLimiter::ToJson() const {
  RateLimiterCounters c = counters();
  std::ostringstream os;
  os << "{\"samples_per_insert\": " << config_.samples_per_insert
     << ", \"min_size_to_sample\": " << config_.min_size_to_sample
     << ", \"error_buffer\": " << config_.error_buffer << ", \"inserts\": " << c.inserts
     << ", \"samples\": " << c.samples << ", \"deletes\": " << c.deletes
     << ", \"blocked_inserts\": " << c.blocked_inserts
     << ", \"blocked_samples\": " << c.blocked_samples << "}";
  return os.str();
}

}  // namespace tensortier
