// Which episodes of which worker incarnation the learner has taken in, so
// that a resent or duplicated frame is ingested once and only re-acked.
// Episode ids of one incarnation grow from 1, so the set is kept as a
// watermark (every id <= it is in) plus the ids above it: a fleet's worth
// of state stays a few words however long training runs, and it goes into
// checkpoints whole.
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "learner/checkpoint_store.h"

namespace tensortier {

class EpisodeLedger {
 public:
  // Records (incarnation, episode); false when it was already there.
  bool Insert(uint64_t incarnation, uint64_t episode) {
    Entry& e = entries_[incarnation];
    if (episode <= e.watermark || !e.above.insert(episode).second) return false;
    while (!e.above.empty() && *e.above.begin() == e.watermark + 1) {
      e.watermark = *e.above.begin();
      e.above.erase(e.above.begin());
    }
    return true;
  }
  bool Contains(uint64_t incarnation, uint64_t episode) const {
    auto it = entries_.find(incarnation);
    if (it == entries_.end()) return false;
    return episode <= it->second.watermark || it->second.above.count(episode) > 0;
  }

  void Save(ByteWriter& w) const {
    w.U64(entries_.size());
    for (const auto& [incarnation, e] : entries_) {
      w.U64(incarnation);
      w.U64(e.watermark);
      w.U64(e.above.size());
      for (uint64_t id : e.above) w.U64(id);
    }
  }
  void Load(ByteReader& r) {
    entries_.clear();
    for (uint64_t n = r.U64(); n > 0; --n) {
      Entry& e = entries_[r.U64()];
      e.watermark = r.U64();
      for (uint64_t k = r.U64(); k > 0; --k) e.above.insert(r.U64());
    }
  }

 private:
  struct Entry {
    uint64_t watermark = 0;
    std::set<uint64_t> above;
  };
  std::map<uint64_t, Entry> entries_;
};

}  // namespace tensortier
