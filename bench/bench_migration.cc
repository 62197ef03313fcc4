// Migration copy throughput against plain memcpy, in the same run (issue 3:
// at least 80% of memcpy for copies of 1 MiB and more). A migration is what
// the executor does: allocate in the other tier, copy (PacedCopy without
// pacing), free the source. BM_Migrate* time the raw tier path,
// BM_TensorMigration* the executor's: a LibTorch tensor moved by the
// TieredAllocator (BeginMove, copy, CompleteMove), as an own block or in the
// long-lived region (docs/aggregation.md).
//
//   build/bench/bench_migration --benchmark_counters_tabular=true
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "executor/plan_executor.h"
#include "allocator/tiered_allocator.h"
#include "tiers/memory_tier.h"

namespace tensortier {
namespace {

void Touch(void* p, size_t n) { std::memset(p, 1, n); }

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<char> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}

// DRAM -> slow tier and back, as the executor migrates a tensor. The slow
// tier is `emulated:optane-dcpmm` with pacing off (the copy path itself) or
// a file-backed pmem tier in /tmp (memkind PMEM kind, as on an fsdax mount).
void Migrate(benchmark::State& state, const std::string& slow_spec) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto dram = MakeDramTier();
  auto slow = MakeSlowTier(slow_spec);
  void* src = dram->Allocate(n);
  Touch(src, n);
  for (auto _ : state) {
    void* dst = slow->Allocate(n);
    PacedCopy(dst, src, n, 0);
    benchmark::DoNotOptimize(dst);
    dram->Free(src, n);
    src = dram->Allocate(n);
    PacedCopy(src, dst, n, 0);
    slow->Free(dst, n);
  }
  dram->Free(src, n);
  state.SetBytesProcessed(2 * static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
  state.SetLabel(slow->backend());
}

void BM_MigrateEmulated(benchmark::State& state) { Migrate(state, "emulated:optane-dcpmm"); }
void BM_MigratePmemFile(benchmark::State& state) { Migrate(state, "pmem:/tmp"); }

// A tensor of n bytes to the slow tier and back, the way the executor moves
// it (emulated tier, pacing off: the copy path itself).
void TensorMigration(benchmark::State& state, BlockClass cls) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::shared_ptr<MemoryTier> dram = MakeDramTier();
  std::shared_ptr<MemoryTier> slow = MakeSlowTier("emulated:optane-dcpmm");
  TieredAllocator alloc(dram, slow);
  alloc.Install();
  IterationRouting routing;
  routing.tiers = {Tier::kDram};
  routing.classes = {cls};
  alloc.BeginIteration(routing);
  at::Tensor t = at::ones({static_cast<int64_t>(n)}, at::kByte);
  alloc.EndIteration();
  AllocationRecord* r = TieredAllocator::BindStorage(t.storage());
  auto move = [&](Tier to) {
    TieredAllocator::MoveTicket ticket;
    if (alloc.BeginMove(r, to, &ticket) != TieredAllocator::MoveStart::kStarted) {
      state.SkipWithError("move refused");
      return;
    }
    TieredAllocator::ClaimCopy(ticket);
    PacedCopy(ticket.dst, ticket.src, ticket.bytes, 0);
    TieredAllocator::MarkCopied(ticket);
    alloc.CompleteMove(ticket);
  };
  for (auto _ : state) {
    move(Tier::kSlow);
    move(Tier::kDram);
  }
  state.SetBytesProcessed(2 * static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
  state.SetLabel(BlockClassName(cls));
  t.reset();
  alloc.Uninstall();
}

void BM_TensorMigrationOwn(benchmark::State& state) { TensorMigration(state, BlockClass::kOwn); }
void BM_TensorMigrationRegion(benchmark::State& state) { TensorMigration(state, BlockClass::kLongLived); }

BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);
BENCHMARK(BM_MigrateEmulated)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);
BENCHMARK(BM_MigratePmemFile)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);
BENCHMARK(BM_TensorMigrationOwn)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);
BENCHMARK(BM_TensorMigrationRegion)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);

}  // namespace
}  // namespace tensortier

BENCHMARK_MAIN();
