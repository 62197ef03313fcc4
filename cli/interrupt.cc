#include "cli/interrupt.h"

#include <unistd.h>

#include <cstring>

namespace tensortier {
namespace {

std::atomic<int> g_signal{0};

void OnStopSignal(int sig) {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) {
    static const char kMessage[] =
        "\ntensortier: stopping: the workers, then a checkpoint and the results (signal again to quit at once)\n";
    ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    (void)ignored;
    return;
  }
  ::_exit(128 + sig);
}

}  // namespace

InterruptWatch::InterruptWatch() {
  g_signal = 0;
  // The receiver starts before the signals are blocked here, so it alone
  // of the threads started from now on can take them.
  receiver_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  });
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask_);
}

InterruptWatch::~InterruptWatch() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  receiver_.join();
}

const std::atomic<int>& InterruptWatch::interrupt() const { return g_signal; }

const char* SignalName(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "a signal";
}

}  // namespace tensortier
