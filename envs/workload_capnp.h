// Conversions between the domain types and their Cap'n Proto form
// (protocol/tensortier.capnp). Internal to the file formats (workload and
// plan files, the learner checkpoint) and the protocol codec; nothing else
// should need the generated types.
//
// The *FromCapnp functions treat the reader as untrusted: unknown enum values
// and unsupported format versions throw std::invalid_argument, and a workload
// is finalized (which validates it) before it is returned.
#pragma once

#include <string>

#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "tensortier.capnp.h"

namespace tensortier {

// Text may hold any bytes, NULs included; these keep them all.
inline std::string TextToString(capnp::Text::Reader text) {
  return std::string(text.begin(), text.size());
}
inline capnp::Text::Reader StringToText(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}
inline capnp::Data::Reader BytesToData(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
inline std::string DataToBytes(capnp::Data::Reader data) {
  return std::string(reinterpret_cast<const char*>(data.begin()), data.size());
}

void WorkloadToCapnp(const Workload& w, schema::Workload::Builder out);
Workload WorkloadFromCapnp(schema::Workload::Reader in);

void PlanToCapnp(const PlacementPlan& plan, schema::PlacementPlan::Builder out);
PlacementPlan PlanFromCapnp(schema::PlacementPlan::Reader in);

void EnvConfigToCapnp(const EnvConfig& config, schema::EnvSettings::Builder out);
EnvConfig EnvConfigFromCapnp(schema::EnvSettings::Reader in);

schema::Tier TierToCapnp(Tier tier);
Tier TierFromCapnp(schema::Tier tier);
schema::MigrationMode MigrationModeToCapnp(MigrationMode mode);
MigrationMode MigrationModeFromCapnp(schema::MigrationMode mode);

}  // namespace tensortier
