#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/spin.h"

namespace tensortier {
namespace {

double ElapsedNs(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

// Work another thread hands over while the waiter spins is seen without a
// sleep, and the data written before the hand-over is visible.
TEST(Spin, SeesWorkAnotherThreadHandsOverWhileItSpins) {
  std::atomic<bool> ready{false};
  int payload = 0;
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    payload = 42;
    ready.store(true, std::memory_order_release);
  });
  // Generous: a loaded host may keep the producer off a core for a while.
  const bool seen = SpinUntil([&] { return ready.load(std::memory_order_acquire); }, 2'000'000'000L);
  producer.join();
  ASSERT_TRUE(seen);
  EXPECT_EQ(payload, 42);
}

// Work that never comes: the spin gives up after its time, so the caller
// can block instead, and says so.
TEST(Spin, GivesUpAfterItsTime) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool seen = SpinUntil([] { return false; }, 300'000L);
  const double ns = ElapsedNs(t0);
  EXPECT_FALSE(seen);
  EXPECT_GE(ns, 300e3);
}

// Work already there: no spin at all.
TEST(Spin, ReturnsAtOnceWhenTheWorkIsThere) {
  int calls = 0;
  EXPECT_TRUE(SpinUntil([&] { ++calls; return true; }, 1'000'000'000L));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tensortier
