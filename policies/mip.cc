#include "policies/mip.h"

#include <Cbc_C_Interface.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/log.h"

namespace tensortier {
namespace {

// The process's peak resident size so far (in a forked child it starts at
// the parent's size at the fork).
uint64_t PeakResidentBytes() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux: KiB
}

}  // namespace

double RelativeGap(double objective, double bound) {
  if (!(std::abs(objective) > 0)) return 0.0;
  const double gap = (objective - bound) / std::abs(objective);
  return std::isfinite(gap) ? std::clamp(gap, 0.0, 1.0) : 1.0;
}

int MipModel::AddVariable(double lower, double upper, double objective, bool integer) {
  lower_.push_back(lower);
  upper_.push_back(upper);
  objective_.push_back(objective);
  integer_.push_back(integer ? 1 : 0);
  return static_cast<int>(lower_.size() - 1);
}

void MipModel::AddRow(const std::vector<std::pair<int, double>>& terms, char sense, double rhs) {
  if (sense != 'L' && sense != 'G' && sense != 'E') throw std::invalid_argument("MipModel: bad row sense");
  for (const auto& [col, coef] : terms) {
    if (col < 0 || col >= num_variables()) throw std::out_of_range("MipModel: row names a missing variable");
    if (coef == 0) continue;
    row_index_.push_back(col);
    row_value_.push_back(coef);
  }
  row_start_.push_back(static_cast<int>(row_index_.size()));
  row_sense_.push_back(sense);
  row_rhs_.push_back(rhs);
}

int MipModel::num_integer() const {
  int n = 0;
  for (char c : integer_) n += c;
  return n;
}

MipSolution MipModel::SolveInThisProcess(const MipOptions& options) const {
  const uint64_t peak_before = PeakResidentBytes();  // CBC's copies of the program count as the solve's
  const int n = num_variables(), m = num_rows();
  // CBC loads column-major: transpose the rows.
  std::vector<CoinBigIndex> col_start(n + 1, 0);
  for (int idx : row_index_) ++col_start[idx + 1];
  for (int j = 0; j < n; ++j) col_start[j + 1] += col_start[j];
  std::vector<int> index(row_index_.size());
  std::vector<double> value(row_index_.size());
  std::vector<CoinBigIndex> fill(col_start.begin(), col_start.end() - 1);
  for (int r = 0; r < m; ++r)
    for (int e = row_start_[r]; e < row_start_[r + 1]; ++e) {
      CoinBigIndex at = fill[row_index_[e]]++;
      index[at] = r;
      value[at] = row_value_[e];
    }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> row_lower(m), row_upper(m);
  for (int r = 0; r < m; ++r) {
    row_lower[r] = row_sense_[r] == 'L' ? -inf : row_rhs_[r];
    row_upper[r] = row_sense_[r] == 'G' ? inf : row_rhs_[r];
  }

  // The constant part of the objective rides on a column fixed at 1, so that
  // CBC's relative gap is measured against the whole predicted time.
  std::vector<double> lower = lower_, upper = upper_, objective = objective_;
  if (objective_constant_ != 0) {
    col_start.push_back(col_start.back());
    lower.push_back(1);
    upper.push_back(1);
    objective.push_back(objective_constant_);
  }
  const int columns = static_cast<int>(lower.size());

  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), columns, m, col_start.data(), index.data(), value.data(), lower.data(),
                  upper.data(), objective.data(), row_lower.data(), row_upper.data());
  for (int j = 0; j < n; ++j)
    if (integer_[j]) Cbc_setInteger(model.get(), j);
  Cbc_setObjSense(model.get(), 1);
  int log_level = options.log_level;
  if (const char* env = std::getenv("TENSORTIER_CBC_LOG")) log_level = std::atoi(env);  // debugging aid
  Cbc_setLogLevel(model.get(), log_level);
  // Fixed seeds: the same model gives the same search (and solve time).
  Cbc_setParameter(model.get(), "randomCbcSeed", "1");
  Cbc_setParameter(model.get(), "randomSeed", "1");
  // The time limit is wall-clock, as a caller waiting for a plan sees it.
  Cbc_setParameter(model.get(), "timeMode", "elapsed");
  if (!options.preprocess) Cbc_setParameter(model.get(), "preprocess", "off");
  if (const char* env = std::getenv("TENSORTIER_CBC_PARAMS")) {  // "name=value,name=value"; experiments only
    std::string all = env;
    size_t pos = 0;
    while (pos < all.size()) {
      size_t comma = all.find(',', pos);
      std::string item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t eq = item.find('=');
      if (eq != std::string::npos) Cbc_setParameter(model.get(), item.substr(0, eq).c_str(), item.substr(eq + 1).c_str());
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds);
  Cbc_setAllowableFractionGap(model.get(), options.relative_gap);
  if (!options.start.empty()) {
    std::vector<int> cols;
    std::vector<double> vals;
    for (const auto& [c, v] : options.start) {
      cols.push_back(c);
      vals.push_back(v);
    }
    Cbc_setMIPStartI(model.get(), static_cast<int>(cols.size()), cols.data(), vals.data());
  }

  MipSolution s;
  const auto begin = std::chrono::steady_clock::now();
  Cbc_solve(model.get());
  const uint64_t peak_after = PeakResidentBytes();
  s.peak_added_bytes = peak_after > peak_before ? peak_after - peak_before : 0;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  s.nodes = Cbc_getNodeCount(model.get());
  const double* best = Cbc_bestSolution(model.get());
  if (best == nullptr && Cbc_isProvenOptimal(model.get())) best = Cbc_getColSolution(model.get());
  s.has_solution = best != nullptr;
  if (s.has_solution) {
    s.values.assign(best, best + n);
    s.objective = Cbc_getObjValue(model.get());
  }
  s.bound = Cbc_getBestPossibleObjValue(model.get());
  if (s.has_solution) s.gap = RelativeGap(s.objective, s.bound);
  switch (Cbc_secondaryStatus(model.get())) {
    case 0: s.status = s.has_solution ? "optimal" : "infeasible"; break;
    // 1 is also "the relaxation is no better than the cutoff": a MIP start
    // that is already optimal ends so, with its solution proven optimal.
    case 1: s.status = s.has_solution && Cbc_isProvenOptimal(model.get()) ? "optimal" : "infeasible"; break;
    case 2: s.status = "gap"; break;
    case 3: s.status = "node-limit"; break;
    case 4: s.status = "time-limit"; break;
    default: s.status = Cbc_isAbandoned(model.get()) ? "abandoned" : "unknown"; break;
  }
  if (s.status == "optimal" && s.gap > options.relative_gap + 1e-9) s.status = "gap";
  return s;
}

namespace {

// A solution through a pipe: fixed fields, then the status, then the values.
struct WireHeader {
  uint8_t has_solution;
  double objective, bound, gap, seconds;
  int64_t nodes;
  uint64_t peak_added_bytes;
  uint64_t status_bytes, values;
};

bool WriteAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Reads until EOF or `deadline`; false when the deadline passed first.
bool ReadToEnd(int fd, std::string* out, std::chrono::steady_clock::time_point deadline) {
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

// CBC's preprocessing can crash the process on some programs (a null
// dereference in CglPreProcess::postProcess was seen on a paper-scale
// ResNet-152 with most variables fixed; coin-or/Cbc has a history of such
// reports). A crash must not take a learner, `train` or `bench` down with
// it: the solve runs in a forked child that hands back its solution through
// a pipe, and a child that dies is a solve with status "crashed" and no
// solution. TENSORTIER_CBC_IN_PROCESS=1 solves in this process (debugging).
//
// The guided ILP's window solves (most variables fixed, limits of tenths of
// a second) crash so too: a core of one on paper-scale Inception-v3 in
// async mode (24,641 variables, 0.25 s) ends in CglPreProcess::postProcess
// under Cbc_solve (docs/results/learning.md, session fifty-three). Such a
// program is solved once more without the preprocessing. A child killed
// (SIGKILL: the OOM killer, or one that hung) is not retried: a second try
// would meet the same end.
MipSolution MipModel::Solve(const MipOptions& options) const {
  if (const char* in_process = std::getenv("TENSORTIER_CBC_IN_PROCESS"); in_process && std::string(in_process) == "1")
    return SolveInThisProcess(options);
  int crash_signal = 0;
  MipSolution first = SolveInChild(options, &crash_signal);
  if (crash_signal == 0 || !options.preprocess) return first;
  MipOptions plain = options;
  plain.preprocess = false;
  MipSolution second = SolveInChild(plain, &crash_signal);
  second.seconds += first.seconds;
  second.retried_without_preprocess = true;
  LogInfo("cbc_retried")
      .kv("without", "preprocess")
      .kv("status", second.status)
      .kv("seconds", second.seconds)
      .kv("variables", num_variables())
      .kv("rows", num_rows());
  return second;
}

MipSolution MipModel::SolveInChild(const MipOptions& options, int* crash_signal) const {
  *crash_signal = 0;
  int fds[2];
  if (::pipe(fds) != 0) return SolveInThisProcess(options);
  const auto begin = std::chrono::steady_clock::now();
  // Unwritten stdio buffers would be copied into the child, and written twice
  // if anything there (CBC) flushes them.
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return SolveInThisProcess(options);
  }
  if (child == 0) {
    ::close(fds[0]);
    // Fault injection for tests: "1", the child dies as the OOM killer
    // would end it; "segv", it crashes; "segv-preprocess", it crashes
    // where CBC would preprocess.
    if (const char* die = std::getenv("TENSORTIER_CBC_DIE_FOR_TEST")) {
      const std::string how = die;
      if (how == "1") ::raise(SIGKILL);
      if (how == "segv" || (how == "segv-preprocess" && options.preprocess)) {
        ::signal(SIGSEGV, SIG_DFL);  // a handler the parent installed would not end the child
        ::raise(SIGSEGV);
      }
    }
    int rc = 1;
    try {
      const MipSolution s = SolveInThisProcess(options);
      WireHeader h{};
      h.has_solution = s.has_solution ? 1 : 0;
      h.objective = s.objective;
      h.bound = s.bound;
      h.gap = s.gap;
      h.seconds = s.seconds;
      h.nodes = s.nodes;
      h.peak_added_bytes = s.peak_added_bytes;
      h.status_bytes = s.status.size();
      h.values = s.values.size();
      if (WriteAll(fds[1], &h, sizeof h) && WriteAll(fds[1], s.status.data(), s.status.size()) &&
          WriteAll(fds[1], s.values.data(), s.values.size() * sizeof(double)))
        rc = 0;
    } catch (...) {
    }
    ::_exit(rc);  // no destructors or atexit handlers of the parent's objects
  }
  ::close(fds[1]);
  std::string bytes;
  // CBC keeps its own (wall-clock) limit, but checks it only between steps:
  // a paper-scale ResNet-152's asynchronous program (46,000 variables) ran
  // 110 s on a 60 s limit. This only catches a child that hangs.
  const auto deadline = begin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(3 * options.time_limit_seconds + 300));
  const bool finished = ReadToEnd(fds[0], &bytes, deadline);
  ::close(fds[0]);
  if (!finished) ::kill(child, SIGKILL);
  int wstatus = 0;
  while (::waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
  }
  MipSolution s;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  WireHeader h{};
  const bool exited_cleanly = finished && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
  if (exited_cleanly && bytes.size() >= sizeof h) {
    std::memcpy(&h, bytes.data(), sizeof h);
    if (bytes.size() == sizeof h + h.status_bytes + h.values * sizeof(double)) {
      s.has_solution = h.has_solution != 0;
      s.objective = h.objective;
      s.bound = h.bound;
      s.gap = h.gap;
      s.seconds = h.seconds;
      s.nodes = h.nodes;
      s.peak_added_bytes = h.peak_added_bytes;
      s.status.assign(bytes.data() + sizeof h, h.status_bytes);
      s.values.resize(h.values);
      std::memcpy(s.values.data(), bytes.data() + sizeof h + h.status_bytes, h.values * sizeof(double));
      return s;
    }
  }
  s.status = "crashed";
  if (finished && WIFSIGNALED(wstatus))
    switch (WTERMSIG(wstatus)) {
      case SIGSEGV:
      case SIGBUS:
      case SIGFPE:
      case SIGILL:
      case SIGABRT: *crash_signal = WTERMSIG(wstatus); break;
      default: break;
    }
  std::string why = !finished ? "hung past its time limit and was killed"
                    : WIFSIGNALED(wstatus) ? std::string("died of signal ") + std::to_string(WTERMSIG(wstatus)) + " (" +
                                                 ::strsignal(WTERMSIG(wstatus)) + ")"
                                           : "exited without a solution";
  LogWarn("cbc_crashed").kv("detail", why).kv("variables", num_variables()).kv("rows", num_rows());
  return s;
}

}  // namespace tensortier
