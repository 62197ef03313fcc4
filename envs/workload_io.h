// Workload and plan files: Cap'n Proto messages (protocol/tensortier.capnp)
// preceded by an 8-byte magic. Readers check the magic, the format version
// and the invariants, and throw std::runtime_error naming the problem.
#pragma once

#include <string>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

void WriteWorkloadFile(const Workload& w, const std::string& path);
Workload ReadWorkloadFile(const std::string& path);

void WritePlanFile(const PlacementPlan& plan, const std::string& path);
PlacementPlan ReadPlanFile(const std::string& path);

// In-memory forms, used by the protocol for tasks and reports.
std::string SerializeWorkload(const Workload& w);
Workload ParseWorkload(const std::string& bytes);
std::string SerializePlan(const PlacementPlan& plan);
PlacementPlan ParsePlan(const std::string& bytes);

}  // namespace tensortier
