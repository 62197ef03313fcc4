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

#include "learner/checkpoint_message.h"

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

  void Save(schema::EpisodeLedger::Builder out) const {
    auto incarnations = out.initIncarnations(static_cast<unsigned>(entries_.size()));
    unsigned i = 0;
    for (const auto& [incarnation, e] : entries_) {
      schema::IncarnationEpisodes::Builder o = incarnations[i++];
      o.setIncarnation(incarnation);
      o.setWatermark(e.watermark);
      FillList(e.above, o.initAbove(static_cast<unsigned>(e.above.size())));
    }
  }
  void Load(schema::EpisodeLedger::Reader in) {
    entries_.clear();
    for (schema::IncarnationEpisodes::Reader o : in.getIncarnations()) {
      Entry& e = entries_[o.getIncarnation()];
      e.watermark = o.getWatermark();
      for (uint64_t id : o.getAbove()) e.above.insert(id);
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
