// The last lines of `tensortier train` (and `learner`): what the terms of
// its summary and comparison table mean, one line each, so that a first run
// (`make run`) explains itself.
#pragma once

#include <string>
#include <vector>

#include "learner/run_report.h"

namespace tensortier {

// `backends`: the backends that scored the run's episodes (EpisodeRecord::
// backend: "cost-model", "emulated:optane-dcpmm", "pmem:/mnt/pm0", ...), a
// line for each kind present; `final_source`: FinalPlanChoice::source;
// `measured`: what the rows measured on real iterations are, or why the
// final plan has none (nothing is said when neither is known).
// Ends with '\n'.
std::string ComparisonLegend(const std::vector<std::string>& backends, const std::string& final_source,
                             const FinalPlanMeasurement& measured = {});

}  // namespace tensortier
