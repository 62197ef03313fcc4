// DeepTM's page-level aggregation (Section III-C), as switches of the
// executor. docs/aggregation.md describes the semantics; each switch can be
// turned off on its own for ablation (tensortier profile --no-batching ...,
// bench/bench_aggregation).
#pragma once

#include <cstdint>
#include <string>

namespace tensortier {

// Where a tensor's block lives inside its tier.
enum class BlockClass : uint8_t {
  kOwn = 0,        // its own allocation from the tier (memkind)
  kSmall = 1,      // packed with other small tensors into shared pages of a reserved region
  kLongLived = 2,  // adjoined with other long-lived tensors in a reserved region
};
const char* BlockClassName(BlockClass c);

struct AggregationOptions {
  // Tensors below small_tensor_bytes that are accessed again after their
  // allocating kernel share pages of a per-tier reserved region.
  bool batch_small_tensors = true;
  // Persistent tensors (parameters, gradients, optimizer state, inputs) and
  // dynamic tensors living at least long_lived_min_kernels kernels are laid
  // out next to each other in a per-tier reserved region.
  bool adjoin_long_lived = true;
  // Tensors adjacent in a region that migrate at the same kernel boundary in
  // the same direction move as one copy.
  bool contiguous_migration = true;
  uint64_t small_tensor_bytes = 4096;
  uint32_t long_lived_min_kernels = 16;

  static AggregationOptions AllOff() {
    AggregationOptions o;
    o.batch_small_tensors = o.adjoin_long_lived = o.contiguous_migration = false;
    return o;
  }
  // "batching+adjoining+contiguous", "none", ...: for reports.
  std::string Describe() const;
};

}  // namespace tensortier
