// The cells of a CSV file the project writes (metrics.csv and the like: no
// quoting), row by row, the header included.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "common/files.h"

namespace tensortier::testing {

inline std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace tensortier::testing
