#include "learner/metrics_csv.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "common/files.h"
#include "common/log.h"

namespace tensortier {

std::string MetricsCsvHeader() {
  return "episode,worker_id,worker_episode,policy_version,steps,step_reward_sum,episodic_reward,"
         "normalised_cost,runtime_ns,oom,epsilon,loss,mean_q,best_runtime_ns,wall_seconds,backend\n";
}

std::string MetricsCsvRow(const EpisodeRecord& r) {
  std::ostringstream os;
  os << std::setprecision(10);
  os << r.episode << ',' << r.worker_id << ',' << r.worker_episode << ',' << r.policy_version << ',' << r.steps
     << ',' << r.step_reward_sum << ',' << r.episodic_reward << ',' << r.normalised_cost << ',' << r.runtime_ns
     << ',' << (r.oom ? 1 : 0) << ',' << r.epsilon << ',' << r.loss << ',' << r.mean_q << ','
     << r.best_runtime_ns << ',' << r.wall_seconds << ',' << r.backend << '\n';
  return os.str();
}

std::string MetricsCsv(const std::vector<EpisodeRecord>& records) {
  std::string out = MetricsCsvHeader();
  for (const EpisodeRecord& r : records) out += MetricsCsvRow(r);
  return out;
}

MetricsCsvAppender::~MetricsCsvAppender() {
  if (file_) std::fclose(file_);
}

void MetricsCsvAppender::Open(uint64_t first_episode) {
  // What to keep: the header and the complete rows of earlier episodes.
  std::string kept = MetricsCsvHeader();
  if (std::filesystem::exists(path_)) {
    const std::string old = ReadFile(path_);
    if (old.compare(0, kept.size(), kept) == 0) {
      size_t pos = kept.size();
      for (size_t end; (end = old.find('\n', pos)) != std::string::npos; pos = end + 1) {
        const std::string row = old.substr(pos, end - pos + 1);
        errno = 0;
        char* stop = nullptr;
        const unsigned long long episode = std::strtoull(row.c_str(), &stop, 10);
        if (stop == row.c_str() || *stop != ',' || errno != 0 || episode >= first_episode) break;
        kept += row;
      }
    }
  }
  WriteFileAtomically(path_, kept);
  file_ = std::fopen(path_.c_str(), "ae");
  if (!file_) throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
}

void MetricsCsvAppender::Append(const EpisodeRecord& r) {
  if (failed_) return;
  try {
    if (!file_) Open(r.episode);
    const std::string row = MetricsCsvRow(r);
    if (std::fwrite(row.data(), 1, row.size(), file_) != row.size() || std::fflush(file_) != 0)
      throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
  } catch (const std::exception& e) {
    failed_ = true;  // said once; the run goes on, and its end writes the whole file again
    LogError("metrics_csv_failed").kv("detail", e.what());
  }
}

}  // namespace tensortier
