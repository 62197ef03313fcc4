#include "learner/measurement_cache.h"

#include "learner/checkpoint_store.h"
#include "protocol/codec.h"
#include "protocol/messages_capnp.h"

namespace tensortier {

MeasurementCache::Outcome MeasurementCache::Record(const EpisodeReportMsg& report) {
  Outcome out;
  if (report.measurement_cached) {
    out.seen = Seen::kHit;
    return out;
  }
  if (!report.counters.measured) return out;
  const auto key = std::make_pair(report.plan.Hash(), report.backend);
  if (entries_.count(key)) {
    out.seen = Seen::kRedundant;
    return out;
  }
  // With the reference runtimes of the worker that measured it, so that a
  // reward rescored from the entry is normalised on that same machine.
  CachedMeasurement e{key.first,          report.backend,        report.runtime_ns, report.min_runtime_ns,
                      report.max_runtime_ns, report.oom, report.counters};
  entries_[key] = e;
  out.seen = Seen::kNew;
  out.entry = Empty();
  out.entry.entries.push_back(std::move(e));
  return out;
}

MeasurementCacheMsg MeasurementCache::Empty() const {
  MeasurementCacheMsg m;
  m.workload_signature = workload_signature_;
  m.dram_limit_bytes = dram_limit_bytes_;
  return m;
}

MeasurementCacheMsg MeasurementCache::All() const {
  MeasurementCacheMsg m = Empty();
  for (const auto& [key, e] : entries_) m.entries.push_back(e);
  return m;
}

void MeasurementCache::Save(schema::MeasurementCache::Builder out) const { MeasurementsToCapnp(All(), out); }

void MeasurementCache::Load(schema::MeasurementCache::Reader in) {
  MeasurementCacheMsg cache = MeasurementsFromCapnp(in);
  if (const char* field = NonFiniteFieldOf(cache))
    throw CheckpointError(std::string("the checkpoint's measurement cache has a ") + field + " that is not finite");
  for (CachedMeasurement& e : cache.entries) entries_[{e.plan_hash, e.backend}] = std::move(e);
}

}  // namespace tensortier
