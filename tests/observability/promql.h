// Helpers of the observability tests: the PromQL expressions of the
// Grafana dashboards, Grafana's variables replaced, the "signal" form of an
// alert expression, and what counts as data in a Prometheus API answer.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "common/files.h"

namespace tensortier::testing {

struct PanelQuery {
  std::string where;  // "convergence.json: panel 'TD loss' A"
  std::string expr;   // as written in the dashboard
};

inline void CollectExprs(const nlohmann::json& node, const std::string& file, const std::string& panel,
                         std::vector<PanelQuery>& out) {
  if (node.is_object()) {
    std::string title = node.contains("title") && node["title"].is_string() ? node["title"].get<std::string>() : panel;
    if (node.contains("expr") && node["expr"].is_string())
      out.push_back({file + ": panel '" + panel + "' " + node.value("refId", std::string("?")), node["expr"]});
    for (const auto& [key, child] : node.items())
      if (key != "templating") CollectExprs(child, file, title, out);
  } else if (node.is_array()) {
    for (const auto& child : node) CollectExprs(child, file, panel, out);
  }
}

// Every panel target's expr, and every query variable's query
// (label_values(METRIC, LABEL) becomes METRIC: the series the variable reads).
inline std::vector<PanelQuery> DashboardQueries(const std::string& dir) {
  std::vector<PanelQuery> out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    nlohmann::json d = nlohmann::json::parse(ReadFile(path.string()));
    const std::string file = path.filename().string();
    CollectExprs(d["panels"], file, "", out);
    for (const auto& v : d["templating"]["list"]) {
      if (v.value("type", "") != "query") continue;
      std::string q = v["query"].is_object() ? v["query"].value("query", "") : v["query"].get<std::string>();
      const std::string prefix = "label_values(";
      if (q.rfind(prefix, 0) == 0) {
        const size_t comma = q.rfind(',');
        q = comma == std::string::npos ? q.substr(prefix.size(), q.size() - prefix.size() - 1)
                                       : q.substr(prefix.size(), comma - prefix.size());
      }
      out.push_back({file + ": variable '" + v.value("name", "?") + "'", q});
    }
  }
  return out;
}

inline void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

// Grafana's variables as a dashboard with "All" selected expands them, for
// a Prometheus scraping every second.
inline std::string ExpandGrafanaVariables(std::string e) {
  ReplaceAll(e, "$__rate_interval", "15s");
  ReplaceAll(e, "${__rate_interval}", "15s");
  ReplaceAll(e, "$__interval", "2s");
  ReplaceAll(e, "$__range", "1m");
  for (const char* v : {"workload", "agent", "instance"}) {
    ReplaceAll(e, std::string("${") + v + "}", ".*");
    ReplaceAll(e, std::string("$") + v, ".*");
  }
  return e;
}

// An alert expression with every comparison made a `bool` comparison: it
// returns 0/1 for every series the alert looks at instead of only the
// firing ones, so "returns data" checks that the alert's inputs exist.
// Label matchers ({...}), ranges ([...]) and strings are left alone.
inline std::string WithBoolComparisons(const std::string& e) {
  std::string out;
  int braces = 0, brackets = 0;
  char quote = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    const char c = e[i];
    out += c;
    if (quote) {
      if (c == '\\' && i + 1 < e.size()) out += e[++i];
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') { quote = c; continue; }
    if (c == '{') ++braces;
    if (c == '}') --braces;
    if (c == '[') ++brackets;
    if (c == ']') --brackets;
    if (braces || brackets) continue;
    const char next = i + 1 < e.size() ? e[i + 1] : 0;
    size_t op_end = 0;
    if ((c == '=' || c == '!' || c == '>' || c == '<') && next == '=') op_end = i + 1;
    else if ((c == '>' || c == '<') && next != '=') op_end = i;
    if (!op_end) continue;
    if (op_end > i) out += e[++i];
    size_t j = i + 1;
    while (j < e.size() && e[j] == ' ') ++j;
    if (e.compare(j, 4, "bool") != 0) out += " bool";
  }
  return out;
}

// Status success and at least one sample that is a number (not NaN).
inline bool HasData(const nlohmann::json& r) {
  if (r.value("status", "") != "success") return false;
  const auto& d = r["data"];
  auto number = [](const nlohmann::json& v) {
    if (!v.is_array() || v.size() < 2 || !v[1].is_string()) return false;
    return !std::isnan(std::strtod(v[1].get<std::string>().c_str(), nullptr));
  };
  if (d.value("resultType", "") == "scalar") return number(d["result"]);
  for (const auto& s : d["result"])
    if (number(s["value"])) return true;
  return false;
}

// Runs a shell command; returns its exit status and output (stdout+stderr).
inline int RunCommand(const std::string& cmd, std::string& output) {
  output.clear();
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace tensortier::testing
