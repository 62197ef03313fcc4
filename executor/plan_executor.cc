#include "executor/plan_executor.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "common/spin.h"
#include "profiler/graph_capture.h"
#include "profiler/kernel_tracer.h"

namespace tensortier {

double ThreadCpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

long ThreadContextSwitches() {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw + ru.ru_nivcsw;
}

double SteadyNowNs() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

namespace {

// Per thread: CPU time spent waiting on purpose (emulated device time, copy
// pacing, waiting for the copy thread) and how long those waits were meant
// to take, for IterationCounters::undisturbed_iteration_ns.
thread_local double t_wait_cpu_ns = 0;
thread_local double t_wait_intended_ns = 0;

void SleepOrSpinUntil(double deadline_ns) {
  for (;;) {
    const double left = deadline_ns - SteadyNowNs();
    if (left <= 0) return;
    if (left > 200e3) std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(left - 100e3)));
  }
}

}  // namespace

// The calling thread's undisturbed clock (IterationCounters::undisturbed_iteration_ns)
// at a thread CPU time already read, or now.
double UndisturbedAtNs(double thread_cpu_ns) { return thread_cpu_ns - t_wait_cpu_ns + t_wait_intended_ns; }
double UndisturbedNowNs() { return UndisturbedAtNs(ThreadCpuNowNs()); }

void WaitUntilNs(double deadline_ns) {
  const double now = SteadyNowNs();
  if (deadline_ns <= now) return;
  const double cpu0 = ThreadCpuNowNs();
  SleepOrSpinUntil(deadline_ns);
  t_wait_cpu_ns += ThreadCpuNowNs() - cpu0;
  t_wait_intended_ns += deadline_ns - now;
}

double PacedCopy(void* dst, const void* src, size_t n, double target_ns, double* undisturbed_ns) {
  constexpr size_t kChunk = 1 << 20;
  const double t0 = SteadyNowNs();
  const double cpu0 = ThreadCpuNowNs();
  double wait_cpu_ns = 0;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t len = std::min(kChunk, n - off);
    std::memcpy(d + off, s + off, len);
    if (target_ns > 0) {
      const double w0 = ThreadCpuNowNs();
      SleepOrSpinUntil(t0 + target_ns * static_cast<double>(off + len) / static_cast<double>(n));
      wait_cpu_ns += ThreadCpuNowNs() - w0;
    }
  }
  // Undisturbed, the copy takes the device's time or the memcpy's, whichever
  // is longer; the pacing's own CPU time is not part of either.
  const double copy_cpu_ns = ThreadCpuNowNs() - cpu0 - wait_cpu_ns;
  t_wait_cpu_ns += wait_cpu_ns;
  t_wait_intended_ns += std::max(0.0, target_ns - copy_cpu_ns);
  if (undisturbed_ns) *undisturbed_ns = std::max(target_ns, copy_cpu_ns);
  return SteadyNowNs() - t0;
}

AccessWeight SlowTierAccessWeight(const MemoryTier& slow, bool emulate_timing) {
  const DeviceProfile* dev = emulate_timing ? slow.emulation() : nullptr;
  if (dev == nullptr) return nullptr;
  return [dev](uint64_t bytes, uint32_t reads, uint32_t writes) { return dev->ExtraAccessNs(bytes, reads, writes); };
}

namespace {

const char* WhyNotStarted(TieredAllocator::MoveStart why) {
  switch (why) {
    case TieredAllocator::MoveStart::kNoStorage:
      return "its storage is not known (freed, or not a tensor's storage)";
    case TieredAllocator::MoveStart::kSameTier:
      return "it is already there";
    case TieredAllocator::MoveStart::kBusy:
      return "a move of it is in flight";
    case TieredAllocator::MoveStart::kOutOfMemory:
      return "no room there (the DRAM limit or the tier's capacity)";
    case TieredAllocator::MoveStart::kNotAdjacent:
      return "its group is not adjacent";
    case TieredAllocator::MoveStart::kStarted:
      break;
  }
  return "started";
}

}  // namespace

struct PlanExecutor::Impl : public KernelTracer::Listener, public AllocationObserver {
  TieredAllocator& alloc;
  const Workload& w;
  const uint32_t P;
  PlacementPlan plan;  // with the workload's pinned tensors kept in DRAM
  Config cfg;
  const DeviceProfile* dev = nullptr;
  uint32_t K = 0, T = 0;
  std::vector<std::vector<Migration>> after;
  std::vector<std::vector<uint32_t>> writes_of;
  std::vector<uint8_t> needs_storage;
  bool observe_storages = false;
  bool async = false;
  AggregationOptions agg;
  std::vector<BlockClass> block_class;  // per tensor
  // Persistent tensors of each region, in layout order, per initial tier.
  std::vector<uint32_t> layout[2][3];

  // Per-iteration state.
  std::vector<AllocationRecord*> rec;
  std::vector<Tier> tier;
  std::vector<uintptr_t> page_of;  // page of the tensor's block start, for the page-level latency
  struct Pending {
    TieredAllocator::MoveTicket ticket;
    std::vector<uint32_t> tensors;
    std::vector<uint64_t> bytes;
    double issued_undisturbed_ns = 0;         // async: the training thread's undisturbed clock at the start
    std::shared_ptr<double> undisturbed_ns;  // async: set by the copy thread (QueuedCopy)
    uint32_t overlaps_kernel = 0;            // async: the kernel the copy runs under
  };
  struct PageAccess {
    uintptr_t page;
    uint32_t reads, writes;
  };
  std::vector<PageAccess> sub_page_accesses;
  std::vector<Pending> pending;
  // Moves into a tier that had no room for them at the end of a kernel,
  // tried again at the start of the next (StartMove).
  struct DeferredMove {
    std::vector<uint32_t> tensors;
    Tier to;
  };
  std::vector<DeferredMove> deferred;
  bool retrying_deferred = false;
  IterationCounters cur;
  std::vector<double> ktimes, ktimes_cpu, kcharged;
  std::vector<uint8_t> kswitched;
  double kstart = 0, kstart_cpu = 0;
  double owed_emulated_ns = 0;  // device time of kernels whose wait is deferred (PayEmulatedTime)
  long switches_mark = 0;  // the thread's context switches when the previous kernel's work ended
  uint32_t kernels_seen = 0;
  HardwareCounterSet hw;

  // Copy thread.
  std::thread copier;
  std::mutex qmu;
  std::condition_variable qcv;
  // An async copy and, once the copy thread made it, how long it takes on
  // an idle core (PacedCopy's undisturbed duration; NaN until then).
  struct QueuedCopy {
    TieredAllocator::MoveTicket ticket;
    std::shared_ptr<double> undisturbed_ns;
  };
  std::deque<QueuedCopy> queue;
  std::atomic<uint64_t> queued_total{0};  // copies queued so far (training thread)
  uint64_t taken_total = 0;               // of them, taken by the copy thread (copy thread only)
  static constexpr long kCopierSpinNs = 200'000;
  // When the copy thread would be free on an idle host, on the training
  // thread's undisturbed clock: copies run one after another there.
  double copier_free_undisturbed_ns = 0;
  std::atomic<bool> stop{false};  // written under qmu; read without it while spinning
  bool copies_queued = false;  // queued since the copy thread was last woken (training thread only)
  std::atomic<uint64_t> copy_ns{0};

  Impl(TieredAllocator& a, const Workload& wl, uint32_t p, const PlacementPlan& pl, Config c)
      : alloc(a), w(wl), P(p), plan(pl), cfg(c) {
    if (!w.finalized()) throw std::invalid_argument("PlanExecutor: workload not finalized");
    plan.Validate(w);
    plan.KeepPinnedInDram(w);
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
    // Persistent tensors the task does not name (a TorchScript module's
    // constants) are bound when the step uses them, so that the next
    // iteration can place them.
    for (uint32_t i = 0; i < P; ++i) needs_storage[i] = 1;
    // Storages are observed on every run, with or without migrations of
    // dynamic tensors, so that all plans (all-DRAM included) pay the same
    // tracing overhead and their times compare.
    observe_storages = true;
    writes_of.assign(K, {});
    for (const Access& a : w.accesses)
      if (a.writes > 0) writes_of[a.kernel].push_back(a.tensor);
    agg = cfg.aggregation;
    ChooseBlockClasses();
    if (async && !plan.migrations.empty()) copier = std::thread([this] { CopyLoop(); });
  }

  // DeepTM's Aggregator on the profiled graph: which tensors are batched,
  // which adjoined, and the order persistent ones are laid out in.
  void ChooseBlockClasses() {
    std::vector<uint32_t> kernels_accessing(T, 0), first_access(T, K), accesses(T, 0);
    for (const Access& a : w.accesses) {
      ++kernels_accessing[a.tensor];
      first_access[a.tensor] = std::min(first_access[a.tensor], a.kernel);
      accesses[a.tensor] += a.reads + a.writes;
    }
    block_class.assign(T, BlockClass::kOwn);
    for (uint32_t t = 0; t < T; ++t) {
      const Tensor& x = w.tensors[t];
      if (x.pinned_dram) continue;  // it cannot move, so it keeps the block it has
      if (agg.batch_small_tensors && x.size_bytes < agg.small_tensor_bytes && kernels_accessing[t] >= 2)
        block_class[t] = BlockClass::kSmall;
      else if (agg.adjoin_long_lived &&
               (x.persistent || x.free_kernel - x.alloc_kernel >= static_cast<int64_t>(agg.long_lived_min_kernels)))
        block_class[t] = BlockClass::kLongLived;
    }
    // Reuse distance from the start of the iteration ascending (DeepTM: r
    // ascending, then future accesses ascending): tensors used by the same
    // kernels end up on the same pages / next to each other.
    for (uint32_t i = 0; i < P; ++i)
      if (block_class[i] != BlockClass::kOwn)
        layout[plan.initial_tiers[i] == Tier::kDram ? 0 : 1][static_cast<int>(block_class[i])].push_back(i);
    for (auto& per_tier : layout)
      for (auto& list : per_tier)
        std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
          if (first_access[a] != first_access[b]) return first_access[a] < first_access[b];
          return accesses[a] < accesses[b];
        });
  }

  ~Impl() override {
    alloc.TrimRegions();
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
      QueuedCopy q;
      // The next boundary's copies usually come within a few kernels: wait
      // for them spinning a little before sleeping (common/spin.h).
      SpinUntil([&] { return queued_total.load(std::memory_order_acquire) != taken_total || stop.load(); },
                kCopierSpinNs);
      {
        std::unique_lock<std::mutex> lock(qmu);
        qcv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;
        q = queue.front();
        queue.pop_front();
        ++taken_total;
      }
      const TieredAllocator::MoveTicket& t = q.ticket;
      if (!TieredAllocator::ClaimCopy(t)) continue;  // the main thread took it, or the tensor died
      // Published before MarkCopied, which the training thread waits for.
      const double ns = PacedCopy(t.dst, t.src, t.bytes, PaceNs(t.bytes, t.to), q.undisturbed_ns.get());
      copy_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
      TieredAllocator::MarkCopied(t);
    }
  }

  // One wake-up per kernel boundary, not per copy: waking the copy thread
  // costs the training thread a futex system call and, when the copy
  // thread sleeps on another core, an inter-processor interrupt (about 35 us
  // of the training thread's CPU time each in this 2-vCPU guest, 8 ms per
  // iteration for Sentinel's 235 copies on default-scale MobileNetV2).
  void WakeCopier() {
    if (!copies_queued) return;
    copies_queued = false;
    qcv.notify_one();
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
    const double u0 = UndisturbedNowNs();
    bool inline_copy = false;
    if (TieredAllocator::ClaimCopy(p.ticket)) {
      inline_copy = true;
      // The copy thread has not started it (e.g. kept off the cores by
      // LibTorch's worker threads): copy here rather than wait for it.
      const double ns = PacedCopy(p.ticket.dst, p.ticket.src, p.ticket.bytes, PaceNs(p.ticket.bytes, p.ticket.to));
      copy_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
      TieredAllocator::MarkCopied(p.ticket);
      ++cur.async_copies_inline;
    }
    std::vector<uint8_t> moved;
    const double blocked_wall0 = SteadyNowNs(), blocked_cpu0 = ThreadCpuNowNs();
    const double blocked_u0 = UndisturbedAtNs(blocked_cpu0);
    alloc.CompleteMove(p.ticket, &moved);  // may wait for the copy thread
    const double blocked_cpu_ns = ThreadCpuNowNs() - blocked_cpu0;
    t_wait_cpu_ns += blocked_cpu_ns;
    if (!inline_copy && p.undisturbed_ns && std::isfinite(*p.undisturbed_ns)) {
      // On an idle host the copy thread starts the copy when it is issued
      // or when the copies before it are done, and takes its undisturbed
      // duration: the wait is what is left of that. The wall clock's wait
      // would also hold the time other processes kept the copy thread off
      // a core.
      const double done = std::max(p.issued_undisturbed_ns, copier_free_undisturbed_ns) + *p.undisturbed_ns;
      copier_free_undisturbed_ns = done;
      t_wait_intended_ns += std::max(0.0, done - blocked_u0);
    } else {
      t_wait_intended_ns += std::max(0.0, SteadyNowNs() - blocked_wall0 - blocked_cpu_ns);
    }
    // On the undisturbed clock, as undisturbed_iteration_ns, so that the two
    // compare beside a busy process too.
    cur.exposed_migration_ns += UndisturbedNowNs() - u0;
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      if (moved[i]) {
        Count(p.tensors[i], p.ticket.to, p.bytes[i]);
        if (AllocationRecord* r = rec[p.tensors[i]]) page_of[p.tensors[i]] = PageOf(r->ptr);
      } else if (w.tensors[p.tensors[i]].free_kernel == p.overlaps_kernel) {
        // The tensor died under its copy, in its last kernel, as the
        // workload says it does: the copy the plan asked for (and the cost
        // model priced) was made, and the tier it was for is moot.
        Count(p.tensors[i], p.ticket.to, p.bytes[i]);
      } else {
        ++cur.migrations_skipped;
        NoteUnfollowed("migration", p.tensors[i], p.ticket.to, TieredAllocator::MoveStart::kNoStorage);
      }
    }
  }

  void NoteUnfollowed(const char* what, uint32_t tensor, Tier to, TieredAllocator::MoveStart why) {
    if (!cur.first_unfollowed_move.empty()) return;
    const Tensor& x = w.tensors[tensor];
    cur.first_unfollowed_move = std::string(what) + " of tensor " + std::to_string(tensor) + " (" + x.name + ", " +
                                std::to_string(x.size_bytes) + " B) to " + TierName(to) + ": " + WhyNotStarted(why);
  }

  static uintptr_t PageOf(const void* p) { return reinterpret_cast<uintptr_t>(p) / PageRegion::kPageBytes; }

  void FinishAll() {
    for (const Pending& p : pending) Finish(p);
    pending.clear();
  }

  // Whether kernel k writes one of `tensors`.
  bool Writes(uint32_t k, const std::vector<uint32_t>& tensors) const {
    if (k >= K) return false;
    for (uint32_t t : writes_of[k])
      if (std::find(tensors.begin(), tensors.end(), t) != tensors.end()) return true;
    return false;
  }

  // The migrations after kernel k: out of DRAM first, then into DRAM, so
  // that the moves out have made their room before anything moves in; with
  // contiguous migration, runs of tensors adjacent in a region that go the
  // same way move as one copy. As in the cost model (EvaluateValidPlan), an
  // async copy of a tensor kernel k+1 writes is blocking: it is made and
  // finished here, so a move out of DRAM of such a tensor has freed its DRAM
  // before the moves into DRAM start (the others hold both copies until the
  // end of kernel k+1, eq. 7).
  void StartMigrations(uint32_t k) { StartMoves(after[k], k + 1); }

  // The moves of `ms` before kernel `next` (K: after the last kernel, where
  // nothing is left to overlap, so every copy blocks).
  void StartMoves(const std::vector<Migration>& ms, uint32_t next) {
    for (Tier to : {Tier::kSlow, Tier::kDram}) {
      if (!agg.contiguous_migration) {
        for (const Migration& m : ms)
          if (m.to == to) StartMove({m.tensor}, to, next);
        continue;
      }
      std::vector<std::pair<AllocationRecord*, uint32_t>> in_regions;
      for (const Migration& m : ms) {
        if (m.to != to) continue;
        AllocationRecord* r = rec[m.tensor];
        if (r != nullptr && r->region != nullptr && r->tier != to) in_regions.emplace_back(r, m.tensor);
        else StartMove({m.tensor}, to, next);
      }
      std::sort(in_regions.begin(), in_regions.end(), [](const auto& a, const auto& b) {
        if (a.first->region != b.first->region) return std::less<PageRegion*>()(a.first->region, b.first->region);
        return std::less<void*>()(a.first->ptr, b.first->ptr);
      });
      for (size_t i = 0; i < in_regions.size();) {
        std::vector<uint32_t> run = {in_regions[i].second};
        size_t j = i + 1;
        for (; j < in_regions.size(); ++j) {
          const AllocationRecord* prev = in_regions[j - 1].first;
          const AllocationRecord* next = in_regions[j].first;
          if (next->region != prev->region ||
              static_cast<const char*>(prev->ptr) + PageRegion::Footprint(prev->bytes) != next->ptr)
            break;
          run.push_back(in_regions[j].second);
        }
        StartMove(run, to, next);
        i = j;
      }
    }
  }

  // One copy for `tensors` (adjacent in a region when more than one; if the
  // group cannot start, each tensor is tried on its own), before kernel
  // `next`.
  void StartMove(const std::vector<uint32_t>& tensors, Tier to, uint32_t next) {
    std::vector<AllocationRecord*> rs;
    for (uint32_t t : tensors) rs.push_back(rec[t]);
    if (rs.size() == 1 && rs[0] == nullptr) {
      ++cur.migrations_skipped;
      NoteUnfollowed("migration", tensors[0], to, TieredAllocator::MoveStart::kNoStorage);
      return;
    }
    TieredAllocator::MoveTicket t;
    const TieredAllocator::MoveStart start =
        rs.size() == 1 ? alloc.BeginMove(rs[0], to, &t) : alloc.BeginGroupMove(rs, to, &t);
    if (start != TieredAllocator::MoveStart::kStarted && rs.size() > 1) {
      for (uint32_t x : tensors) StartMove({x}, to, next);
      return;
    }
    switch (start) {
      case TieredAllocator::MoveStart::kStarted:
        break;
      case TieredAllocator::MoveStart::kOutOfMemory:
        // The profile counts a free between kernels k and k+1 in kernel k
        // (graph_capture.cc), so the cost model has its room for the moves
        // after kernel k; here those moves start before the step makes it
        // (ResNet-18 and Inception-v3 free tensors once a relu or an add has
        // returned). Such a move waits for the next kernel's start, where
        // everything between the two kernels has happened.
        if (!retrying_deferred && next < K) {
          deferred.push_back({tensors, to});
          return;
        }
        ++cur.migrations_refused;
        if (to == Tier::kDram) ++cur.migration_oom_events;
        NoteUnfollowed("migration", tensors[0], to, start);
        return;
      default:
        ++cur.migrations_skipped;
        NoteUnfollowed("migration", tensors[0], to, start);
        return;
    }
    Pending p;
    p.ticket = t;
    p.tensors = tensors;
    p.overlaps_kernel = next;
    for (AllocationRecord* r : rs) p.bytes.push_back(r->bytes);
    ++cur.migration_copies;
    cur.migration_copy_bytes += t.bytes;
    cur.migration_device_ns += PaceNs(t.bytes, t.to);
    if (tensors.size() > 1) cur.grouped_migrations += tensors.size();
    // An async copy of a tensor the next kernel writes would be waited for
    // at that kernel's start anyway: it blocks now (a write stall), on this
    // thread, like a sync copy.
    const bool write_stall = async && Writes(next, tensors);
    if (write_stall) ++cur.async_write_stalls;
    if (async && !write_stall && next < K) {
      p.issued_undisturbed_ns = UndisturbedNowNs();
      p.undisturbed_ns = std::make_shared<double>(std::numeric_limits<double>::quiet_NaN());
      {
        std::lock_guard<std::mutex> lock(qmu);
        queue.push_back({t, p.undisturbed_ns});
      }
      queued_total.fetch_add(1, std::memory_order_release);
      copies_queued = true;
      pending.push_back(std::move(p));
    } else {
      // The async copies queued before this one were issued before it: the
      // copy thread starts on them now, as it would have with this copy
      // queued too.
      if (async) WakeCopier();
      TieredAllocator::ClaimCopy(t);
      const double u0 = UndisturbedNowNs();
      const double ns = PacedCopy(t.dst, t.src, t.bytes, PaceNs(t.bytes, t.to));
      // Async: migration_copy_ns is copy_ns at the end of the iteration.
      if (async) copy_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
      else cur.migration_copy_ns += ns;
      cur.exposed_migration_ns += UndisturbedNowNs() - u0;
      TieredAllocator::MarkCopied(t);
      Finish(p);
    }
  }

  // The plan repeats every iteration: a persistent tensor that ends it
  // elsewhere than the plan starts it goes back now, on the iteration's
  // clock and in its counters, as the cost model charges it (EvaluatePlan).
  // Left to the next iteration's set-up, which is not timed, such a copy
  // was free: AutoTM-sync's plan of default-scale MobileNetV2 measured 3.3 ms
  // of copies an iteration less than it makes on a host that repeats it.
  void ReturnPersistentTensors() {
    std::vector<Migration> returns;
    for (uint32_t i = 0; i < P; ++i)
      if (!w.tensors[i].pinned_dram && rec[i] != nullptr && tier[i] != plan.initial_tiers[i])
        returns.push_back({static_cast<int32_t>(K) - 1, i, plan.initial_tiers[i]});
    if (returns.empty()) return;
    StartMoves(returns, K);
    FinishAll();
  }

  // ---- KernelTracer::Listener
  void OnKernelStart(uint32_t k, const char*) override {
    kernels_seen = k + 1;
    if (!deferred.empty()) {
      std::vector<DeferredMove> now;
      now.swap(deferred);
      retrying_deferred = true;
      for (const DeferredMove& d : now) StartMove(d.tensors, d.to, k);
      retrying_deferred = false;
      WakeCopier();
    }
    // No copy in flight here is of a tensor kernel k writes: StartMove made
    // those before it returned.
    kstart = SteadyNowNs();
    if (cfg.record_kernel_times) kstart_cpu = ThreadCpuNowNs();
  }

  void OnKernelEnd(uint32_t k) override {
    if (k >= K) return;
    const double cpu_ns = cfg.record_kernel_times ? ThreadCpuNowNs() - kstart_cpu : 0;
    if (cfg.record_kernel_times) {
      const long switches = ThreadContextSwitches();
      kswitched[k] = switches != switches_mark;
      switches_mark = switches;
    }
    double emulated_ns = 0;
    if (dev) {
      // One device latency per access stream; tensors smaller than a page
      // that share a page are one stream (the page is fetched once).
      double extra = 0;
      sub_page_accesses.clear();
      for (uint32_t ai : w.accesses_of_kernel(k)) {
        const Access& a = w.accesses[ai];
        if (tier[a.tensor] != Tier::kSlow) continue;
        const uint64_t bytes = w.tensors[a.tensor].size_bytes;
        extra += dev->ExtraTransferNs(bytes, a.reads, a.writes);
        if (bytes < PageRegion::kPageBytes && page_of[a.tensor] != 0) {
          sub_page_accesses.push_back({page_of[a.tensor], a.reads, a.writes});
        } else {
          extra += dev->ExtraLatencyNs(a.reads, a.writes);
          cur.slow_access_streams += a.reads + a.writes;
        }
      }
      std::sort(sub_page_accesses.begin(), sub_page_accesses.end(),
                [](const PageAccess& a, const PageAccess& b) { return a.page < b.page; });
      for (size_t i = 0; i < sub_page_accesses.size();) {
        uint32_t reads = 0, writes = 0;
        size_t j = i;
        for (; j < sub_page_accesses.size() && sub_page_accesses[j].page == sub_page_accesses[i].page; ++j) {
          reads = std::max(reads, sub_page_accesses[j].reads);
          writes = std::max(writes, sub_page_accesses[j].writes);
        }
        extra += dev->ExtraLatencyNs(reads, writes);
        cur.slow_access_streams += reads + writes;
        i = j;
      }
      cur.emulated_delay_ns += extra;
      emulated_ns = extra;
      owed_emulated_ns += extra;
    }
    if (cfg.record_kernel_times) {
      ktimes[k] = SteadyNowNs() - kstart + emulated_ns;
      ktimes_cpu[k] = cpu_ns + emulated_ns;
      kcharged[k] = emulated_ns;
    }
    if (async && !pending.empty()) {
      PayEmulatedTime();  // the copies started after kernel k-1 overlap kernel k's device time
      FinishAll();
    }
    if (!after[k].empty()) {
      PayEmulatedTime();  // a copy started now must not overlap device time that is past
      StartMigrations(k);
      WakeCopier();
    }
  }

  // The emulated device's time is owed, not waited at once: only a copy can
  // observe when the training thread waits, so the debt is paid before a
  // copy starts or is finished, and at the end of the iteration. Each wait
  // costs the thread more than its length (two thread-clock system calls, a
  // sleep and slower kernels after it: docs/results/executor.md), so paying
  // 889 kernels' debts one by one measured 7-14 ms per iteration above the
  // cost model on default-scale MobileNetV2.
  void PayEmulatedTime() {
    if (owed_emulated_ns <= 0) return;
    WaitUntilNs(SteadyNowNs() + owed_emulated_ns);
    owed_emulated_ns = 0;
    ++cur.emulated_waits;
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
    page_of[r.tensor_id] = PageOf(r.ptr);
  }
  void OnFree(const AllocationRecord& r) override {
    if (r.tensor_id < 0 || r.tensor_id >= static_cast<int64_t>(T)) return;
    if (rec[r.tensor_id] == &r) rec[r.tensor_id] = nullptr;
  }

  void PlaceInitially(AllocationRecord* r, Tier want, BlockClass cls) {
    const uint64_t bytes = r->bytes;
    const bool tier_changes = r->tier != want;
    const TieredAllocator::MoveStart res = alloc.Place(r, want, cls);
    switch (res) {
      case TieredAllocator::MoveStart::kStarted:
        ++cur.setup_moves;
        cur.setup_bytes += bytes;
        break;
      case TieredAllocator::MoveStart::kSameTier:
        break;
      default:
        // A change of block class within the tier is layout only: no room
        // for it is not an OOM.
        if (!tier_changes) break;
        ++cur.migrations_refused;
        if (want == Tier::kDram) ++cur.migration_oom_events;
        NoteUnfollowed("initial placement", static_cast<uint32_t>(r->tensor_id), want, res);
    }
  }

  IterationCounters Run(TrainingTask& task, double* loss) {
    cur = IterationCounters();
    rec.assign(T, nullptr);
    tier.assign(T, Tier::kDram);
    page_of.assign(T, 0);
    ktimes.assign(K, 0);
    ktimes_cpu.assign(K, 0);
    kcharged.assign(K, 0);
    kswitched.assign(K, 0);
    deferred.clear();
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
    // Moves out of DRAM first, so that moves into DRAM find room under the
    // limit. Region classes are laid out in their order (nothing moves when
    // the layout is already there).
    for (Tier pass : {Tier::kSlow, Tier::kDram}) {
      for (BlockClass cls : {BlockClass::kSmall, BlockClass::kLongLived}) {
        const std::vector<uint32_t>& list = layout[pass == Tier::kDram ? 0 : 1][static_cast<int>(cls)];
        if (list.empty()) continue;
        std::vector<AllocationRecord*> rs;
        for (uint32_t i : list) rs.push_back(precs[i]);
        const int64_t copied = alloc.PlaceContiguously(rs, pass, cls);
        if (copied > 0) {
          cur.setup_moves += list.size();
          cur.setup_bytes += static_cast<uint64_t>(copied);
        } else if (copied < 0) {
          for (uint32_t i : list) PlaceInitially(precs[i], pass, cls);
        }
      }
      for (uint32_t i = 0; i < P; ++i)
        if (plan.initial_tiers[i] == pass && block_class[i] == BlockClass::kOwn)
          PlaceInitially(precs[i], pass, BlockClass::kOwn);
    }
    for (uint32_t i = 0; i < P; ++i) {
      tier[i] = precs[i]->tier;
      page_of[i] = PageOf(precs[i]->ptr);
    }
    for (uint32_t i = P; i < T; ++i) tier[i] = plan.initial_tiers[i];

    // 2. The step.
    IterationRouting routing;
    routing.first_tensor_id = P;
    routing.tiers.assign(plan.initial_tiers.begin() + P, plan.initial_tiers.end());
    routing.sizes.reserve(T - P);
    for (uint32_t i = P; i < T; ++i) routing.sizes.push_back(w.tensors[i].size_bytes);
    routing.classes.assign(block_class.begin() + P, block_class.end());
    cur.dram_limit_bytes = alloc.dram_limit();
    alloc.tier(Tier::kDram).ResetPeak();
    alloc.tier(Tier::kSlow).ResetPeak();
    alloc.ResetPeaks();
    const AllocatorCounters a0 = alloc.counters();
    rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    hw.Start();
    alloc.set_observer(this);
    alloc.BeginIteration(std::move(routing));
    if (cfg.record_kernel_times) switches_mark = ThreadContextSwitches();
    const double wait_cpu0 = t_wait_cpu_ns, wait_intended0 = t_wait_intended_ns;
    owed_emulated_ns = 0;
    copier_free_undisturbed_ns = 0;
    // The CPU interval nests inside the wall interval.
    const double t0 = SteadyNowNs();
    const double cpu0 = ThreadCpuNowNs();
    try {
      KernelTracer::Options topts;
      topts.observe_storages = observe_storages;
      KernelTracer tracer(this, topts);
      *loss = task.Step();
    } catch (...) {
      owed_emulated_ns = 0;
      FinishAll();
      alloc.EndIteration();
      alloc.set_observer(nullptr);
      reset_ids();
      hw.Stop();
      throw;
    }
    PayEmulatedTime();
    FinishAll();
    ReturnPersistentTensors();
    cur.undisturbed_iteration_ns = ThreadCpuNowNs() - cpu0 - (t_wait_cpu_ns - wait_cpu0) +
                                   (t_wait_intended_ns - wait_intended0);
    cur.iteration_ns = SteadyNowNs() - t0;
    const uint64_t n = alloc.EndIteration();
    alloc.set_observer(nullptr);
    cur.hardware = hw.Stop();
    getrusage(RUSAGE_SELF, &ru1);
    reset_ids();

    // 3. Counters and checks.
    if (async) cur.migration_copy_ns = static_cast<double>(copy_ns.load());
    const TierUsage d = alloc.usage(Tier::kDram), s = alloc.usage(Tier::kSlow);
    cur.dram_peak_bytes = d.charged_peak_bytes;
    cur.dram_end_bytes = d.charged_bytes;
    cur.slow_peak_bytes = s.charged_peak_bytes;
    cur.slow_end_bytes = s.charged_bytes;
    cur.dram_pages_peak = d.pages_peak;
    cur.slow_pages_peak = s.pages_peak;
    cur.dram_region_reserved_bytes = d.region_reserved_bytes;
    cur.slow_region_reserved_bytes = s.region_reserved_bytes;
    if (cur.dram_limit_bytes > 0)
      cur.dram_headroom_bytes = static_cast<int64_t>(cur.dram_limit_bytes) - static_cast<int64_t>(d.charged_peak_bytes);
    const AllocatorCounters a1 = alloc.counters();
    cur.allocations = a1.allocations - a0.allocations;
    cur.frees = a1.frees - a0.frees;
    cur.oom_events = a1.oom_events - a0.oom_events;
    cur.spilled_allocations = a1.spilled_allocations - a0.spilled_allocations;
    cur.spilled_bytes = a1.spilled_bytes - a0.spilled_bytes;
    cur.failed_allocations = a1.failed_allocations - a0.failed_allocations;
    cur.allocator_time_ns = a1.allocator_time_ns - a0.allocator_time_ns;
    cur.region_allocations = a1.region_allocations - a0.region_allocations;
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
const std::vector<double>& PlanExecutor::kernel_cpu_times_ns() const { return impl_->ktimes_cpu; }
const std::vector<uint8_t>& PlanExecutor::kernel_switched() const { return impl_->kswitched; }
const std::vector<double>& PlanExecutor::kernel_emulated_ns() const { return impl_->kcharged; }

}  // namespace tensortier
