#include "learner/run_legend.h"

#include <set>

namespace tensortier {
namespace {

std::string Kind(const std::string& backend) {
  const size_t colon = backend.find(':');
  return colon == std::string::npos ? backend : backend.substr(0, colon);
}

std::string FinalPlanMeaning(const std::string& source) {
  if (source == "greedy policy")
    return "the trained network's own plan: each tensor placed by the action it values most";
  if (source == "plan-time search")
    return "the network's greedy plan improved after training by a search the network guides (summary.json: "
           "plan_search; it also started from the plan-time ILP's plan and the fastest baseline's, when given, "
           "and went on from the network's own)";
  const std::string from = "plan-time search from ";
  if (source.rfind(from, 0) == 0)
    return "the search the network guides, gone on from " + source.substr(from.size()) +
           " (the guided ILP's or the fastest baseline's, a faster start than the network's own plans), improved "
           "where it found better, else kept as it is (summary.json: plan_search.started_from, kept_start)";
  if (source == "plan-time ILP")
    return "AutoTM's ILP with the network's surest decisions fixed, solved by CBC from its greedy plan";
  if (source == "best episode seen in training")
    return "the fastest plan any training episode or evaluation produced, not what the final network does";
  return "";
}

}  // namespace

std::string ComparisonLegend(const std::vector<std::string>& backends, const std::string& final_source,
                             const FinalPlanMeasurement& measured) {
  std::set<std::string> kinds;
  for (const std::string& b : backends) kinds.insert(Kind(b));
  std::string out = "what the terms mean:\n";
  if (kinds.count("cost-model"))
    out += "  cost-model       an episode scored by the cost model's prediction from the profile, not by a run\n";
  if (kinds.count("emulated"))
    out += "  emulated:...     the slow tier is ordinary DRAM slowed by a timing model of that device's latency "
           "and bandwidth (docs/emulation.md): an emulation, not a measurement of the device\n";
  if (kinds.count("pmem") || kinds.count("dax-kmem"))
    out += "  pmem, dax-kmem   real slow memory: the times were measured on it\n";
  out += "  runtime (ms)     one training iteration under the plan, as the cost model predicts it from the "
         "workload's kernel and copy times\n";
  out += "  vs all-DRAM      all-DRAM time / this plan's time: 100% is as fast as with no DRAM limit\n";
  out += "  normalised cost  (this plan's time - all-DRAM's) / (all-slow's - all-DRAM's): 0 is all-DRAM's speed, "
         "1 all-slow's\n";
  const std::string meaning = FinalPlanMeaning(final_source);
  if (!meaning.empty()) out += "  final plan       from the " + final_source + ": " + meaning + "\n";
  if (measured.measured)
    out += "  measured on ...  not the cost model: real training iterations on " + measured.backend + ", " +
           measured.method + "\n";
  else if (!measured.not_measured_reason.empty())
    out += "  measured         " + measured.not_measured_reason + "; every row is the cost model's\n";
  return out;
}

}  // namespace tensortier
