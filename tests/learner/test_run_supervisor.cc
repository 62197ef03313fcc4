// The run supervisor on its own (learner/run_supervisor.h): real child
// processes from scripts stand in for workers. No timing is asserted; the
// waits are hang guards.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <signal.h>
#include <filesystem>
#include <fstream>
#include <thread>

#include "learner/local_fleet.h"
#include "learner/run_supervisor.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

struct Dir {
  Dir() : path(fs::temp_directory_path() / ("tt-supervisor-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  // An executable script with `body` (it ignores the worker arguments).
  std::string Script(const std::string& name, const std::string& body) const {
    const std::string file = (path / name).string();
    std::ofstream(file) << "#!/bin/sh\n" << body << "\n";
    ::chmod(file.c_str(), 0755);
    return file;
  }
  fs::path path;
};

// Waits (up to a hang guard) for `done`.
template <typename F>
bool Await(F done) {
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(10)))
    if (done()) return true;
  return done();
}

TEST(RunSupervisor, StopsTheRunWhenEveryWorkerDiedAndSaysWhy) {
  Dir dir;
  const std::string failing =
      dir.Script("failing", "echo 'level=info event=worker_started' >&2\n"
                            "echo 'tensortier: error: --slow-tier pmem:/nonexistent/dir: not a directory' >&2\n"
                            "echo 'one more line' >&2\nexit 4");
  std::vector<WorkerProcess> workers = SpawnWorkers(failing, "tcp://127.0.0.1:1", 2, {}, dir.path.string());
  std::atomic<int> stops{0};
  RunSupervisor supervisor(nullptr, &workers, [&] { ++stops; }, std::chrono::milliseconds(10));
  ASSERT_TRUE(Await([&] { return stops.load() > 0; }));
  supervisor.Finish();
  EXPECT_EQ(stops.load(), 1);
  EXPECT_EQ(supervisor.interrupted_by(), 0);
  EXPECT_EQ(supervisor.workers_failure(),
            "every worker exited: worker-0, worker-1 (exit 4): tensortier: error: --slow-tier "
            "pmem:/nonexistent/dir: not a directory");
  EXPECT_EQ(ReapWorkers(workers, 0), 0);
}

TEST(RunSupervisor, WorkersThatEndCleanlyOrNotAllAtOnceDoNotStopIt) {
  Dir dir;
  // worker-0 fails, worker-1 leaves cleanly (a learner told it to).
  const std::string script = dir.Script(
      "mixed", "case \"$5\" in local-0) echo 'tensortier: error: boom' >&2; exit 2;; *) touch " +
                   (dir.path / "clean").string() + "; exit 0;; esac");
  std::vector<WorkerProcess> workers = SpawnWorkers(script, "tcp://127.0.0.1:1", 2, {}, dir.path.string());
  std::atomic<int> stops{0};
  {
    RunSupervisor supervisor(nullptr, &workers, [&] { ++stops; }, std::chrono::milliseconds(10));
    ASSERT_TRUE(Await([&] { return fs::exists(dir.path / "clean"); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polls that would wrongly stop it
    supervisor.Finish();
    EXPECT_EQ(supervisor.workers_failure(), "");
  }
  EXPECT_EQ(stops.load(), 0);
  EXPECT_EQ(ReapWorkers(workers, 30), 1);
  EXPECT_EQ(DescribeExit(workers[0]), "exit 2");
  EXPECT_EQ(DescribeExit(workers[1]), "exit 0");
}

// `train` blocks SIGINT and SIGTERM in its threads (cli/interrupt.h); its
// workers must not inherit that, or they could not be stopped.
TEST(RunSupervisor, WorkersStartWithNoSignalBlocked) {
  Dir dir;
  const std::string script = dir.Script("mask", "exec grep SigBlk /proc/self/status >&2");
  sigset_t stop_signals, before;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
  std::vector<WorkerProcess> workers = SpawnWorkers(script, "tcp://127.0.0.1:1", 1, {}, dir.path.string());
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  EXPECT_EQ(ReapWorkers(workers, 60), 1);
  EXPECT_EQ(LastErrorLine(workers[0].log_path), "SigBlk:\t0000000000000000");
}

TEST(RunSupervisor, AnInterruptStopsTheRunOnce) {
  std::atomic<int> interrupt{0}, stops{0};
  RunSupervisor supervisor(&interrupt, nullptr, [&] { ++stops; }, std::chrono::milliseconds(10));
  interrupt = SIGTERM;
  ASSERT_TRUE(Await([&] { return stops.load() > 0; }));
  interrupt = SIGINT;  // a later value changes nothing
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  supervisor.Finish();
  EXPECT_EQ(stops.load(), 1);
  EXPECT_EQ(supervisor.interrupted_by(), SIGTERM);
}

TEST(RunSupervisor, FinishEndsAQuietWatch) {
  std::atomic<int> interrupt{0};
  bool stopped = false;
  RunSupervisor supervisor(&interrupt, nullptr, [&] { stopped = true; }, std::chrono::seconds(3600));
  supervisor.Finish();  // does not wait for the next poll
  EXPECT_FALSE(stopped);
  EXPECT_EQ(supervisor.interrupted_by(), 0);
}

TEST(RunSupervisor, LastErrorLineOfALog) {
  Dir dir;
  const std::string log = (dir.path / "w.log").string();
  std::ofstream(log) << "level=info a\nlevel=error event=x detail=y\nlevel=info b\n\n";
  EXPECT_EQ(LastErrorLine(log), "level=error event=x detail=y");
  std::ofstream(log) << "level=info a\nlevel=info last\n";
  EXPECT_EQ(LastErrorLine(log), "level=info last");
  EXPECT_EQ(LastErrorLine((dir.path / "missing.log").string()), "");
  // Only the end of a long log is read.
  {
    std::ofstream big(log);
    big << "level=error early\n" << std::string(200000, 'x') << "\nlevel=info end\n";
  }
  EXPECT_EQ(LastErrorLine(log), "level=info end");
}

}  // namespace
}  // namespace tensortier
