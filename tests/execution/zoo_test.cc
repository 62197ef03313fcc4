#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "executor/executor.h"
#include "models/training_task.h"

namespace tensortier {
namespace {

TEST(ZooModels, EveryModelTrainsOneStepOnSmallInputs) {
  for (const std::string& name : ZooModelNames()) {
    ModelOptions o;
    o.name = name;
    o.batch_size = 2;
    o.image_size = 32;
    auto task = MakeTrainingTask(o);
    const double l1 = task->Step();
    EXPECT_TRUE(std::isfinite(l1)) << name;
    EXPECT_EQ(task->steps_done(), 1) << name;
    EXPECT_FALSE(task->Parameters().empty()) << name;
  }
}

TEST(ZooModels, SameOptionsGiveBitIdenticalSteps) {
  ModelOptions o;
  o.name = "alexnet";  // has dropout: exercises the per-step reseeding
  o.batch_size = 2;
  auto a = MakeTrainingTask(o);
  auto b = MakeTrainingTask(o);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(a->Step(), b->Step());
}

TEST(ZooModels, RejectsBadOptions) {
  ModelOptions o;
  o.name = "resnet9000";
  EXPECT_THROW(MakeTrainingTask(o), std::invalid_argument);
  o.name = "vgg16";
  o.image_size = 16;
  EXPECT_THROW(MakeTrainingTask(o), std::invalid_argument);
  o.name = "torchscript";
  o.torchscript_path = "/nonexistent.pt";
  EXPECT_THROW(MakeTrainingTask(o), std::invalid_argument);
}

// The table of the note (DeepTM Table I style) at the test size.
// Slow: run with --gtest_also_run_disabled_tests.
TEST(ZooModels, DISABLED_PrintTable) {
  std::printf("%-14s %8s %8s %12s %12s %12s %6s\n", "model", "kernels", "tensors", "peak_MiB", "dram_ms", "slow_ms",
              "det");
  for (const std::string& name : ZooModelNames()) {
    RunnerOptions o;
    o.model.name = name;
    o.model.batch_size = 2;
    o.model.image_size = 32;
    o.slow_tier = "emulated:optane-dcpmm";
    o.profile_timing_iterations = 3;
    RealWorkloadRunner runner(o);
    const ProfileReport& p = runner.Profile();
    std::printf("%-14s %8zu %8zu %12.1f %12.1f %12.1f %6d\n", name.c_str(), p.workload.num_kernels(),
                p.workload.num_tensors(), p.workload.peak_live_bytes() / 1048576.0, p.iteration_dram_ns / 1e6,
                p.iteration_slow_ns / 1e6, p.deterministic);
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace tensortier
