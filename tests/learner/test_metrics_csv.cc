// metrics.csv is appended as episodes arrive (learner/metrics_csv.h): each
// row is in the file as soon as Append returns, a resumed run keeps the rows
// before its first episode and drops the ones it plays again.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "common/files.h"
#include "learner/metrics_csv.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

EpisodeRecord Record(uint64_t episode) {
  EpisodeRecord r;
  r.episode = episode;
  r.worker_id = 1 + episode % 2;
  r.worker_episode = episode / 2;
  r.steps = 40;
  r.episodic_reward = -1.5 * episode;
  r.runtime_ns = 1000.0 * episode;
  r.backend = "cost-model";
  return r;
}

std::vector<uint64_t> Episodes(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line + "\n", MetricsCsvHeader());
  std::vector<uint64_t> out;
  while (std::getline(in, line)) out.push_back(std::stoull(line.substr(0, line.find(','))));
  return out;
}

class MetricsCsvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("tt-metrics-csv-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path() const { return dir_ + "/metrics.csv"; }
  std::string dir_;
};

TEST_F(MetricsCsvTest, EachRowIsInTheFileWhenAppendReturns) {
  MetricsCsvAppender csv(path());
  for (uint64_t e = 1; e <= 5; ++e) {
    csv.Append(Record(e));
    // Read by another handle while the appender is open, as a reader of a running run would.
    EXPECT_EQ(Episodes(ReadFile(path())), std::vector<uint64_t>([e] {
                std::vector<uint64_t> v;
                for (uint64_t i = 1; i <= e; ++i) v.push_back(i);
                return v;
              }()));
  }
  EXPECT_FALSE(csv.failed());
  // The same rows as the run directory's final write.
  std::vector<EpisodeRecord> all;
  for (uint64_t e = 1; e <= 5; ++e) all.push_back(Record(e));
  EXPECT_EQ(ReadFile(path()), MetricsCsv(all));
}

TEST_F(MetricsCsvTest, AResumedRunKeepsTheRowsBeforeItsFirstEpisodeAndDropsTheRest) {
  {
    MetricsCsvAppender killed(path());
    for (uint64_t e = 1; e <= 9; ++e) killed.Append(Record(e));
  }
  // A torn last line, as a power cut may leave.
  {
    std::FILE* f = std::fopen(path().c_str(), "a");
    std::fputs("10,1,5,0,4", f);
    std::fclose(f);
  }
  // Its checkpoint was at episode 6: the resumed run plays 7, 8, ... again.
  MetricsCsvAppender resumed(path());
  resumed.Append(Record(7));
  EXPECT_EQ(Episodes(ReadFile(path())), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7}));
  resumed.Append(Record(8));
  EXPECT_EQ(Episodes(ReadFile(path())), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST_F(MetricsCsvTest, AFileOfAnotherKindIsStartedOver) {
  WriteFileAtomically(path(), "an older run\n1,2,3\n");
  MetricsCsvAppender csv(path());
  csv.Append(Record(4));
  EXPECT_EQ(Episodes(ReadFile(path())), (std::vector<uint64_t>{4}));
}

TEST_F(MetricsCsvTest, AnUnwritableFileIsSaidOnceAndTheRunGoesOn) {
  MetricsCsvAppender csv(dir_ + "/no/such/dir/metrics.csv");
  ::testing::internal::CaptureStderr();
  csv.Append(Record(1));
  csv.Append(Record(2));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(csv.failed());
  EXPECT_NE(err.find("event=metrics_csv_failed"), std::string::npos) << err;
  EXPECT_EQ(err.find("event=metrics_csv_failed"), err.rfind("event=metrics_csv_failed")) << err;
}

}  // namespace
}  // namespace tensortier
