// An embedded fleet on one host: worker processes spawned from the same
// binary (`tensortier worker --connect ...`) against an in-process learner,
// as `tensortier train` runs it. Each worker logs to its own file.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace tensortier {

struct WorkerProcess {
  pid_t pid = -1;
  std::string log_path;
};

// Starts `count` workers running `executable worker --connect endpoint`
// plus `extra_args`. Throws std::runtime_error if a spawn fails (workers
// already started are stopped first).
std::vector<WorkerProcess> SpawnWorkers(const std::string& executable, const std::string& endpoint, int count,
                                        const std::vector<std::string>& extra_args, const std::string& log_dir);

// Waits up to `grace_seconds` for the workers to exit, then terminates the
// rest (SIGTERM, then SIGKILL). Returns how many exited on their own with 0.
int ReapWorkers(std::vector<WorkerProcess>& workers, double grace_seconds);

// Path of the running executable (/proc/self/exe).
std::string SelfExecutable();

}  // namespace tensortier
