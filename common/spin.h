// Waiting for another thread's work by spinning for a bounded time before
// blocking on a condition variable.
//
// Why: the executor's training thread and its copy thread hand work to each
// other at kernel boundaries, tens of microseconds apart on a small model.
// Waking a thread asleep on another core costs the waker a futex call and,
// in a virtual machine, an inter-processor interrupt; the woken thread then
// runs on cold caches. On the ViT-like module (iterations of about 8 ms) an
// asynchronous plan's training thread computed 2.5-3.5 ms more per iteration
// than with no copies, against 0.3-0.7 ms for the same plans copied
// synchronously (docs/results/executor.md).
#pragma once

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tensortier {

// A hint to the core that this thread is spinning (x86 PAUSE, Arm YIELD).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// Spins until done() or `max_ns` nanoseconds have passed; returns done().
template <class Done>
bool SpinUntil(Done done, long max_ns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(max_ns);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return done();
    for (int i = 0; i < 16; ++i) CpuRelax();
  }
}

}  // namespace tensortier
