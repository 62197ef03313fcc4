// What the tiered allocator does with a DRAM request that does not fit
// (allocator/tiered_allocator.h); LibTorch-free for executor/executor.h.
#pragma once

#include <cstdint>

namespace tensortier {

enum class DramOverflowPolicy : uint8_t {
  kSpillToSlow = 0,  // allocate the request in the slow tier instead
  kFail = 1,         // throw DramOomError; the episode fails
};

}  // namespace tensortier
