#include "learner/run_supervisor.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace tensortier {

RunSupervisor::RunSupervisor(const std::atomic<int>* interrupt, std::vector<WorkerProcess>* workers,
                             std::function<void()> stop, std::chrono::milliseconds poll)
    : interrupt_(interrupt), workers_(workers), stop_(std::move(stop)), poll_(poll) {
  thread_ = std::thread([this] { Watch(); });
}

RunSupervisor::~RunSupervisor() { Finish(); }

void RunSupervisor::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finish_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string RunSupervisor::workers_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_failure_;
}

void RunSupervisor::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!finish_) {
    cv_.wait_for(lock, poll_, [this] { return finish_; });
    if (finish_ || stopped_) continue;
    if (interrupt_ && interrupt_->load() != 0) {
      interrupted_by_ = interrupt_->load();
      stopped_ = true;
      lock.unlock();
      stop_();
      lock.lock();
      continue;
    }
    if (!workers_ || workers_->empty()) continue;
    bool all_exited = true, any_clean = false;
    for (WorkerProcess& w : *workers_) {
      all_exited &= PollWorker(w);
      any_clean |= ExitedCleanly(w);
    }
    if (!all_exited || any_clean) continue;
    // Workers that ended alike are named together.
    std::map<std::string, std::string> names_by_reason;
    std::vector<std::string> order;
    for (const WorkerProcess& w : *workers_) {
      std::string reason = DescribeExit(w);
      const std::string line = LastErrorLine(w.log_path);
      if (!line.empty()) reason += "): " + line;
      else reason += ")";
      const std::string name = std::filesystem::path(w.log_path).stem().string();
      auto [it, added] = names_by_reason.emplace(reason, name);
      if (added) order.push_back(reason);
      else it->second += ", " + name;
    }
    std::string failure = "every worker exited:";
    for (size_t i = 0; i < order.size(); ++i)
      failure += (i ? "; " : " ") + names_by_reason[order[i]] + " (" + order[i];
    workers_failure_ = failure;
    stopped_ = true;
    lock.unlock();
    stop_();
    lock.lock();
  }
}

std::string LastErrorLine(const std::string& log_path) {
  std::ifstream in(log_path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = std::max<std::streamoff>(0, size - 65536);
  in.seekg(start);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream lines(tail);
  std::string line, last, last_error;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (line.find("error") != std::string::npos) last_error = line;
  }
  return last_error.empty() ? last : last_error;
}

}  // namespace tensortier
