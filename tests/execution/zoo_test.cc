#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

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

TEST(ZooModels, InceptionV3StandardStem) {
  ModelOptions o;
  o.name = "inception_v3";
  o.batch_size = 2;  // batch norm needs more than one value per channel
  o.image_size = 80;
  EXPECT_TRUE(std::isfinite(MakeTrainingTask(o)->Step()));
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

}  // namespace
}  // namespace tensortier

namespace tensortier {
namespace {

// Dumps the first kernels of a profile with their accesses, and the counters
// of a sync and an async run of a simple offloading plan. For eyeballing.
TEST(ZooModels, DISABLED_DumpProfile) {
  const RunnerOptions o = ZooRunnerOptions(std::getenv("TT_ZOO_MODELS") ? std::getenv("TT_ZOO_MODELS") : "resnet18", 2,
                                           32, "emulated:optane-dcpmm");
  RealWorkloadRunner runner(o);
  const ProfileReport& p = runner.Profile();
  const Workload& w = p.workload;
  for (size_t k = 0; k < std::min<size_t>(w.num_kernels(), std::getenv("TT_DUMP_KERNELS") ? std::atoi(std::getenv("TT_DUMP_KERNELS")) : 40); ++k) {
    std::printf("k%-4zu %-50s dram %8.1f us slow %8.1f us:", k, w.kernels[k].name.c_str(), p.kernel_dram_ns[k] / 1e3,
                p.kernel_slow_ns[k] / 1e3);
    for (uint32_t ai : w.accesses_of_kernel(k)) {
      const Access& a = w.accesses[ai];
      std::printf(" t%u(%s,%lluB,r%u,w%u,%.1fus)", a.tensor, TensorKindName(w.tensors[a.tensor].kind),
                  static_cast<unsigned long long>(w.tensors[a.tensor].size_bytes), a.reads, a.writes,
                  a.slow_penalty_ns / 1e3);
    }
    std::printf("\n");
  }
  // Offload activations after their allocating kernel, bring them back one kernel before their next use.
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync}) {
    PlacementPlan plan = PlacementPlan::Uniform(w, Tier::kDram, 0);
    plan.mode = mode;
    for (uint32_t t = p.num_persistent; t < w.num_tensors(); ++t) {
      const auto& ks = w.kernels_of_tensor(t);
      if (w.tensors[t].kind != TensorKind::kActivation || ks.size() < 2) continue;
      const uint32_t first = ks[0], next = ks[1];
      if (next <= first + 2) continue;
      plan.migrations.push_back({static_cast<int32_t>(first), t, Tier::kSlow});
      plan.migrations.push_back({static_cast<int32_t>(next - 2), t, Tier::kDram});
    }
    plan.Normalize();
    ExecutionReport r = runner.Execute(plan, 1, 3);
    const IterationCounters& c = r.counters.back();
    std::printf("%s ok=%d median %.1f ms spread %.3f | to_slow %llu (%llu B) to_dram %llu (%llu B) skipped %llu "
                "refused %llu | copy %.1f ms exposed %.1f ms stalls %llu emulated %.1f ms | dram peak %llu slow peak %llu "
                "| faults %lld/%lld hw %s %s\n",
                MigrationModeName(mode), r.ok, r.median_ns / 1e6, r.spread,
                (unsigned long long)c.migrations_to_slow, (unsigned long long)c.bytes_to_slow,
                (unsigned long long)c.migrations_to_dram, (unsigned long long)c.bytes_to_dram,
                (unsigned long long)c.migrations_skipped, (unsigned long long)c.migrations_refused,
                c.migration_copy_ns / 1e6, c.exposed_migration_ns / 1e6, (unsigned long long)c.async_write_stalls,
                c.emulated_delay_ns / 1e6, (unsigned long long)c.dram_peak_bytes, (unsigned long long)c.slow_peak_bytes,
                (long long)c.minor_faults, (long long)c.major_faults, c.hardware.available ? "yes" : "no",
                c.hardware.unavailable_reason.c_str());
  }
  ExecutionReport d = runner.Execute(PlacementPlan::Uniform(w, Tier::kDram, 0), 1, 3);
  std::printf("all-dram median %.1f ms spread %.3f\n", d.median_ns / 1e6, d.spread);
}

}  // namespace
}  // namespace tensortier
