#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

#include "common/files.h"

namespace tensortier {
namespace {

// ---------------------------------------------------------------- input

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int Column(const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    return -1;
  }
};

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  cells.push_back(cell);
  return cells;
}

Table ReadCsv(const std::string& path) {
  Table t;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (t.header.empty())
      t.header = SplitCsvLine(line);
    else
      t.rows.push_back(SplitCsvLine(line));
  }
  return t;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

double Number(const std::vector<std::string>& row, int col) {
  if (col < 0 || static_cast<size_t>(col) >= row.size() || row[col].empty()) return std::nan("");
  char* end = nullptr;
  double v = std::strtod(row[col].c_str(), &end);
  return end && *end == '\0' ? v : std::nan("");
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Fmt(double v, int precision = 3) {
  if (!std::isfinite(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

// A compact label for an axis tick: 1.5k, 0.25, 3e-05 ...
std::string TickLabel(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  char buf[32];
  if (a >= 1e6 || a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2g", v);
  else if (a >= 1e4)
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%g", std::round(v * 1e6) / 1e6);
  return buf;
}

// 1-2-5 steps covering [lo, hi] in about `target` intervals.
std::vector<double> NiceTicks(double& lo, double& hi, int target = 5) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  std::vector<double> ticks;
  for (double t = lo; t <= hi + step * 0.5; t += step) ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

std::vector<std::pair<double, double>> MovingAverage(const std::vector<std::pair<double, double>>& pts, size_t window) {
  std::vector<std::pair<double, double>> out;
  double sum = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    sum += pts[i].second;
    if (i >= window) sum -= pts[i - window].second;
    out.push_back({pts[i].first, sum / static_cast<double>(std::min(i + 1, window))});
  }
  return out;
}

// At most `max` points, evenly strided (keeps the last one).
std::vector<std::pair<double, double>> Thin(const std::vector<std::pair<double, double>>& pts, size_t max) {
  if (pts.size() <= max) return pts;
  std::vector<std::pair<double, double>> out;
  const double stride = static_cast<double>(pts.size() - 1) / static_cast<double>(max - 1);
  for (size_t i = 0; i < max; ++i) out.push_back(pts[static_cast<size_t>(std::llround(i * stride))]);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- charts

namespace {

// Charts are also written as files on their own (bench's plots): their style
// travels with them instead of coming from the report page, with presentation
// attributes as a fallback for renderers that ignore <style>.
constexpr const char* kChartStyle =
    "<style>"
    "text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif}"
    ".title{font-size:14px;font-weight:600;fill:#1f2328}.grid line{stroke:#eaeef2}"
    ".axis text{font-size:11px;fill:#57606a}.legend{font-size:11px;fill:#1f2328}"
    ".frame{fill:none;stroke:#afb8c1}.empty{font-size:13px;fill:#8c959f}"
    "</style>\n";

// Width of a legend label at 11 px (a little more than the average glyph,
// so that long labels never run into the next entry).
double LegendLabelWidth(const std::string& name) { return 6.6 * static_cast<double>(name.size()); }

// Series with this few points get a marker on each (one point draws no line).
constexpr size_t kMarkedPoints = 40;

}  // namespace

std::string SvgLineChart(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<ChartSeries>& series, const std::vector<ChartLine>& lines) {
  constexpr double W = 640, L = 64, R = 16, T = 34, kPlotH = 184, kLegendRow = 16, kSwatch = 22;
  // Legend entries, wrapped into rows that fit the width.
  struct Entry {
    std::string name, color;
    bool dashed, marker;
    double x = 0;
    int row = 0;
  };
  std::vector<Entry> entries;
  for (const ChartSeries& s : series)
    entries.push_back({s.name, s.color, false, s.dots || s.points.size() <= kMarkedPoints});
  for (const ChartLine& l : lines) entries.push_back({l.name, l.color, true, false});
  int rows = entries.empty() ? 0 : 1;
  {
    double lx = L;
    for (Entry& e : entries) {
      const double width = kSwatch + LegendLabelWidth(e.name) + 14;
      if (lx > L && lx + width > W - R) {
        lx = L;
        ++rows;
      }
      e.x = lx;
      e.row = rows - 1;
      lx += width;
    }
  }
  const double B = 46 + kLegendRow * rows;
  const double H = T + kPlotH + B;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const ChartSeries& s : series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  for (const ChartLine& l : lines)
    if (std::isfinite(l.y)) {
      y0 = std::min(y0, l.y);
      y1 = std::max(y1, l.y);
    }
  std::ostringstream o;
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << ' ' << H << "\" width=\""
    << W << "\" height=\"" << H << "\" role=\"img\" aria-label=\"" << Escape(title) << "\">\n"
    << kChartStyle << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  o << "<text x=\"" << L << "\" y=\"20\" class=\"title\" font-size=\"14\" font-weight=\"600\" fill=\"#1f2328\">"
    << Escape(title) << "</text>\n";
  if (!std::isfinite(x0) || !std::isfinite(y0)) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2
      << "\" text-anchor=\"middle\" class=\"empty\" font-size=\"13\" fill=\"#8c959f\">no data</text></svg>\n";
    return o.str();
  }
  std::vector<double> xt = NiceTicks(x0, x1, 6), yt = NiceTicks(y0, y1, 5);
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return T + kPlotH - (y - y0) / (y1 - y0) * kPlotH; };
  o << "<g class=\"grid\" stroke=\"#eaeef2\">";
  for (double t : yt)
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << py(t) << "\" y2=\"" << py(t) << "\"/>";
  for (double t : xt)
    o << "<line y1=\"" << T << "\" y2=\"" << T + kPlotH << "\" x1=\"" << px(t) << "\" x2=\"" << px(t) << "\"/>";
  o << "</g>\n<g class=\"axis\" font-size=\"11\" fill=\"#57606a\">";
  for (double t : yt)
    o << "<text x=\"" << L - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">" << TickLabel(t) << "</text>";
  for (double t : xt)
    o << "<text x=\"" << px(t) << "\" y=\"" << T + kPlotH + 16 << "\" text-anchor=\"middle\">" << TickLabel(t)
      << "</text>";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << T + kPlotH + 32 << "\" text-anchor=\"middle\">"
    << Escape(x_label) << "</text>";
  o << "<text transform=\"translate(14 " << T + kPlotH / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << Escape(y_label) << "</text></g>\n";
  o << "<rect class=\"frame\" fill=\"none\" stroke=\"#afb8c1\" x=\"" << L << "\" y=\"" << T << "\" width=\""
    << W - L - R << "\" height=\"" << kPlotH << "\"/>\n";
  // Writes `format` (x then y in pixels, two %.1f) for every finite point.
  auto write_points = [&](const std::vector<std::pair<double, double>>& points, const char* format) {
    char buf[96];
    for (const auto& [x, y] : points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      std::snprintf(buf, sizeof buf, format, px(x), py(y));
      o << buf;
    }
  };
  for (const ChartSeries& s : series) {
    if (s.dots) {
      o << "<g fill=\"" << s.color << "\" fill-opacity=\"0.35\">";
      write_points(Thin(s.points, 3000), "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.6\"/>");
      o << "</g>\n";
      continue;
    }
    const std::vector<std::pair<double, double>> pts = Thin(s.points, 2000);
    if (pts.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"1.8\" points=\"";
      write_points(pts, "%.1f,%.1f ");
      o << "\"/>\n";
    }
    if (s.points.size() <= kMarkedPoints) {
      o << "<g class=\"markers\" fill=\"" << s.color << "\" stroke=\"#ffffff\" stroke-width=\"0.8\">";
      write_points(pts, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"/>");
      o << "</g>\n";
    }
  }
  for (const ChartLine& l : lines) {
    if (!std::isfinite(l.y)) continue;
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << py(l.y) << "\" y2=\"" << py(l.y)
      << "\" stroke=\"" << l.color << "\" stroke-width=\"1.4\" stroke-dasharray=\"6 4\"/>\n";
  }
  // Legend, below the axis label.
  for (const Entry& e : entries) {
    const double ly = T + kPlotH + 50 + kLegendRow * e.row;
    o << "<line x1=\"" << e.x << "\" x2=\"" << e.x + 18 << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4
      << "\" stroke=\"" << e.color << "\" stroke-width=\"2.5\"" << (e.dashed ? " stroke-dasharray=\"5 3\"" : "")
      << "/>";
    if (e.marker) o << "<circle cx=\"" << e.x + 9 << "\" cy=\"" << ly - 4 << "\" r=\"3.5\" fill=\"" << e.color << "\"/>";
    o << "<text class=\"legend\" font-size=\"11\" fill=\"#1f2328\" x=\"" << e.x + kSwatch << "\" y=\"" << ly << "\">"
      << Escape(e.name) << "</text>";
  }
  o << "\n</svg>\n";
  return o.str();
}

// ---------------------------------------------------------------- page

namespace {

// The all-DRAM and all-slow times that the workers measured and normalised
// the measured episodes by (summary.json's measured_references), so that the
// measured plot says where its points lie between the two.
std::vector<ChartLine> MeasuredReferenceLines(const nlohmann::json& summary) {
  std::vector<ChartLine> lines;
  if (!summary.contains("measured_references") || !summary["measured_references"].is_array()) return lines;
  const bool several = summary["measured_references"].size() > 1;
  for (const nlohmann::json& r : summary["measured_references"]) {
    const std::string on = several ? " (" + r.value("backend", std::string()) + ")" : "";
    lines.push_back({"all-DRAM, measured" + on, "#2e7d32", r.value("all_dram_ns", 0.0) / 1e6});
    lines.push_back({"all-slow, measured" + on, "#c62828", r.value("all_slow_ns", 0.0) / 1e6});
  }
  return lines;
}

// The comparison table is the cost model's: what the final plan took on real
// iterations, or why it has no such figure (summary.json final_plan.measured).
std::string FinalPlanMeasuredParagraph(const nlohmann::json& summary) {
  if (!summary.contains("final_plan") || !summary["final_plan"].contains("measured")) return "";
  const nlohmann::json& m = summary["final_plan"]["measured"];
  if (!m.value("measured", false))
    return "<p>The table is the cost model's; " + Escape(m.value("reason", std::string("final plan not measured"))) +
           ".</p>\n";
  if (m.value("oom", false))
    return "<p>Measured on " + Escape(m.value("backend", std::string())) + ": the final plan ran out of DRAM.</p>\n";
  return "<p>The table is the cost model's. Measured on " + Escape(m.value("backend", std::string())) +
         ": the final plan " + Fmt(m.value("runtime_ns", 0.0) / 1e6, 3) + " ms (" +
         Fmt(100 * m.value("relative_performance", 0.0), 1) + "% of all-DRAM), all-DRAM " +
         Fmt(m.value("all_dram_ns", 0.0) / 1e6, 3) + " ms, all-slow " + Fmt(m.value("all_slow_ns", 0.0) / 1e6, 3) +
         " ms; " + Escape(m.value("method", std::string())) + ".</p>\n";
}

}  // namespace

std::string RenderRunReport(const std::string& run_dir) {
  const std::string metrics_path = run_dir + "/metrics.csv";
  if (!Exists(metrics_path))
    throw std::runtime_error("'" + run_dir + "' is not a run directory: it has no metrics.csv");
  Table m = ReadCsv(metrics_path);
  const int c_ep = m.Column("episode"), c_step = m.Column("step_reward_sum"), c_epi = m.Column("episodic_reward"),
            c_loss = m.Column("loss"), c_q = m.Column("mean_q"), c_eps = m.Column("epsilon"),
            c_best = m.Column("best_runtime_ns"), c_rt = m.Column("runtime_ns"), c_cost = m.Column("normalised_cost"),
            c_oom = m.Column("oom"), c_backend = m.Column("backend");
  if (c_ep < 0) throw std::runtime_error(metrics_path + " has no 'episode' column");

  std::vector<std::pair<double, double>> ret, loss, q, eps, best, cost, runtime_measured;
  size_t oom = 0;
  std::map<std::string, size_t> backends;
  for (const auto& row : m.rows) {
    const double ep = Number(row, c_ep);
    const double r = Number(row, c_step) + Number(row, c_epi);
    if (std::isfinite(r)) ret.push_back({ep, r});
    const double l = Number(row, c_loss), qq = Number(row, c_q);
    if (std::isfinite(l) && (l != 0 || qq != 0)) {  // 0 and 0: before learning started
      loss.push_back({ep, l});
      q.push_back({ep, qq});
    }
    if (std::isfinite(Number(row, c_eps))) eps.push_back({ep, Number(row, c_eps)});
    const double b = Number(row, c_best);
    if (std::isfinite(b) && b > 0) best.push_back({ep, b / 1e6});
    if (std::isfinite(Number(row, c_cost))) cost.push_back({ep, Number(row, c_cost)});
    if (Number(row, c_oom) == 1) ++oom;
    const std::string backend = c_backend >= 0 && static_cast<size_t>(c_backend) < row.size() ? row[c_backend] : "";
    ++backends[backend.empty() ? "unknown" : backend];
    if (backend != "cost-model" && !backend.empty() && Number(row, c_rt) > 0 && Number(row, c_oom) != 1)
      runtime_measured.push_back({ep, Number(row, c_rt) / 1e6});
  }
  const size_t window = std::max<size_t>(5, m.rows.size() / 40);

  Table comparison;
  if (Exists(run_dir + "/comparison.csv")) comparison = ReadCsv(run_dir + "/comparison.csv");
  nlohmann::json summary;
  if (Exists(run_dir + "/summary.json")) summary = nlohmann::json::parse(ReadFile(run_dir + "/summary.json"), nullptr, false);
  if (summary.is_discarded()) summary = nlohmann::json();

  std::vector<ChartLine> baselines;
  const int c_policy = comparison.Column("policy"), c_runtime = comparison.Column("runtime_ns"),
            c_source = comparison.Column("source");
  auto cell = [](const std::vector<std::string>& row, int col) {
    return col >= 0 && static_cast<size_t>(col) < row.size() ? row[col] : std::string();
  };
  // Rows measured on real iterations follow the cost model's; they are not
  // the cost model's references.
  auto measured_row = [&](const std::vector<std::string>& row) { return cell(row, c_source).rfind("measured on", 0) == 0; };
  const char* colors[] = {"#2e7d32", "#ef6c00", "#c62828", "#6a1b9a", "#00838f"};
  for (size_t i = 0; i < comparison.rows.size(); ++i) {
    const auto& row = comparison.rows[i];
    if (c_policy < 0 || c_runtime < 0 || static_cast<size_t>(c_policy) >= row.size() || measured_row(row)) continue;
    const std::string& p = row[c_policy];
    if (p.rfind("all-dram", 0) == 0 || p == "first-touch" || p == "all-slow")
      baselines.push_back({p, colors[baselines.size() % 5], Number(row, c_runtime) / 1e6});
  }

  std::ostringstream h;
  const std::string workload = summary.contains("workload") ? summary["workload"].value("name", "") : "";
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<title>TensorTier run report" << (workload.empty() ? "" : " – " + Escape(workload)) << "</title>\n"
    << "<style>\n"
       "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:24px auto;"
       "max-width:1340px;padding:0 16px;color:#1f2328;background:#fff}\n"
       "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;"
       "padding-bottom:4px}\n"
       ".sub{color:#57606a;font-size:13px;margin-bottom:12px}\n"
       ".facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:8px;margin:12px 0}\n"
       ".fact{border:1px solid #d0d7de;border-radius:6px;padding:8px 10px}.fact b{display:block;font-size:18px}"
       ".fact span{color:#57606a;font-size:12px}\n"
       ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}\n"
       "svg.chart{width:100%;height:auto;border:1px solid #d0d7de;border-radius:6px;background:#fff}\n"
       "svg .title{font-size:14px;font-weight:600;fill:#1f2328}svg .grid line{stroke:#eaeef2}"
       "svg .axis text{font-size:11px;fill:#57606a}svg .legend{font-size:11px;fill:#1f2328}"
       "svg .frame{fill:none;stroke:#afb8c1}svg .empty{font-size:13px;fill:#8c959f}\n"
       "table{border-collapse:collapse;font-size:13px;margin-top:6px}th,td{border:1px solid #d0d7de;"
       "padding:5px 10px;text-align:right}th{background:#f6f8fa}td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}\n"
       "tr.learned td{font-weight:600;background:#f1f8e9}\n"
       "footer{color:#8c959f;font-size:12px;margin-top:28px}\n"
       "</style>\n</head>\n<body>\n";
  h << "<h1>TensorTier run report</h1>\n<div class=\"sub\">" << Escape(run_dir) << "</div>\n";

  // Facts.
  auto fact = [&](const std::string& label, const std::string& value) {
    h << "<div class=\"fact\"><span>" << Escape(label) << "</span><b>" << Escape(value) << "</b></div>\n";
  };
  h << "<div class=\"facts\">\n";
  if (!workload.empty()) fact("workload", workload);
  if (summary.contains("dram_limit_bytes"))
    fact("DRAM limit", Fmt(summary["dram_limit_bytes"].get<double>() / 1048576.0, 1) + " MiB");
  fact("episodes", std::to_string(m.rows.size()));
  if (summary.contains("updates")) fact("gradient updates", std::to_string(summary["updates"].get<uint64_t>()));
  if (summary.contains("wall_seconds")) fact("wall time", Fmt(summary["wall_seconds"].get<double>(), 1) + " s");
  if (summary.contains("workers_seen")) fact("workers", std::to_string(summary["workers_seen"].size()));
  fact("OOM episodes", std::to_string(oom) + " (" + Fmt(m.rows.empty() ? 0 : 100.0 * oom / m.rows.size(), 1) + "%)");
  {
    std::string b;
    for (const auto& [name, n] : backends) b += (b.empty() ? "" : ", ") + name;
    fact("scored by", b.empty() ? "–" : b);
  }
  if (!best.empty()) fact("best runtime (cost model)", Fmt(best.back().second, 3) + " ms");
  if (summary.contains("final_plan")) fact("final plan", summary["final_plan"].value("produced_by", ""));
  h << "</div>\n";

  // Comparison table.
  h << "<h2>Final plan against the baselines</h2>\n";
  if (comparison.rows.empty()) {
    h << "<p>No comparison.csv in this run directory.</p>\n";
  } else {
    const int c_rel = comparison.Column("relative_performance"), c_nc = comparison.Column("normalised_cost"),
              c_peak = comparison.Column("dram_peak_bytes"), c_mig = comparison.Column("bytes_migrated"),
              c_oomc = comparison.Column("oom"), c_usd = comparison.Column("memory_cost_dollars");
    h << "<table>\n<tr><th>policy</th><th>source</th><th>runtime (ms)</th><th>vs all-DRAM</th><th>normalised cost</th>"
         "<th>DRAM peak (MiB)</th><th>migrated (MiB)</th><th>OOM</th><th>memory cost ($)</th></tr>\n";
    for (const auto& row : comparison.rows) {
      const std::string policy = cell(row, c_policy);
      const bool learned = policy.rfind("all-dram", 0) != 0 && policy != "first-touch" && policy != "all-slow";
      h << "<tr" << (learned ? " class=\"learned\"" : "") << "><td>" << Escape(policy) << "</td><td>"
        << Escape(cell(row, c_source)) << "</td><td>"
        << Fmt(Number(row, c_runtime) / 1e6, 3) << "</td><td>" << Fmt(100 * Number(row, c_rel), 1) << "%</td><td>"
        << Fmt(Number(row, c_nc), 3) << "</td><td>" << Fmt(Number(row, c_peak) / 1048576.0, 1) << "</td><td>"
        << Fmt(Number(row, c_mig) / 1048576.0, 1) << "</td><td>" << (Number(row, c_oomc) == 1 ? "yes" : "no")
        << "</td><td>" << Fmt(Number(row, c_usd), 4) << "</td></tr>\n";
    }
    h << "</table>\n";
  }
  h << FinalPlanMeasuredParagraph(summary);

  // Convergence.
  h << "<h2>Convergence</h2>\n<div class=\"charts\">\n";
  h << SvgLineChart("Episode return (step rewards + episodic reward)", "episode", "return",
                    {{"per episode", "#0969da", ret, true},
                     {"moving average (" + std::to_string(window) + ")", "#cf222e", MovingAverage(ret, window), false}});
  h << SvgLineChart("Best plan's runtime against the baselines (cost model)", "episode", "runtime (ms)",
                    {{"best plan so far", "#0969da", best, false}}, baselines);
  h << SvgLineChart("TD loss", "episode", "loss",
                    {{"per episode", "#8250df", loss, true},
                     {"moving average", "#cf222e", MovingAverage(loss, window), false}});
  h << SvgLineChart("Mean Q value", "episode", "Q", {{"mean Q of the episode's updates", "#1a7f37", q, false}});
  h << SvgLineChart("Exploration", "episode", "epsilon", {{"epsilon", "#bf8700", eps, false}});
  h << SvgLineChart("Normalised cost of the episodes' plans", "episode", "0 = all-DRAM, 1 = all-slow",
                    {{"per episode", "#0969da", cost, true},
                     {"moving average", "#cf222e", MovingAverage(cost, window), false}});
  if (!runtime_measured.empty())
    h << SvgLineChart("Measured iteration time of the episodes' plans", "episode", "runtime (ms)",
                      {{"measured on real tiers", "#0969da", runtime_measured, true},
                       {"moving average", "#cf222e", MovingAverage(runtime_measured, window), false}},
                      MeasuredReferenceLines(summary));
  h << "</div>\n";
  h << "<footer>Written by <code>tensortier report</code> from metrics.csv, comparison.csv and summary.json "
       "(docs/file-formats.md). Self-contained: no scripts, no network.</footer>\n</body>\n</html>\n";
  return h.str();
}

std::string WriteRunReport(const std::string& run_dir, const std::string& out_path) {
  const std::string path = out_path.empty() ? run_dir + "/report.html" : out_path;
  WriteFileAtomically(path, RenderRunReport(run_dir));
  return path;
}

}  // namespace tensortier
