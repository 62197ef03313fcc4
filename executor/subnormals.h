// Subnormal floats flushed to zero (FTZ and DAZ) for a scope, on the calling
// thread: RunnerOptions::flush_subnormals.
//
// Why: arithmetic on subnormals takes a slow path on x86 (about a hundred
// cycles an operation). A small model trained on one batch reaches them:
// the ViT-like module's iterations took 85 ms instead of 13 for about a
// second of a bench, until its gradients underflowed to zero, and the plans
// measured in that second read 10% of all-DRAM instead of 57%. With them
// flushed, an iteration's time is a property of its placement, not of where
// the training happens to be.
#pragma once

#include <ATen/Context.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace tensortier {

class SubnormalsFlushed {
 public:
  // `on` false: nothing changes. Elsewhere than x86: nothing changes.
  explicit SubnormalsFlushed(bool on) {
#if defined(__x86_64__) || defined(__i386__)
    if (!on) return;
    saved_ = _mm_getcsr();
    active_ = at::globalContext().setFlushDenormal(true);  // false where the CPU cannot
#else
    (void)on;
#endif
  }
  // The thread's floating-point mode as it was.
  ~SubnormalsFlushed() {
#if defined(__x86_64__) || defined(__i386__)
    if (active_) _mm_setcsr(saved_);
#endif
  }
  SubnormalsFlushed(const SubnormalsFlushed&) = delete;
  SubnormalsFlushed& operator=(const SubnormalsFlushed&) = delete;

  bool active() const { return active_; }

 private:
  unsigned saved_ = 0;
  bool active_ = false;
};

}  // namespace tensortier
