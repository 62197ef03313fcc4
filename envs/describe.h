// Human-readable summaries for `tensortier inspect`.
#pragma once

#include <string>

#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

std::string DescribeWorkload(const Workload& w);
std::string DescribePlan(const PlacementPlan& plan);

// "1.5 MiB", "312 B"
std::string FormatBytes(double bytes);

}  // namespace tensortier
