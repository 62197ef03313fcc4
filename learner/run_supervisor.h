// What `train` and `learner` watch while the learner serves, on a thread of
// its own: an interrupt (the number of a signal that a handler stored,
// cli/interrupt.h) and, for `train`, its worker processes. An interrupt, or
// every worker having exited with none of them cleanly (a bad --slow-tier,
// a crash), stops the run through `stop` (Learner::Stop), once: the learner
// then checkpoints and reports what it has.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "learner/local_fleet.h"

namespace tensortier {

class RunSupervisor {
 public:
  // `interrupt` and `workers` may be null; `workers` is only touched by the
  // supervisor's thread until Finish.
  RunSupervisor(const std::atomic<int>* interrupt, std::vector<WorkerProcess>* workers, std::function<void()> stop,
                std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  ~RunSupervisor();
  RunSupervisor(const RunSupervisor&) = delete;
  RunSupervisor& operator=(const RunSupervisor&) = delete;

  // Stops watching (joins the thread); what was seen stays readable.
  void Finish();
  // The signal that stopped the run; 0 if none did.
  int interrupted_by() const { return interrupted_by_.load(); }
  // Why the workers stopped the run ("" if they did not): how each ended
  // and the last error line of its log, e.g. "every worker exited: worker-0,
  // worker-1 (exit 2): tensortier: error: --slow-tier ...: not a directory".
  std::string workers_failure() const;

 private:
  void Watch();

  const std::atomic<int>* interrupt_;
  std::vector<WorkerProcess>* workers_;
  std::function<void()> stop_;
  std::chrono::milliseconds poll_;
  std::atomic<int> interrupted_by_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool finish_ = false;
  bool stopped_ = false;
  std::string workers_failure_;
  std::thread thread_;
};

// The line of a worker's log that says why it ended: its last line with
// "error" in it, else its last line ("" for none). Reads the last 64 KiB.
std::string LastErrorLine(const std::string& log_path);

}  // namespace tensortier
