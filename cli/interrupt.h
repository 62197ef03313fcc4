// SIGINT and SIGTERM for `train` and `learner`. While an InterruptWatch
// lives, the first such signal is stored (interrupt()) for the run to stop,
// stop its workers and write what it has (learner/run_supervisor.h); a
// second ends the process at once with 128 + the signal. Before and after,
// the signals keep their default action: nothing is lost that could be saved.
//
// The constructing thread, and the threads it starts afterwards (the
// learner's), block both signals, so that none interrupts the learner's
// socket polls; a thread of the watch's own receives them. Children spawned
// meanwhile must reset their signal mask (learner/local_fleet.cc does).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <signal.h>

namespace tensortier {

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // The signal received (SIGINT, SIGTERM); 0 until one is.
  const std::atomic<int>& interrupt() const;

 private:
  struct sigaction old_int_, old_term_;
  sigset_t old_mask_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread receiver_;
};

// "SIGINT", "SIGTERM", or "a signal".
const char* SignalName(int sig);

}  // namespace tensortier
