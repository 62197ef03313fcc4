// Captures the static graph of one real training iteration as an envs
// Workload: kernels from KernelTracer, tensors from the TieredAllocator's
// allocation and free events, accesses from op inputs/outputs.
//
// Tensor numbering (what plans and the executor use):
//   0 .. P-1   persistent tensors, live before and after the iteration: the
//              task's PersistentTensors() in order (parameters, buffers,
//              gradients, optimizer state, input, target), then any other
//              live allocation of the allocator ("untracked:*", by sequence);
//              alloc_kernel 0, free_kernel K-1, persistent = true. An
//              untracked one the step never touches is pinned_dram: bytes the
//              framework keeps (a TorchScript module's debug records), which
//              no executor can move.
//   P + i      the i-th non-empty allocation during the iteration.
// Lifetimes: an allocation between two kernels belongs to the next kernel, a
// free between kernels to the previous one. Every tensor gets a write access
// in its allocating kernel. Kinds: persistent ones by role; a dynamic tensor
// that lives past its allocating kernel is an activation when allocated
// before the first backward kernel, a gradient after it; the rest are
// temporaries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/workload.h"
#include "allocator/tiered_allocator.h"
#include "models/training_task.h"

namespace tensortier {

struct CapturedIteration {
  Workload workload;            // finalized; kernel times as measured while capturing, penalties 0
  uint32_t num_persistent = 0;  // P
  std::vector<uint64_t> dynamic_sizes;  // sizes of tensors P.. in allocation order
  uint32_t untracked_persistent = 0;    // live allocations not named by the task
  uint32_t pinned_persistent = 0;       // of those, the ones the step never touches (pinned_dram)
  uint32_t alive_at_end = 0;            // dynamic tensors not freed by the end of the iteration
  uint64_t dropped_accesses = 0;        // outside a lifetime (should be 0)
  double loss = 0;
};

// Binds and numbers the persistent tensors of `task` (see above). Throws
// std::runtime_error if one was not allocated by `alloc` (install the
// allocator before building the task).
std::vector<AllocationRecord*> NumberPersistentTensors(TrainingTask& task, TieredAllocator& alloc,
                                                       std::vector<Tensor>* descriptions = nullptr);

// A zoo model's name; a TorchScript module's file name without extension,
// so that workloads of different modules get their own tables and charts.
std::string WorkloadNameFor(const ModelOptions& o);

// Runs one task.Step() with everything in DRAM and returns its graph.
CapturedIteration CaptureIteration(TrainingTask& task, TieredAllocator& alloc);

// "" when the two graphs are the same (kernel names, tensor sizes,
// lifetimes, accesses); else a description of the first difference.
std::string CompareGraphs(const CapturedIteration& a, const CapturedIteration& b);

}  // namespace tensortier
