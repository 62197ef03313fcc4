// Kernel boundaries and tensor accesses of LibTorch code, from ATen's
// RecordFunction callbacks (thread-local to the thread that creates the
// tracer; CPU autograd runs backward on that same thread).
//
// A kernel is a top-level operator: an ATen op or autograd backward node
// entered at nesting depth 0 (scopes FUNCTION and BACKWARD_FUNCTION; a
// TorchScript method is not a kernel, the ops it runs are). Nested calls
// belong to their top-level parent.
//
// Access counting (when enabled), per kernel and storage:
//  - an op that takes a storage as input reads it once, unless an enclosing
//    op of the same kernel also took it as input (the read is delegated);
//  - an op writes each output storage that is new or that it updates in
//    place (name ending in '_' or an `out` overload), unless a nested op
//    already wrote it;
//  - zero_, fill_, copy_ and the in-place random fills write self without
//    reading it;
//  - view/metadata ops (outputs alias inputs, not in place; or in-place
//    metadata ops such as detach_ and resize_) access nothing.
#pragma once

#include <c10/core/Storage.h>

#include <cstdint>
#include <string>
#include <vector>

#include "allocator/tiered_allocator.h"

namespace tensortier {

class KernelTracer {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    // Called when top-level kernel k starts / ends (k counts from 0).
    virtual void OnKernelStart(uint32_t k, const char* name) {}
    virtual void OnKernelEnd(uint32_t k) {}
    // A storage made by a TieredAllocator seen as an op input or output.
    virtual void OnStorage(uint32_t k, const c10::Storage& storage, AllocationRecord* record) {}
    // Access counting: `reads` and `writes` by one op (see above), of the
    // allocation's tensor_id as it was when the op saw it (the allocation may
    // have been freed by the op since: no record pointer is passed).
    virtual void OnAccess(uint32_t k, int64_t tensor_id, uint32_t reads, uint32_t writes) {}
  };
  struct Options {
    bool observe_storages = false;  // OnStorage calls (needs op inputs/outputs)
    bool count_accesses = false;    // OnAccess calls (implies observing storages)
  };

  KernelTracer(Listener* listener, Options options);
  ~KernelTracer();
  KernelTracer(const KernelTracer&) = delete;
  KernelTracer& operator=(const KernelTracer&) = delete;

  uint32_t kernels() const { return kernels_; }
  // The current top-level kernel, or -1 between kernels.
  int64_t current_kernel() const { return depth_ > 0 ? static_cast<int64_t>(kernels_) - 1 : -1; }

  // Internal (RecordFunction callbacks).
  // An allocation seen by an op. Ops free tensors (autograd nodes release
  // their saved inputs) and a freed record's address may come back for a new
  // one, so identity is the allocation sequence and no pointer is kept.
  struct Seen {
    uint64_t sequence = 0;
    int64_t tensor_id = -1;
    bool operator==(const Seen& o) const { return sequence == o.sequence; }
  };
  struct Frame {
    std::vector<Seen> inputs;
    std::vector<Seen> written;  // by this op or nested ones
    bool in_place = false;
    bool metadata_only = false;  // detach_, resize_, set_, ...
    bool self_write_only = false;  // zero_, fill_, copy_, ...: self written, not read
  };
  void Start(const void* fn);
  void End(const void* fn);

 private:
  void Collect(const void* values, bool outputs, std::vector<Seen>* out);
  Listener* listener_;
  Options options_;
  uint64_t handle_ = 0;
  uint32_t kernels_ = 0;
  uint32_t depth_ = 0;
  std::vector<Frame> stack_;
};

}  // namespace tensortier
