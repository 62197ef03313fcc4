// What the tests of exported lookups share: the DQN they train and export,
// and export options quick enough for a unit test.
#pragma once

#include <cstring>
#include <string>

#include "agents/dqn_agent.h"
#include "envs/placement_env.h"
#include "exporter/export.h"
#include "hostrt/lookup_format.h"

namespace tensortier::testing {

inline DqnConfig ExportedDqn() {
  DqnConfig c;
  c.observation_size = kObservationSize;
  c.hidden = {64, 64};
  c.learning_rate = 1e-3;
  c.gamma = 0.99;
  c.batch_size = 32;
  c.target_update_interval = 200;
  c.learning_starts = 512;
  c.seed = 11;
  c.device = "cpu";
  return c;
}

// Coverage from few episodes on one small synthetic workload.
inline ExportOptions QuickExport(const std::string& path) {
  ExportOptions o;
  o.output_path = path;
  o.coverage_episodes = 16;
  o.coverage_workloads = {"synthetic:resnet:8:2097152"};
  o.coverage_episodes_per_workload = 8;
  return o;
}

// Recomputes both checksums of a lookup file's bytes, so that a test can
// reach the structural checks behind them.
inline void ResealLookup(std::string& b) {
  namespace lf = lookup_format;
  uint32_t payload = lf::Crc32(b.data() + lf::kHeaderBytes, b.size() - lf::kHeaderBytes);
  std::memcpy(&b[lf::kOffPayloadCrc], &payload, 4);
  uint32_t header = lf::Crc32(b.data(), lf::kOffHeaderCrc);
  std::memcpy(&b[lf::kOffHeaderCrc], &header, 4);
}

}  // namespace tensortier::testing
