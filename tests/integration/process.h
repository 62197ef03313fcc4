// Child processes for the integration tests: the real tensortier binary,
// started the way a user starts it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "metrics/prometheus_server.h"

extern char** environ;

namespace tensortier::testing {

inline std::string TensortierBinary() { return std::string(TENSORTIER_BINARY_DIR) + "/cli/tensortier"; }

class ChildProcess {
 public:
  // Starts `tensortier args...` with stdout and stderr sent to `log_path`;
  // with `own_group`, in a process group of its own (KillGroup reaches the
  // workers it spawns too).
  ChildProcess(const std::vector<std::string>& args, const std::string& log_path, bool own_group = false) {
    std::vector<std::string> all = {TensortierBinary()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (own_group) {
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
      posix_spawnattr_setpgroup(&attr, 0);
    }
    int rc = posix_spawn(&pid_, all[0].c_str(), &actions, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + all[0]);
    if (own_group) group_ = pid_;
  }
  ~ChildProcess() {
    if (group_ > 0) ::kill(-group_, SIGKILL);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Exit status, or -1 if it did not exit within `timeout`.
  int Wait(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  void Kill(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // The signal to the child and everything it started (own_group only).
  void KillGroup(int sig) {
    if (group_ > 0) ::kill(-group_, sig);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  pid_t group_ = -1;
};

// A loopback TCP port that was free a moment ago. Taken below the kernel's
// ephemeral range, so that no outgoing connection of another test can hold it
// as its source port between this check and the child's bind (CI once lost a
// run to 34750, inside 32768-60999); spread by pid so that tests running side
// by side start far apart, and checked by binding it.
inline int FreePort() {
  static int ephemeral_low = [] {
    int low = 32768, high = 60999;
    if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
      if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
      std::fclose(f);
    }
    return low > 11024 ? low : 32768;
  }();
  constexpr int kFirst = 10000;
  const int span = ephemeral_low - kFirst;
  static int next = static_cast<int>((static_cast<long>(::getpid()) * 997) % span);
  for (int tries = 0; tries < span; ++tries) {
    const int port = kFirst + (next++ % span);
    if (LoopbackPortFree(port)) return port;
  }
  throw std::runtime_error("FreePort: no free loopback port below the ephemeral range");
}

}  // namespace tensortier::testing
