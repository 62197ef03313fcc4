#include "learner/local_fleet.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tensortier {

std::string SelfExecutable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot resolve /proc/self/exe: ") + std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<WorkerProcess> SpawnWorkers(const std::string& executable, const std::string& endpoint, int count,
                                        const std::vector<std::string>& extra_args, const std::string& log_dir) {
  std::vector<WorkerProcess> started;
  for (int i = 0; i < count; ++i) {
    // A local worker must not outlive a `train` that crashed: it gives up
    // once no learner has answered for a minute.
    std::vector<std::string> args = {executable, "worker", "--connect", endpoint, "--name",
                                     "local-" + std::to_string(i), "--give-up-seconds", "60"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    WorkerProcess w;
    w.log_path = log_dir + "/worker-" + std::to_string(i) + ".log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, w.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    // `train` blocks SIGINT and SIGTERM in its threads (cli/interrupt.h);
    // a worker must get them, to stop when told.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(&w.pid, executable.c_str(), &actions, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      ReapWorkers(started, 0);
      throw std::runtime_error("cannot start worker " + std::to_string(i) + " (" + executable + "): " +
                               std::strerror(rc));
    }
    started.push_back(w);
  }
  return started;
}

bool PollWorker(WorkerProcess& w, bool block) {
  if (w.pid <= 0) return w.exited;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(w.pid, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == w.pid) {
    w.exited = true;
    w.wait_status = status;
    w.pid = -1;
  }
  return w.exited;
}

bool ExitedCleanly(const WorkerProcess& w) {
  return w.exited && WIFEXITED(w.wait_status) && WEXITSTATUS(w.wait_status) == 0;
}

std::string DescribeExit(const WorkerProcess& w) {
  if (!w.exited) return "running";
  if (WIFEXITED(w.wait_status)) return "exit " + std::to_string(WEXITSTATUS(w.wait_status));
  if (WIFSIGNALED(w.wait_status)) return "killed by signal " + std::to_string(WTERMSIG(w.wait_status));
  return "ended";
}

int ReapWorkers(std::vector<WorkerProcess>& workers, double grace_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  for (;;) {
    bool alive = false;
    for (WorkerProcess& w : workers) alive |= !PollWorker(w);
    if (!alive || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int sig : {SIGTERM, SIGKILL}) {
    if (std::none_of(workers.begin(), workers.end(), [](const WorkerProcess& w) { return w.pid > 0; })) break;
    for (WorkerProcess& w : workers)
      if (w.pid > 0) ::kill(w.pid, sig);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (WorkerProcess& w : workers) PollWorker(w);
  }
  int clean = 0;
  for (WorkerProcess& w : workers) {
    PollWorker(w, true);
    clean += ExitedCleanly(w) ? 1 : 0;
  }
  return clean;
}

}  // namespace tensortier
