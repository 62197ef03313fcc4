// `tensortier report RUN_DIR`: the run directory as one self-contained HTML
// page (inline CSS and SVG; nothing is fetched from a network) for people
// without Grafana: convergence plots from metrics.csv (episode return,
// loss, Q values, exploration, the best runtime against the baselines) and
// the comparison table from comparison.csv, with summary.json's facts.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tensortier {

// Renders the page. Throws std::runtime_error when RUN_DIR has no
// metrics.csv; comparison.csv and summary.json are optional.
std::string RenderRunReport(const std::string& run_dir);

// Writes RenderRunReport(run_dir) to `out_path` (default RUN_DIR/report.html)
// atomically and returns the path written.
std::string WriteRunReport(const std::string& run_dir, const std::string& out_path = "");

// Exposed for tests: a line chart as an <svg> element.
struct ChartSeries {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
  bool dots = false;  // scatter instead of a line
};
struct ChartLine {  // a horizontal reference line
  std::string name;
  std::string color;
  double y = 0;
};
std::string SvgLineChart(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<ChartSeries>& series, const std::vector<ChartLine>& lines = {});

}  // namespace tensortier
