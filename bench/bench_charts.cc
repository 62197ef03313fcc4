// Redraws the SVG plots of a `tensortier bench` output directory from its
// bench.json, without running anything again: for charts whose numbers came
// from a long run (docs/results/fig14, fig17) when only the drawing changed.
//
//   bench_charts DIR...   writes DIR/bench-WORKLOAD.svg
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/files.h"
#include "evaluation/benchmark.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BENCH_DIR...\n", argv[0]);
    return 2;
  }
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string dir = argv[i];
      const nlohmann::json rows_json = nlohmann::json::parse(tensortier::ReadFile(dir + "/bench.json"));
      std::vector<tensortier::BenchmarkRow> rows;
      for (const nlohmann::json& j : rows_json) {
        tensortier::BenchmarkRow r;
        r.workload = j.at("workload").get<std::string>();
        r.policy = j.at("policy").get<std::string>();
        r.dram_fraction = j.at("dram_fraction").get<double>();
        r.predicted_ns = j.at("predicted_ns").get<double>();
        r.predicted_relative = j.at("predicted_relative").get<double>();
        r.measured = j.at("measured").get<bool>();
        r.measured_relative = j.at("measured_relative").get<double>();
        rows.push_back(r);
      }
      tensortier::WriteBenchmarkCharts(dir, rows);
      std::printf("%s: %zu rows redrawn\n", dir.c_str(), rows.size());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_charts: %s\n", e.what());
    return 1;
  }
  return 0;
}
