// `--resume` of a directory that cannot be resumed is bad input (exit 3,
// README: Exit codes), not a failed run (4), and says why. The real binary.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"
#include "tests/integration/process.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

TEST(ResumeInput, AMissingOrBrokenCheckpointExitsWithBadInput) {
  const std::string dir = (fs::temp_directory_path() / ("tensortier-resume-input-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  const std::string run = dir + "/run";
  fs::create_directories(run + "/checkpoints");
  const std::vector<std::string> flags = {"--workload", "synthetic:tiny:3:65536", "--episodes", "5", "--workers", "1",
                                          "--metrics-address", "off", "--demonstrations", "none", "--baselines", "none"};
  auto train = [&](const std::string& log) {
    std::vector<std::string> args = {"train", "--resume", run};
    args.insert(args.end(), flags.begin(), flags.end());
    ChildProcess p(args, dir + "/" + log);
    return p.Wait(std::chrono::seconds(120));
  };
  // Killed before its first checkpoint: none there.
  EXPECT_EQ(train("none.log"), 3) << ReadFile(dir + "/none.log");
  const std::string none = ReadFile(dir + "/none.log");
  EXPECT_NE(none.find("tensortier: error: no checkpoint in " + run + "/checkpoints"), std::string::npos) << none;
  EXPECT_NE(none.find("--force instead of --resume"), std::string::npos) << none;

  // Only a corrupt one.
  WriteFileAtomically(run + "/checkpoints/learner-000000000010.ttckpt", "TTCKPT02 torn");
  EXPECT_EQ(train("corrupt.log"), 3) << ReadFile(dir + "/corrupt.log");
  const std::string corrupt = ReadFile(dir + "/corrupt.log");
  EXPECT_NE(corrupt.find("tensortier: error: no usable checkpoint in " + run + "/checkpoints"), std::string::npos)
      << corrupt;

  // One of the release before the checkpoint schema: the error says so.
  WriteFileAtomically(run + "/checkpoints/learner-000000000020.ttckpt", "TTCKPT01" + std::string(64, '\0'));
  EXPECT_EQ(train("version1.log"), 3) << ReadFile(dir + "/version1.log");
  const std::string version1 = ReadFile(dir + "/version1.log");
  EXPECT_NE(version1.find("learner-000000000020.ttckpt: learner checkpoint format version 1 (before the Cap'n Proto "
                          "schema); this build reads version 2: start a new run directory or resume with the release "
                          "that wrote it"),
            std::string::npos)
      << version1;

  // A directory that is not there.
  fs::remove_all(run);
  EXPECT_EQ(train("missing.log"), 3) << ReadFile(dir + "/missing.log");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensortier
