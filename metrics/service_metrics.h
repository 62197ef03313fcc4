// What the services' Prometheus metrics (learner/learner_metrics.cc,
// worker/worker_metrics.cc) have in common.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/histogram.h>

#include <cstdint>

namespace tensortier {

// Durations from a quarter of a millisecond (small synthetic graphs on the
// cost model) to about a minute (large models on a slow tier), doubling.
inline prometheus::Histogram::BucketBoundaries DurationBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double s = 0.00025; s < 100; s *= 2) b.push_back(s);
  return b;
}

// Brings a Prometheus counter up to a running total kept elsewhere: adds
// what `now` has grown by since `before`, which then becomes `now`.
inline void AdvanceCounter(prometheus::Counter* c, uint64_t now, uint64_t& before) {
  if (now > before) c->Increment(static_cast<double>(now - before));
  before = now;
}

}  // namespace tensortier
