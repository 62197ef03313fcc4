// metrics.csv grows while `train` runs (issue 18): read mid-run, it holds the
// episodes so far; after SIGKILL (no handler runs) it keeps them; `--resume`
// goes on from the checkpoint with each episode once. The real binary; the
// waits are hang guards, nothing is timed.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "common/files.h"
#include "tests/integration/process.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

std::string ReadIfThere(const std::string& path) { return fs::exists(path) ? ReadFile(path) : ""; }

// The episode numbers of metrics.csv's complete rows, in file order; each
// row has the header's 16 fields.
std::vector<uint64_t> Episodes(const std::string& path) {
  std::istringstream in(ReadIfThere(path));
  std::vector<uint64_t> out;
  std::string line;
  if (!std::getline(in, line)) return out;
  EXPECT_EQ(line.rfind("episode,worker_id,", 0), 0u) << line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline yet: a row being written
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 15) << line;
    out.push_back(std::stoull(line.substr(0, line.find(','))));
  }
  return out;
}

void ExpectOneToN(const std::vector<uint64_t>& episodes) {
  for (size_t i = 0; i < episodes.size(); ++i)
    ASSERT_EQ(episodes[i], i + 1) << "row " << i + 1 << " of " << episodes.size();
}

uint64_t NewestCheckpoint(const std::string& run) {
  uint64_t newest = 0;
  if (fs::exists(run + "/checkpoints"))
    for (const auto& e : fs::directory_iterator(run + "/checkpoints"))
      if (e.path().extension() == ".ttckpt")
        newest = std::max<uint64_t>(newest, std::stoull(e.path().stem().string().substr(std::string("learner-").size())));
  return newest;
}

TEST(MetricsCsvLive, RowsAreThereWhileTrainRunsAndAfterSigkillAndAResumeDoesNotRepeatThem) {
  const std::string dir = (fs::temp_directory_path() / ("tensortier-csv-live-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = dir + "/run";
  const std::string csv = run + "/metrics.csv";
  {
    // Its own process group: SIGKILL takes the workers too, as a killed terminal session would.
    ChildProcess train({"train", "--workload", "synthetic:tiny:3:65536", "--episodes", "10000000", "--workers", "2",
                        "--metrics-address", "off", "--demonstrations", "none", "--baselines", "none",
                        "--checkpoint-every", "10", "--out", run},
                       dir + "/train.log", /*own_group=*/true);
    // Mid-run: rows arrive although the run is far from its end.
    std::vector<uint64_t> seen;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
         std::chrono::steady_clock::now() < deadline && (seen.size() < 25 || NewestCheckpoint(run) < 10);
         std::this_thread::sleep_for(std::chrono::milliseconds(50)))
      seen = Episodes(csv);
    ASSERT_GE(seen.size(), 25u) << ReadIfThere(dir + "/train.log");
    ASSERT_GE(NewestCheckpoint(run), 10u);
    ASSERT_EQ(train.Wait(std::chrono::seconds(0)), -1) << "the run ended: " << ReadIfThere(dir + "/train.log");
    ExpectOneToN(seen);
    EXPECT_FALSE(fs::exists(run + "/summary.json"));  // only at the end

    train.KillGroup(SIGKILL);
    ASSERT_EQ(train.Wait(std::chrono::seconds(60)), 128 + SIGKILL);
    const std::vector<uint64_t> kept = Episodes(csv);
    EXPECT_GE(kept.size(), seen.size());
    ExpectOneToN(kept);
  }
  // Resumed from the newest checkpoint (episode C): episodes C+1.. are played
  // again and each is in the file once.
  const uint64_t checkpoint = NewestCheckpoint(run);
  const uint64_t total = checkpoint + 15;
  ChildProcess resumed({"--config", run + "/config.toml", "train", "--resume", run, "--episodes", std::to_string(total)},
                       dir + "/resumed.log", /*own_group=*/true);
  ASSERT_EQ(resumed.Wait(std::chrono::seconds(180)), 0) << ReadIfThere(dir + "/resumed.log");
  const std::vector<uint64_t> after = Episodes(csv);
  EXPECT_EQ(after.size(), total);
  ExpectOneToN(after);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
