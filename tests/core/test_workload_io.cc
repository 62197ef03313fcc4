#include "envs/workload_io.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>

#include "common/files.h"
#include "envs/workload_capnp.h"
#include "tests/core/same_workload.h"

namespace tensortier {
namespace {

using testing::ExpectSameWorkload;

// Three kernels, three tensors, every field away from its default so a
// dropped field shows up. Accesses are listed in the order Finalize sorts
// them into, so the round trip can compare them index by index.
Workload MakeWorkload() {
  Workload w;
  w.name = std::string("tiny\0net", 8);
  w.source = "synthetic:tiny seed=7";
  w.batch_size = 48;
  w.kernels = {{"conv1", 1500.25}, {"relu1", 320.5}, {"conv1_bwd", 2900.75}};
  w.tensors = {
      {"weight", 4096, TensorKind::kParameter, 0, 2, true},
      {"act", 1u << 20, TensorKind::kActivation, 0, 2, false},
      {"tmp", 777, TensorKind::kOptimizerState, 1, 1, false},
      {"untracked:4", 1880, TensorKind::kTemporary, 0, 2, true, /*pinned_dram=*/true},
  };
  w.accesses = {
      {0, 0, 1, 0, 12.5}, {0, 1, 0, 1, 40.0}, {1, 2, 2, 3, 7.25}, {2, 1, 5, 0, 99.0},
  };
  w.device.name = "optane-dcpmm";
  w.device.dram_to_slow_bytes_per_second = 1.5e9;
  w.device.slow_to_dram_bytes_per_second = 5.5e9;
  w.device.dram_to_slow_copy_setup_ns = 19000.5;
  w.device.slow_to_dram_copy_setup_ns = 9977.25;
  w.device.async_copy_exposure = 0.375;
  w.device.slow_capacity_bytes = 1ull << 40;
  w.model = {"resnet18", "/models/r18.pt", 4, 32, 10, "adam", 77};
  w.profile = {"thread-cpu+emulated, median of 5 interleaved rounds", "wall, lower quartile of 15 rounds", 5, 15,
               1.25, 2.5, 2, 3.1e8, 7.4e8};
  w.Finalize();
  return w;
}

PlacementPlan MakePlan(const Workload& w) {
  PlacementPlan plan;
  plan.workload_signature = w.Signature();
  plan.dram_limit_bytes = 600000;
  plan.mode = MigrationMode::kAsync;
  plan.initial_tiers = {Tier::kSlow, Tier::kDram, Tier::kSlow};
  plan.migrations = {{-1, 1, Tier::kSlow}, {0, 0, Tier::kDram}, {1, 1, Tier::kDram}};
  plan.produced_by = "dqn v42";
  return plan;
}

// A workload message with the given format version, as a newer (or older)
// build would write it.
std::string WorkloadBytesWithVersion(const Workload& w, uint16_t version) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<schema::Workload>();
  WorkloadToCapnp(w, root);
  root.setFormatVersion(version);
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return "TTWKLD01" + std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

class WorkloadIo : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("tt_workload_io_" + std::to_string(::getpid()) + "_" + info->name());
    MakeDirectories(dir_.string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string PathOf(const std::string& name) const { return (dir_ / name).string(); }

  // Reads `path` as a workload and returns the error message; fails the
  // test if it reads.
  static std::string ReadWorkloadError(const std::string& path) {
    try {
      ReadWorkloadFile(path);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    ADD_FAILURE() << "read of " << path << " did not throw";
    return "";
  }

  // A refused file's error names the file (the user has many) and why.
  static void ExpectReadRefused(const std::string& path, const std::string& why) {
    const std::string error = ReadWorkloadError(path);
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
  }

  std::filesystem::path dir_;
};

TEST_F(WorkloadIo, WorkloadRoundTripsThroughFile) {
  const Workload w = MakeWorkload();
  const std::string path = PathOf("tiny.ttw");
  WriteWorkloadFile(w, path);
  const Workload back = ReadWorkloadFile(path);
  EXPECT_TRUE(back.finalized());
  ExpectSameWorkload(w, back);
  EXPECT_EQ(ReadFile(path).substr(0, 8), "TTWKLD01");
}

TEST_F(WorkloadIo, WorkloadRoundTripsInMemory) {
  const Workload w = MakeWorkload();
  ExpectSameWorkload(w, ParseWorkload(SerializeWorkload(w)));
}

// Files written before the profile method existed have no such field: they
// still read, with an empty method, and plans keyed by the graph still fit.
TEST_F(WorkloadIo, WorkloadWithoutProfileMethodReadsAsEmpty) {
  Workload w = MakeWorkload();
  const uint64_t signature = w.Signature();
  w.profile = ProfileMethod();
  capnp::MallocMessageBuilder message;
  WorkloadToCapnp(w, message.initRoot<schema::Workload>());
  EXPECT_FALSE(message.getRoot<schema::Workload>().hasProfile());
  Workload back = ParseWorkload(SerializeWorkload(w));
  EXPECT_TRUE(back.profile.empty());
  EXPECT_EQ(back.profile.timing_rounds, 0u);
  EXPECT_EQ(back.Signature(), signature);
}

TEST_F(WorkloadIo, PlanRoundTripsThroughFile) {
  const PlacementPlan plan = MakePlan(MakeWorkload());
  const std::string path = PathOf("tiny.ttp");
  WritePlanFile(plan, path);
  EXPECT_EQ(ReadPlanFile(path), plan);
  EXPECT_EQ(ReadPlanFile(path).produced_by, plan.produced_by);
  EXPECT_EQ(ParsePlan(SerializePlan(plan)), plan);
  EXPECT_EQ(ReadFile(path).substr(0, 8), "TTPLAN01");
}

TEST_F(WorkloadIo, RejectsBadMagic) {
  std::string bytes = SerializeWorkload(MakeWorkload());
  bytes.replace(0, 8, "NOTMAGIC");
  const std::string path = PathOf("bad_magic.ttw");
  WriteFileAtomically(path, bytes);
  ExpectReadRefused(path, "bad magic");
}

TEST_F(WorkloadIo, RejectsPlanFileReadAsWorkload) {
  const std::string path = PathOf("plan.ttp");
  WritePlanFile(MakePlan(MakeWorkload()), path);
  EXPECT_NE(ReadWorkloadError(path).find("bad magic"), std::string::npos);
  EXPECT_THROW(ParsePlan(SerializeWorkload(MakeWorkload())), std::runtime_error);
}

TEST_F(WorkloadIo, RejectsTruncatedFileAtEveryLength) {
  const std::string bytes = SerializeWorkload(MakeWorkload());
  for (size_t length = 0; length < bytes.size(); ++length) {
    try {
      ParseWorkload(bytes.substr(0, length));
      ADD_FAILURE() << "prefix of " << length << " bytes parsed";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos)
          << "prefix of " << length << " bytes: " << e.what();
    }
  }
}

TEST_F(WorkloadIo, TruncatedFileErrorNamesTheFile) {
  const std::string bytes = SerializeWorkload(MakeWorkload());
  const std::string path = PathOf("truncated.ttw");
  WriteFileAtomically(path, bytes.substr(0, bytes.size() - 16));
  ExpectReadRefused(path, "truncated");
}

TEST_F(WorkloadIo, RejectsTrailingBytes) {
  EXPECT_THROW(ParseWorkload(SerializeWorkload(MakeWorkload()) + std::string(8, '\0')),
               std::runtime_error);
}

TEST_F(WorkloadIo, RejectsOtherFormatVersion) {
  const std::string path = PathOf("future.ttw");
  WriteFileAtomically(path, WorkloadBytesWithVersion(MakeWorkload(), 7));
  ExpectReadRefused(path, "format version 7, this build reads 1");
}

TEST_F(WorkloadIo, RejectsAccessToTensorOutOfRange) {
  Workload w = MakeWorkload();
  w.accesses.push_back({1, 9, 1, 0, 1.0});  // there are three tensors
  const std::string path = PathOf("bad_index.ttw");
  WriteWorkloadFile(w, path);
  ExpectReadRefused(path, "names tensor 9");
}

TEST_F(WorkloadIo, RejectsTensorFreedAfterLastKernel) {
  Workload w = MakeWorkload();
  w.tensors[2].free_kernel = 3;
  EXPECT_THROW(ParseWorkload(SerializeWorkload(w)), std::runtime_error);
}

TEST_F(WorkloadIo, MissingFileErrorNamesTheFile) {
  const std::string path = PathOf("absent.ttw");
  EXPECT_NE(ReadWorkloadError(path).find(path), std::string::npos);
}

TEST_F(WorkloadIo, GarbageAfterMagicNeverCrashes) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    std::string bytes = "TTWKLD01";
    const size_t words = std::uniform_int_distribution<size_t>(0, 256)(rng);
    for (size_t i = 0; i < words * 8; ++i) bytes.push_back(static_cast<char>(rng()));
    EXPECT_THROW(ParseWorkload(bytes), std::runtime_error) << "seed " << seed;
  }
}

TEST_F(WorkloadIo, CorruptedBytesNeverCrash) {
  const std::string good = SerializeWorkload(MakeWorkload());
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    std::string bytes = good;
    for (int flips = 0; flips < 4; ++flips)
      bytes[8 + rng() % (bytes.size() - 8)] = static_cast<char>(rng());
    // A flip may land in a name and leave a valid workload; either outcome
    // is fine as long as failures are runtime_errors.
    try {
      ParseWorkload(bytes);
    } catch (const std::runtime_error&) {
    }
  }
}

}  // namespace
}  // namespace tensortier
