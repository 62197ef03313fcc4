// Real training iterations of a zoo model in unit tests: a model small
// enough to profile and train quickly, and whether two runs trained alike.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "executor/executor.h"

namespace tensortier::testing {

// On the emulated slow tier, timed once.
inline RunnerOptions SmallRunner(const std::string& model) {
  RunnerOptions o = ZooRunnerOptions(model, 2, 32, "emulated:optane-dcpmm");
  o.model.num_classes = 10;
  o.profile_timing_iterations = 1;
  o.warmup_iterations = 0;
  o.repeats = 1;
  return o;
}

// Bit for bit: the same losses and the same bytes in every tensor.
inline void ExpectSame(const TrainingSnapshot& ref, const TrainingSnapshot& got, const std::string& what) {
  ASSERT_EQ(ref.losses.size(), got.losses.size()) << what;
  for (size_t i = 0; i < ref.losses.size(); ++i) EXPECT_EQ(ref.losses[i], got.losses[i]) << what << " loss " << i;
  ASSERT_EQ(ref.bytes.size(), got.bytes.size()) << what;
  size_t differing = 0;
  for (size_t i = 0; i < ref.bytes.size(); ++i) differing += ref.bytes[i] != got.bytes[i];
  EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << ref.bytes.size() << " tensors differ";
}

}  // namespace tensortier::testing
