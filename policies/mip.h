// A small mixed-integer program and its solution with CBC (COIN-OR) through
// the C API. Kept apart so the AutoTM formulation reads as the paper does
// and the solver could be swapped without touching it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tensortier {

struct MipOptions {
  double time_limit_seconds = 60;
  double relative_gap = 0.01;  // stop when (incumbent - bound) / incumbent <= this
  int log_level = 0;
  // A known feasible assignment of (some) integer variables, handed to CBC
  // as a MIP start so a time-limited solve always has a solution.
  std::vector<std::pair<int, double>> start;
  // CBC's preprocessing (CglPreProcess). It can lose a MIP start: a solve
  // from a complete start then ends worse than it began.
  bool preprocess = true;
};

struct MipSolution {
  std::string status;  // optimal | gap | time-limit | infeasible | node-limit | abandoned | unknown | crashed
  bool has_solution = false;
  std::vector<double> values;
  double objective = 0;
  double bound = 0;
  double gap = 0;
  int64_t nodes = 0;
  double seconds = 0;
  // What the solve added to the resident memory of the process that ran it
  // (its peak less its size when the solve began; 0 where unknown).
  uint64_t peak_added_bytes = 0;
  // The first solve crashed and this is the second, without CBC's
  // preprocessing (MipModel::Solve); `seconds` counts both.
  bool retried_without_preprocess = false;
};

// (objective - bound) / |objective| in [0, 1]: a bound from a solve stopped
// early can be -inf, or above the incumbent by rounding. 1 where it says
// nothing; 0 for a zero objective.
double RelativeGap(double objective, double bound);

class MipModel {
 public:
  int AddVariable(double lower, double upper, double objective, bool integer);
  int AddBinary(double objective) { return AddVariable(0, 1, objective, true); }
  // sense: 'L' (<=), 'G' (>=) or 'E' (=).
  void AddRow(const std::vector<std::pair<int, double>>& terms, char sense, double rhs);
  // Bounds the variable to `value` alone (a decision taken outside the solver).
  void Fix(int col, double value) { lower_.at(col) = upper_.at(col) = value; }
  void AddObjectiveConstant(double c) { objective_constant_ += c; }
  void AddToObjective(int col, double coef) { objective_.at(col) += coef; }

  int num_variables() const { return static_cast<int>(lower_.size()); }
  int num_integer() const;
  bool is_integer(int col) const { return integer_.at(col) != 0; }
  int num_rows() const { return static_cast<int>(row_sense_.size()); }
  int64_t num_nonzeros() const { return static_cast<int64_t>(row_index_.size()); }

  // In a forked child, so that a crash inside CBC is a solve with status
  // "crashed" and no solution rather than the end of the calling process.
  // A child that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) with
  // preprocessing on is solved once more without it, in the same time
  // limit: CBC's crashes here were in CglPreProcess::postProcess.
  MipSolution Solve(const MipOptions& options) const;

 private:
  MipSolution SolveInThisProcess(const MipOptions& options) const;
  // One forked solve; *crash_signal: the signal that ended the child where
  // it was a crash, else 0.
  MipSolution SolveInChild(const MipOptions& options, int* crash_signal) const;
  std::vector<double> lower_, upper_, objective_;
  std::vector<char> integer_;
  std::vector<int> row_start_{0};
  std::vector<int> row_index_;
  std::vector<double> row_value_;
  std::vector<char> row_sense_;
  std::vector<double> row_rhs_;
  double objective_constant_ = 0;
};

}  // namespace tensortier
