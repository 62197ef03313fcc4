#include "executor/plan_executor.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "profiler/graph_capture.h"
#include "profiler/kernel_tracer.h"

namespace tensortier {

double SteadyNowNs() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void WaitUntilNs(double deadline_ns) {
  for (;;) {
    const double left = deadline_ns - SteadyNowNs();
    if (left <= 0) return;
    if (left > 200e3) std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(left - 100e3)));
  }
}

double PacedCopy(void* dst, const void* src, size_t n, double target_ns) {
  constexpr size_t kChunk = 1 << 20;
  const double t0 = SteadyNowNs();
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t len = std::min(kChunk, n - off);
    std::memcpy(d + off, s + off, len);
    if (target_ns > 0) WaitUntilNs(t0 + target_ns * static_cast<double>(off + len) / static_cast<double>(n));
  }
  return SteadyNowNs() - t0;
}

struct PlanExecutor::Impl : public KernelTracer::Listener, public AllocationObserver {
  TieredAllocator& alloc;
  const Workload& w;
  const uint32_t P;
  const PlacementPlan& plan;
  Config cfg;
  const DeviceProfile* dev = nullptr;
  uint32_t K = 0, T = 0;
  std::vector<std::vector<Migration>> after;
  std::vector<std::vector<uint32_t>> writes_of;
  std::vector<uint8_t> needs_storage;
  bool observe_storages = false;
  bool async = false;

  // Per-iteration state.
  std::vector<AllocationRecord*> rec;
  std::vector<Tier> tier;
  struct Pending {
    TieredAllocator::MoveTicket ticket;
    uint32_t tensor;
  };
  std::vector<Pending> pending;
  IterationCounters cur;
  std::vector<double> ktimes;
  double kstart = 0;
  uint32_t kernels_seen = 0;
  HardwareCounterSet hw;

  // Copy thread.
  std::thread copier;
  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<TieredAllocator::MoveTicket> queue;
  bool stop = false;
  std::atomic<uint64_t> copy_ns{0};

  Impl(TieredAllocator& a, const Workload& wl, uint32_t p, const PlacementPlan& pl, Config c)
      : alloc(a), w(wl), P(p), plan(pl), cfg(c) {
    if (!w.finalized()) throw std::invalid_argument("PlanExecutor: workload not finalized");
    plan.Validate(w);
    K = static_cast<uint32_t>(w.num_kernels());
    T = static_cast<uint32_t>(w.num_tensors());
    if (P > T) throw std::invalid_argument("PlanExecutor: more persistent tensors than tensors");
    if (cfg.emulate_timing) dev = alloc.tier(Tier::kSlow).emulation();
    async = plan.mode == MigrationMode::kAsync;
    after.assign(K, {});
    needs_storage.assign(T, 0);
    for (const Migration& m : plan.migrations) {
      if (m.after_kernel < 0) continue;  // Validate() rejects these for every tensor
      after[static_cast<size_t>(m.after_kernel)].push_back(m);
      needs_storage[m.tensor] = 1;

    }
    // Storages are observed on every run, with or without migrations of
    // dynamic tensors, so that all plans (all-DRAM included) pay the same
    // tracing overhead and their times compare.
    observe_storages = true;
    writes_of.assign(K, {});
    for (const Access& a : w.accesses)
      if (a.writes > 0) writes_of[a.kernel].push_back(a.tensor);
    if (async && !plan.migrations.empty()) copier = std::thread([this] { CopyLoop(); });
  }

  ~Impl() override {
    if (copier.joinable()) {
      {
        std::lock_guard<std::mutex> lock(qmu);
        stop = true;
      }
      qcv.notify_all();
      copier.join();
    }
  }

  void CopyLoop() {
    for (;;) {
      TieredAllocator::MoveTicket t;
      {
        std::unique_lock<std::mutex> lock(qmu);
        qcv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;
        t = queue.front();
        queue.pop_front();
      }
      if (!TieredAllocator::ClaimCopy(t)) continue;  // the main thread took it, or the tensor died
      const double ns = PacedCopy(t.dst, t.src, t.bytes, PaceNs(t.bytes, t.to));
      copy_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
      TieredAllocator::MarkCopied(t);
    }
  }

  double PaceNs(uint64_t bytes, Tier to) const {
    if (!dev) return 0;
    return to == Tier::kSlow ? dev->CopyToDeviceNs(bytes) : dev->CopyFromDeviceNs(bytes);
  }

  void Count(uint32_t tensor, Tier to, uint64_t bytes) {
    tier[tensor] = to;
    if (to == Tier::kSlow) {
      ++cur.migrations_to_slow;
      cur.bytes_to_slow += bytes;
    } else {
      ++cur.migrations_to_dram;
      cur.bytes_to_dram += bytes;
    }
  }

  void Finish(const Pending& p) {
    const double t0 = SteadyNowNs();
    if (TieredAllocator::ClaimCopy(p.ticket)) {
      // The copy thread has not started it (e.g. kept off the cores by
      // LibTorch's worker threads): copy here rather than wait for it.
      const double ns = PacedCopy(p.ticket.dst, p.ticket.src, p.ticket.bytes, PaceNs(p.ticket.bytes, p.ticket.to));
      copy_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
      TieredAllocator::MarkCopied(p.ticket);
      ++cur.async_copies_inline;
    }
    const bool done = alloc.CompleteMove(p.ticket);
    cur.exposed_migration_ns += SteadyNowNs() - t0;
    if (done) Count(p.tensor, p.ticket.to, p.ticket.bytes);
    else ++cur.migrations_skipped;
  }

  void FinishAll() {
    for (const Pending& p : pending) Finish(p);
    pending.clear();
  }

  void StartMigration(const Migration& m) {
    AllocationRecord* r = rec[m.tensor];
    if (r == nullptr) {
      ++cur.migrations_skipped;
      return;
    }
    TieredAllocator::MoveTicket t;
    switch (alloc.BeginMove(r, m.to, &t)) {
      case TieredAllocator::MoveStart::kStarted:
        break;
      case TieredAllocator::MoveStart::kOutOfMemory:
        ++cur.migrations_refused;
        if (m.to == Tier::kDram) ++cur.migration_oom_events;
        return;
      default:
        ++cur.migrations_skipped;
        return;
    }
    if (async) {
      {
        std::lock_guard<std::mutex> lock(qmu);
        queue.push_back(t);
      }
      qcv.notify_one();
      pending.push_back({t, m.tensor});
    } else {
      TieredAllocator::ClaimCopy(t);
      const double ns = PacedCopy(t.dst, t.src, t.bytes, PaceNs(t.bytes, t.to));
      cur.migration_copy_ns += ns;
      TieredAllocator::MarkCopied(t);
      Finish({t, m.tensor});
      cur.exposed_migration_ns += ns;
    }
  }

  // ---- KernelTracer::Listener
  void OnKernelStart(uint32_t k, const char*) override {
    kernels_seen = k + 1;
    if (k < K && !pending.empty()) {
      for (size_t i = 0; i < pending.size();) {
        bool writes = false;
        for (uint32_t t : writes_of[k]) writes = writes || t == pending[i].tensor;
        if (writes) {
          ++cur.async_write_stalls;
          Finish(pending[i]);
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
    }
    kstart = SteadyNowNs();
  }

  void OnKernelEnd(uint32_t k) override {
    if (k >= K) return;
    if (dev) {
      double extra = 0;
      for (uint32_t ai : w.accesses_of_kernel(k)) {
        const Access& a = w.accesses[ai];
        if (tier[a.tensor] == Tier::kSlow) extra += dev->ExtraAccessNs(w.tensors[a.tensor].size_bytes, a.reads, a.writes);
      }
      if (extra > 0) {
        WaitUntilNs(SteadyNowNs() + extra);
        cur.emulated_delay_ns += extra;
      }
    }
    if (cfg.record_kernel_times) ktimes[k] = SteadyNowNs() - kstart;
    if (async) FinishAll();
    for (const Migration& m : after[k]) StartMigration(m);
  }

  void OnStorage(uint32_t, const c10::Storage& s, AllocationRecord* r) override {
    if (r->tensor_id < 0 || r->tensor_id >= static_cast<int64_t>(T) || !needs_storage[r->tensor_id]) return;
    if (r->storage._unsafe_get_target() != s.unsafeGetStorageImpl()) TieredAllocator::BindStorage(s);
  }

  // ---- AllocationObserver
  void OnAllocate(const AllocationRecord& r) override {
    if (r.tensor_id < static_cast<int64_t>(P) || r.tensor_id >= static_cast<int64_t>(T)) return;
    rec[r.tensor_id] = const_cast<AllocationRecord*>(&r);
    tier[r.tensor_id] = r.tier;
  }
  void OnFree(const AllocationRecord& r) override {
    if (r.tensor_id < 0 || r.tensor_id >= static_cast<int64_t>(T)) return;
    if (rec[r.tensor_id] == &r) rec[r.tensor_id] = nullptr;
  }

  IterationCounters Run(TrainingTask& task, double* loss) {
    cur = IterationCounters();
    rec.assign(T, nullptr);
    tier.assign(T, Tier::kDram);
    ktimes.assign(K, 0);
    kernels_seen = 0;
    copy_ns = 0;

    // 1. Persistent tensors to their initial tiers.
    std::vector<AllocationRecord*> precs = NumberPersistentTensors(task, alloc);
    auto reset_ids = [&] {
      for (AllocationRecord* r : precs) r->tensor_id = -1;
    };
    if (precs.size() != P) {
      reset_ids();
      throw std::runtime_error("graph changed: " + std::to_string(precs.size()) +
                               " persistent tensors, the profile has " + std::to_string(P));
    }
    for (uint32_t i = 0; i < P; ++i) {
      if (precs[i]->bytes != w.tensors[i].size_bytes) {
        reset_ids();
        throw std::runtime_error("graph changed: persistent tensor " + std::to_string(i) + " (" + w.tensors[i].name +
                                 ") has " + std::to_string(precs[i]->bytes) + " bytes, the profile says " +
                                 std::to_string(w.tensors[i].size_bytes));
      }
      rec[i] = precs[i];
      tier[i] = precs[i]->tier;
    }
    // Moves out of DRAM first, so that moves into DRAM find room under the limit.
    for (Tier pass : {Tier::kSlow, Tier::kDram}) {
      for (uint32_t i = 0; i < P; ++i) {
        const Tier want = plan.initial_tiers[i];
        if (want != pass || tier[i] == want) continue;
        TieredAllocator::MoveTicket t;
        if (alloc.BeginMove(precs[i], want, &t) != TieredAllocator::MoveStart::kStarted) {
          ++cur.migrations_refused;
          if (want == Tier::kDram) ++cur.migration_oom_events;
          continue;
        }
        TieredAllocator::ClaimCopy(t);
        PacedCopy(t.dst, t.src, t.bytes, 0);
        TieredAllocator::MarkCopied(t);
        if (alloc.CompleteMove(t)) {
          tier[i] = want;
          ++cur.setup_moves;
          cur.setup_bytes += t.bytes;
        }
      }
    }
    for (uint32_t i = P; i < T; ++i) tier[i] = plan.initial_tiers[i];

    // 2. The step.
    IterationRouting routing;
    routing.first_tensor_id = P;
    routing.tiers.assign(plan.initial_tiers.begin() + P, plan.initial_tiers.end());
    routing.sizes.reserve(T - P);
    for (uint32_t i = P; i < T; ++i) routing.sizes.push_back(w.tensors[i].size_bytes);
    cur.dram_limit_bytes = alloc.dram_limit();
    alloc.tier(Tier::kDram).ResetPeak();
    alloc.tier(Tier::kSlow).ResetPeak();
    const AllocatorCounters a0 = alloc.counters();
    rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    hw.Start();
    alloc.set_observer(this);
    alloc.BeginIteration(std::move(routing));
    const double t0 = SteadyNowNs();
    try {
      KernelTracer::Options topts;
      topts.observe_storages = observe_storages;
      KernelTracer tracer(this, topts);
      *loss = task.Step();
    } catch (...) {
      FinishAll();
      alloc.EndIteration();
      alloc.set_observer(nullptr);
      reset_ids();
      hw.Stop();
      throw;
    }
    FinishAll();
    cur.iteration_ns = SteadyNowNs() - t0;
    const uint64_t n = alloc.EndIteration();
    alloc.set_observer(nullptr);
    cur.hardware = hw.Stop();
    getrusage(RUSAGE_SELF, &ru1);
    reset_ids();

    // 3. Counters and checks.
    if (async) cur.migration_copy_ns = static_cast<double>(copy_ns.load());
    const TierStats d = alloc.tier(Tier::kDram).stats(), s = alloc.tier(Tier::kSlow).stats();
    cur.dram_peak_bytes = d.peak_bytes;
    cur.dram_end_bytes = d.bytes_in_use;
    cur.slow_peak_bytes = s.peak_bytes;
    cur.slow_end_bytes = s.bytes_in_use;
    if (cur.dram_limit_bytes > 0)
      cur.dram_headroom_bytes = static_cast<int64_t>(cur.dram_limit_bytes) - static_cast<int64_t>(d.peak_bytes);
    const AllocatorCounters a1 = alloc.counters();
    cur.allocations = a1.allocations - a0.allocations;
    cur.frees = a1.frees - a0.frees;
    cur.oom_events = a1.oom_events - a0.oom_events;
    cur.spilled_allocations = a1.spilled_allocations - a0.spilled_allocations;
    cur.spilled_bytes = a1.spilled_bytes - a0.spilled_bytes;
    cur.failed_allocations = a1.failed_allocations - a0.failed_allocations;
    cur.allocator_time_ns = a1.allocator_time_ns - a0.allocator_time_ns;
    cur.minor_faults = ru1.ru_minflt - ru0.ru_minflt;
    cur.major_faults = ru1.ru_majflt - ru0.ru_majflt;
    std::string diff;
    if (kernels_seen != K)
      diff = "the step ran " + std::to_string(kernels_seen) + " kernels, the profile has " + std::to_string(K);
    else if (n != T - P)
      diff = "the step made " + std::to_string(n) + " allocations, the profile has " + std::to_string(T - P);
    else if (!alloc.first_mismatch().empty())
      diff = alloc.first_mismatch();
    cur.graph_matches = diff.empty();
    cur.graph_difference = diff;
    return cur;
  }
};

PlanExecutor::PlanExecutor(TieredAllocator& alloc, const Workload& workload, uint32_t num_persistent,
                           const PlacementPlan& plan, Config config)
    : impl_(std::make_unique<Impl>(alloc, workload, num_persistent, plan, config)) {}

PlanExecutor::~PlanExecutor() = default;

IterationCounters PlanExecutor::RunIteration(TrainingTask& task, double* loss) { return impl_->Run(task, loss); }

const std::vector<double>& PlanExecutor::kernel_times_ns() const { return impl_->ktimes; }

}  // namespace tensortier
