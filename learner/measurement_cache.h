// Real measurements (episode reports with counters.measured) by (plan hash,
// backend), for one workload and DRAM limit. The learner pushes the whole
// cache to a worker after it registers and each new entry to every worker,
// so that no plan is executed twice for real on one backend. Network
// thread only; it sends nothing itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "learner/checkpoint.capnp.h"
#include "protocol/messages.h"

namespace tensortier {

class MeasurementCache {
 public:
  MeasurementCache(uint64_t workload_signature, uint64_t dram_limit_bytes)
      : workload_signature_(workload_signature), dram_limit_bytes_(dram_limit_bytes) {}

  enum class Seen {
    kNotMeasured,  // the report's runtime is not a real measurement
    kHit,          // the worker took it from the cache
    kNew,          // a new entry: `entry` is to go out to every worker
    kRedundant,    // executed although the cache had it (the worker had not heard yet)
  };
  struct Outcome {
    Seen seen = Seen::kNotMeasured;
    MeasurementCacheMsg entry;  // kNew: the message with the new entry alone
  };
  Outcome Record(const EpisodeReportMsg& report);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // The whole cache as one message.
  MeasurementCacheMsg All() const;

  // Checkpoint section: the whole cache, as the message workers receive.
  // Load throws CheckpointError for a value that is not finite (workers
  // would refuse the cache frame that carries it).
  void Save(schema::MeasurementCache::Builder out) const;
  void Load(schema::MeasurementCache::Reader in);

 private:
  MeasurementCacheMsg Empty() const;

  const uint64_t workload_signature_;
  const uint64_t dram_limit_bytes_;
  std::map<std::pair<uint64_t, std::string>, CachedMeasurement> entries_;
};

}  // namespace tensortier
