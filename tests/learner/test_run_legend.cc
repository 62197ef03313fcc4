// The end of `tensortier train` explains its terms, one line each (issue 18).
#include <gtest/gtest.h>

#include <sstream>

#include "learner/run_legend.h"

namespace tensortier {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The line that starts with `term` (after the indent), or "".
std::string LineOf(const std::string& legend, const std::string& term) {
  for (const std::string& line : Lines(legend))
    if (line.rfind("  " + term + " ", 0) == 0) return line;
  return "";
}

TEST(RunLegend, MakeRunsTermsEachGetOneLine) {
  // What `make run` shows: real iterations on an emulated tier, the cost model between them.
  const std::string legend =
      ComparisonLegend({"cost-model", "emulated:optane-dcpmm", "cost-model"}, "plan-time search");
  ASSERT_EQ(legend.back(), '\n');
  EXPECT_EQ(Lines(legend).front(), "what the terms mean:");
  EXPECT_NE(LineOf(legend, "emulated:...").find("an emulation, not a measurement of the device"), std::string::npos)
      << legend;
  EXPECT_NE(LineOf(legend, "cost-model").find("cost model's prediction"), std::string::npos) << legend;
  EXPECT_NE(LineOf(legend, "vs all-DRAM").find("all-DRAM time / this plan's time"), std::string::npos) << legend;
  EXPECT_NE(LineOf(legend, "normalised cost").find("0 is all-DRAM's speed, 1 all-slow's"), std::string::npos)
      << legend;
  EXPECT_NE(LineOf(legend, "final plan").find("from the plan-time search: the network's greedy plan improved"),
            std::string::npos)
      << legend;
  // A search that went on from another planner's plan says whose.
  EXPECT_NE(LineOf(ComparisonLegend({"cost-model"}, "plan-time search from relaxation's plan"), "final plan")
                .find("from the plan-time search from relaxation's plan: the search the network guides, gone on from "
                      "relaxation's plan (the guided ILP's or the fastest baseline's"),
            std::string::npos)
      << ComparisonLegend({"cost-model"}, "plan-time search from relaxation's plan");
  EXPECT_EQ(LineOf(legend, "pmem,"), "") << legend;  // no real slow memory here
}

TEST(RunLegend, EachSourceOfTheFinalPlanAndEachBackendKindIsExplained) {
  EXPECT_NE(LineOf(ComparisonLegend({"cost-model"}, "greedy policy"), "final plan").find("the trained network's own plan"),
            std::string::npos);
  EXPECT_NE(LineOf(ComparisonLegend({"cost-model"}, "best episode seen in training"), "final plan")
                .find("not what the final network does"),
            std::string::npos);
  const std::string real = ComparisonLegend({"pmem:/mnt/pm0"}, "greedy policy");
  EXPECT_NE(LineOf(real, "pmem, dax-kmem").find("measured"), std::string::npos) << real;
  EXPECT_EQ(LineOf(real, "emulated:..."), "") << real;
  EXPECT_EQ(LineOf(real, "cost-model"), "") << real;
}

}  // namespace
}  // namespace tensortier
