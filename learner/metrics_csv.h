// metrics.csv, one row per episode (EpisodeRecord), written while a run
// trains: each row is appended and flushed as its episode arrives, so that a
// run killed with SIGKILL (or a power cut after the page cache is written)
// keeps the rows of the episodes it finished. The run directory's final
// write (WriteRunDirectory) replaces the file atomically with every row.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "learner/learner.h"

namespace tensortier {

std::string MetricsCsvHeader();               // ends with '\n'
std::string MetricsCsvRow(const EpisodeRecord& r);  // ends with '\n'
std::string MetricsCsv(const std::vector<EpisodeRecord>& records);  // header and rows

class MetricsCsvAppender {
 public:
  explicit MetricsCsvAppender(std::string path) : path_(std::move(path)) {}
  ~MetricsCsvAppender();
  MetricsCsvAppender(const MetricsCsvAppender&) = delete;
  MetricsCsvAppender& operator=(const MetricsCsvAppender&) = delete;

  // Appends r's row and flushes it to the kernel. On the first call the file
  // is started over from what it may already hold: its rows of episodes
  // before r's (a resumed run's, up to its checkpoint) are kept, later ones
  // (played after that checkpoint, played again now) and a file of another
  // header are dropped. When the file cannot be written, says so once in
  // an error log line and appends no more: the run goes on.
  void Append(const EpisodeRecord& r);
  bool failed() const { return failed_; }

  const std::string& path() const { return path_; }

 private:
  void Open(uint64_t first_episode);
  std::string path_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
};

}  // namespace tensortier
