// Whether a workload came back from a round trip (a file, a message) field
// for field.
#pragma once

#include <gtest/gtest.h>

#include "envs/workload.h"

namespace tensortier::testing {

inline void ExpectSameWorkload(const Workload& a, const Workload& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.batch_size, b.batch_size);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].name, b.kernels[i].name) << "kernel " << i;
    EXPECT_EQ(a.kernels[i].dram_time_ns, b.kernels[i].dram_time_ns) << "kernel " << i;
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor& x = a.tensors[i];
    const Tensor& y = b.tensors[i];
    EXPECT_EQ(x.name, y.name) << "tensor " << i;
    EXPECT_EQ(x.size_bytes, y.size_bytes) << "tensor " << i;
    EXPECT_EQ(x.kind, y.kind) << "tensor " << i;
    EXPECT_EQ(x.alloc_kernel, y.alloc_kernel) << "tensor " << i;
    EXPECT_EQ(x.free_kernel, y.free_kernel) << "tensor " << i;
    EXPECT_EQ(x.persistent, y.persistent) << "tensor " << i;
    EXPECT_EQ(x.pinned_dram, y.pinned_dram) << "tensor " << i;
  }
  ASSERT_EQ(a.accesses.size(), b.accesses.size());
  for (size_t i = 0; i < a.accesses.size(); ++i) {
    const Access& x = a.accesses[i];
    const Access& y = b.accesses[i];
    EXPECT_EQ(x.kernel, y.kernel) << "access " << i;
    EXPECT_EQ(x.tensor, y.tensor) << "access " << i;
    EXPECT_EQ(x.reads, y.reads) << "access " << i;
    EXPECT_EQ(x.writes, y.writes) << "access " << i;
    EXPECT_EQ(x.slow_penalty_ns, y.slow_penalty_ns) << "access " << i;
  }
  EXPECT_EQ(a.device.name, b.device.name);
  EXPECT_EQ(a.device.dram_to_slow_bytes_per_second, b.device.dram_to_slow_bytes_per_second);
  EXPECT_EQ(a.device.slow_to_dram_bytes_per_second, b.device.slow_to_dram_bytes_per_second);
  EXPECT_EQ(a.device.dram_to_slow_copy_setup_ns, b.device.dram_to_slow_copy_setup_ns);
  EXPECT_EQ(a.device.slow_to_dram_copy_setup_ns, b.device.slow_to_dram_copy_setup_ns);
  EXPECT_EQ(a.device.async_copy_exposure, b.device.async_copy_exposure);
  EXPECT_EQ(a.device.slow_capacity_bytes, b.device.slow_capacity_bytes);
  EXPECT_EQ(a.model.name, b.model.name);
  EXPECT_EQ(a.model.torchscript_path, b.model.torchscript_path);
  EXPECT_EQ(a.model.batch_size, b.model.batch_size);
  EXPECT_EQ(a.model.image_size, b.model.image_size);
  EXPECT_EQ(a.model.num_classes, b.model.num_classes);
  EXPECT_EQ(a.model.optimizer, b.model.optimizer);
  EXPECT_EQ(a.model.seed, b.model.seed);
  EXPECT_EQ(a.profile.kernel_timing, b.profile.kernel_timing);
  EXPECT_EQ(a.profile.copy_timing, b.profile.copy_timing);
  EXPECT_EQ(a.profile.timing_rounds, b.profile.timing_rounds);
  EXPECT_EQ(a.profile.copy_rounds, b.profile.copy_rounds);
  EXPECT_EQ(a.profile.load_average_start, b.profile.load_average_start);
  EXPECT_EQ(a.profile.load_average_end, b.profile.load_average_end);
  EXPECT_EQ(a.profile.online_cpus, b.profile.online_cpus);
  EXPECT_EQ(a.profile.dram_iteration_wall_ns, b.profile.dram_iteration_wall_ns);
  EXPECT_EQ(a.profile.slow_iteration_wall_ns, b.profile.slow_iteration_wall_ns);
  EXPECT_EQ(a.Signature(), b.Signature());
}

}  // namespace tensortier::testing
