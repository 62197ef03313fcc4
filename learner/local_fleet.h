// An embedded fleet on one host: worker processes spawned from the same
// binary (`tensortier worker --connect ...`) against an in-process learner,
// as `tensortier train` runs it. Each worker logs to its own file.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace tensortier {

struct WorkerProcess {
  pid_t pid = -1;            // -1 once reaped
  std::string log_path;
  bool exited = false;       // reaped: wait_status says how it ended
  int wait_status = 0;
};

// Starts `count` workers running `executable worker --connect endpoint`
// plus `extra_args`, with no signal blocked (whatever the calling thread
// blocks). Throws std::runtime_error if a spawn fails (workers already
// started are stopped first).
std::vector<WorkerProcess> SpawnWorkers(const std::string& executable, const std::string& endpoint, int count,
                                        const std::vector<std::string>& extra_args, const std::string& log_dir);

// Waits up to `grace_seconds` for the workers to exit, then terminates the
// rest (SIGTERM, then SIGKILL). Returns how many exited with 0 (before the
// call too: workers PollWorker reaped count).
int ReapWorkers(std::vector<WorkerProcess>& workers, double grace_seconds);

// Reaps `w` if it has exited (waiting for it with `block`); returns whether
// it has.
bool PollWorker(WorkerProcess& w, bool block = false);
bool ExitedCleanly(const WorkerProcess& w);  // exited with 0
// "exit 2", "killed by signal 9", "running".
std::string DescribeExit(const WorkerProcess& w);

// Path of the running executable (/proc/self/exe).
std::string SelfExecutable();

}  // namespace tensortier
