#include "executor/tiered_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <chrono>
#include <algorithm>
#include <condition_variable>
#include <unordered_map>
#include <unordered_set>

namespace tensortier {

struct MoveState {
  std::mutex mu;
  std::condition_variable cv;
  bool copied = false;
  bool cancelled = false;  // the tensor was freed while the move was open
  std::atomic<bool> claimed{false};  // someone has taken (or waived) the copy
  AllocationRecord* record = nullptr;
  void* dst = nullptr;
  size_t bytes = 0;
  Tier to = Tier::kDram;

  void WaitCopied() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return copied; });
  }
};

struct AllocatorCore {
  std::shared_ptr<MemoryTier> dram, slow;
  mutable std::mutex mu;
  uint64_t dram_limit = 0;
  DramOverflowPolicy policy = DramOverflowPolicy::kSpillToSlow;
  AllocationObserver* observer = nullptr;
  bool in_iteration = false;
  IterationRouting routing;
  uint64_t iteration_allocations = 0;
  std::string first_mismatch;
  uint64_t sequence = 0;
  AllocatorCounters c;
  std::unordered_set<AllocationRecord*> live;

  MemoryTier& tier(Tier t) { return t == Tier::kDram ? *dram : *slow; }
  bool DramFits(size_t bytes) const { return dram_limit == 0 || dram->bytes_in_use() + bytes <= dram_limit; }
  void Release(AllocationRecord* r);
};

namespace {

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Data pointer -> record, for every live block of every TieredAllocator.
// DataPtrs carry the data pointer as their context (ctx == ptr) because
// LibTorch's raw_allocate / raw_deallocate require it; the record is found
// here. Never destroyed (storages may be freed during static destruction).
struct Registry {
  std::mutex mu;
  std::unordered_map<void*, AllocationRecord*> map;
};
Registry& Reg() {
  static Registry* r = new Registry();
  return *r;
}

AllocationRecord* Lookup(void* ptr) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.map.find(ptr);
  return it == reg.map.end() ? nullptr : it->second;
}

void DeleteRecord(void* ptr) {
  AllocationRecord* r;
  {
    Registry& reg = Reg();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.map.find(ptr);
    if (it == reg.map.end()) return;  // not ours (cannot happen): leak rather than crash
    r = it->second;
    reg.map.erase(it);
  }
  std::shared_ptr<AllocatorCore> core = r->core;  // keeps the core alive through Release
  core->Release(r);
}

}  // namespace

void AllocatorCore::Release(AllocationRecord* r) {
  const uint64_t t0 = NowNs();
  std::shared_ptr<MoveState> move;
  {
    std::lock_guard<std::mutex> lock(mu);
    move = std::move(r->move);
    if (move) {
      std::lock_guard<std::mutex> ml(move->mu);
      move->cancelled = true;
    }
  }
  if (move) {
    if (!move->claimed.exchange(true)) {
      // Nobody copies yet, and the data is dying: no copy needed.
      std::lock_guard<std::mutex> ml(move->mu);
      move->copied = true;
    }
    move->WaitCopied();  // a copy in progress still reads r->ptr
    tier(move->to).Free(move->dst, move->bytes);
  }
  tier(r->tier).Free(r->ptr, r->bytes);
  AllocationObserver* obs;
  {
    std::lock_guard<std::mutex> lock(mu);
    ++c.frees;
    live.erase(r);
    obs = observer;
  }
  if (obs) obs->OnFree(*r);
  delete r;
  std::lock_guard<std::mutex> lock(mu);
  c.allocator_time_ns += NowNs() - t0;
}

TieredAllocator::TieredAllocator(std::shared_ptr<MemoryTier> dram, std::shared_ptr<MemoryTier> slow)
    : core_(std::make_shared<AllocatorCore>()), dram_(std::move(dram)), slow_(std::move(slow)) {
  if (!dram_ || !slow_) throw std::invalid_argument("TieredAllocator needs two tiers");
  core_->dram = dram_;
  core_->slow = slow_;
}

TieredAllocator::~TieredAllocator() {
  if (installed_) Uninstall();
}

void TieredAllocator::Install() {
  if (installed_) return;
  previous_ = c10::GetCPUAllocator();
  c10::SetCPUAllocator(this, /*priority=*/0);
  if (c10::GetCPUAllocator() != this)
    throw std::runtime_error("TieredAllocator: c10::SetCPUAllocator did not take (another allocator has priority)");
  installed_ = true;
}

void TieredAllocator::Uninstall() {
  if (!installed_) return;
  c10::SetCPUAllocator(previous_, /*priority=*/0);
  installed_ = false;
}

c10::DataPtr TieredAllocator::allocate(size_t n) const {
  AllocatorCore& core = *core_;
  const c10::Device cpu(c10::DeviceType::CPU);
  const uint64_t t0 = NowNs();
  if (n == 0) {
    std::lock_guard<std::mutex> lock(core.mu);
    ++core.c.zero_size_allocations;
    return c10::DataPtr(nullptr, nullptr, nullptr, cpu);
  }
  auto* r = new AllocationRecord();
  r->bytes = n;
  r->core = core_;
  Tier want = Tier::kDram;
  AllocationObserver* obs;
  {
    std::lock_guard<std::mutex> lock(core.mu);
    r->sequence = core.sequence++;
    if (core.in_iteration) {
      const uint64_t i = core.iteration_allocations++;
      if (i < core.routing.tiers.size()) {
        r->tensor_id = static_cast<int64_t>(core.routing.first_tensor_id + i);
        want = core.routing.tiers[i];
        if (!core.routing.sizes.empty() && core.routing.sizes[i] != n) {
          ++core.c.size_mismatches;
          if (core.first_mismatch.empty())
            core.first_mismatch = "allocation " + std::to_string(i) + " (tensor " + std::to_string(r->tensor_id) +
                                  ") has " + std::to_string(n) + " bytes, the profile says " +
                                  std::to_string(core.routing.sizes[i]);
        }
      } else if (core.routing.open_ended) {
        r->tensor_id = static_cast<int64_t>(core.routing.first_tensor_id + i);
      } else {
        ++core.c.unplanned_allocations;
        if (core.first_mismatch.empty())
          core.first_mismatch = "more allocations than the profile's " + std::to_string(core.routing.tiers.size());
      }
    }
    if (want == Tier::kDram && !core.DramFits(n)) {
      ++core.c.oom_events;
      if (core.policy == DramOverflowPolicy::kFail) {
        ++core.c.failed_allocations;
        const std::string msg = "DRAM limit exceeded: " + std::to_string(n) + " bytes requested with " +
                                std::to_string(core.dram->bytes_in_use()) + " of " + std::to_string(core.dram_limit) +
                                " in use";
        delete r;
        throw DramOomError(msg);
      }
      want = Tier::kSlow;
      ++core.c.spilled_allocations;
      core.c.spilled_bytes += n;
    }
    obs = core.observer;
  }
  void* p = core.tier(want).Allocate(n);
  if (p == nullptr && want == Tier::kSlow) {
    // Slow tier full: the only place left is DRAM, if it fits.
    std::lock_guard<std::mutex> lock(core.mu);
    if (core.DramFits(n)) {
      want = Tier::kDram;
      p = core.dram->Allocate(n);
    }
  }
  if (p == nullptr) {
    {
      std::lock_guard<std::mutex> lock(core.mu);
      ++core.c.failed_allocations;
    }
    delete r;
    throw DramOomError("TieredAllocator: no memory for " + std::to_string(n) + " bytes in " +
                       std::string(TierName(want)) + " (" + core.tier(want).backend() + ")");
  }
  r->ptr = p;
  r->tier = want;
  {
    Registry& reg = Reg();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.map[p] = r;
  }
  if (obs) obs->OnAllocate(*r);
  {
    std::lock_guard<std::mutex> lock(core.mu);
    ++core.c.allocations;
    core.live.insert(r);
    core.c.allocator_time_ns += NowNs() - t0;
  }
  return c10::DataPtr(p, p, &DeleteRecord, cpu);
}

c10::DeleterFnPtr TieredAllocator::raw_deleter() const { return &DeleteRecord; }

void TieredAllocator::set_dram_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->dram_limit = bytes;
}
uint64_t TieredAllocator::dram_limit() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->dram_limit;
}
void TieredAllocator::set_overflow_policy(DramOverflowPolicy p) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->policy = p;
}
void TieredAllocator::set_observer(AllocationObserver* observer) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->observer = observer;
}

void TieredAllocator::BeginIteration(IterationRouting routing) {
  if (!routing.sizes.empty() && routing.sizes.size() != routing.tiers.size())
    throw std::invalid_argument("IterationRouting: sizes and tiers differ in length");
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->routing = std::move(routing);
  core_->iteration_allocations = 0;
  core_->first_mismatch.clear();
  core_->in_iteration = true;
}

uint64_t TieredAllocator::EndIteration() {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->in_iteration = false;
  return core_->iteration_allocations;
}

bool TieredAllocator::in_iteration() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->in_iteration;
}

std::string TieredAllocator::first_mismatch() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->first_mismatch;
}

AllocatorCounters TieredAllocator::counters() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->c;
}

std::vector<AllocationRecord*> TieredAllocator::LiveRecords() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  std::vector<AllocationRecord*> v(core_->live.begin(), core_->live.end());
  std::sort(v.begin(), v.end(), [](const AllocationRecord* a, const AllocationRecord* b) { return a->sequence < b->sequence; });
  return v;
}

void TieredAllocator::ResetCounters() {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->c = AllocatorCounters();
}

AllocationRecord* TieredAllocator::RecordOf(const c10::StorageImpl& storage) {
  const c10::DataPtr& d = storage.data_ptr();
  if (d.get_deleter() != &DeleteRecord || d.get() == nullptr) return nullptr;
  return Lookup(d.get());
}

AllocationRecord* TieredAllocator::RecordOf(const c10::Storage& storage) {
  if (!storage) return nullptr;
  return RecordOf(*storage.unsafeGetStorageImpl());
}

AllocationRecord* TieredAllocator::BindStorage(const c10::Storage& storage) {
  AllocationRecord* r = RecordOf(storage);
  if (r == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(r->core->mu);
  if (r->storage._unsafe_get_target() != storage.unsafeGetStorageImpl()) r->storage = storage.getWeakStorageImpl();
  return r;
}

TieredAllocator::MoveStart TieredAllocator::BeginMove(AllocationRecord* r, Tier to, MoveTicket* ticket) {
  AllocatorCore& core = *core_;
  c10::intrusive_ptr<c10::StorageImpl> storage;  // released after the lock (its release may free r)
  std::lock_guard<std::mutex> lock(core.mu);
  if (r->move) return MoveStart::kBusy;
  if (r->tier == to) return MoveStart::kSameTier;
  storage = r->storage.lock();
  if (!storage || storage->data_ptr().get() != r->ptr) return MoveStart::kNoStorage;
  if (to == Tier::kDram && !core.DramFits(r->bytes)) return MoveStart::kOutOfMemory;
  void* dst = core.tier(to).Allocate(r->bytes);
  if (dst == nullptr) return MoveStart::kOutOfMemory;
  auto state = std::make_shared<MoveState>();
  state->record = r;
  state->dst = dst;
  state->bytes = r->bytes;
  state->to = to;
  r->move = state;
  ticket->state = state;
  ticket->src = r->ptr;
  ticket->dst = dst;
  ticket->bytes = r->bytes;
  ticket->to = to;
  return MoveStart::kStarted;
}

bool TieredAllocator::ClaimCopy(const MoveTicket& ticket) { return !ticket.state->claimed.exchange(true); }

void TieredAllocator::MarkCopied(const MoveTicket& ticket) {
  {
    std::lock_guard<std::mutex> lock(ticket.state->mu);
    ticket.state->copied = true;
  }
  ticket.state->cv.notify_all();
}

bool TieredAllocator::CompleteMove(const MoveTicket& ticket) {
  AllocatorCore& core = *core_;
  MoveState& st = *ticket.state;
  st.WaitCopied();
  c10::intrusive_ptr<c10::StorageImpl> storage;  // declared before the lock: dropped after it
  void* old_ptr = nullptr;
  Tier old_tier;
  size_t bytes;
  {
    std::lock_guard<std::mutex> lock(core.mu);
    {
      std::lock_guard<std::mutex> ml(st.mu);
      if (st.cancelled) return false;  // Release freed both buffers
    }
    AllocationRecord* r = st.record;
    storage = r->storage.lock();
    r->move.reset();
    if (!storage || storage->data_ptr().get() != r->ptr) {
      core.tier(st.to).Free(st.dst, st.bytes);
      return false;
    }
    {
      Registry& reg = Reg();
      std::lock_guard<std::mutex> rl(reg.mu);
      reg.map.erase(r->ptr);
      reg.map[st.dst] = r;
    }
    c10::DataPtr old =
        storage->set_data_ptr(c10::DataPtr(st.dst, st.dst, &DeleteRecord, c10::Device(c10::DeviceType::CPU)));
    old.release_context();  // the record lives on with the new buffer
    old_ptr = r->ptr;
    old_tier = r->tier;
    bytes = r->bytes;
    r->ptr = st.dst;
    r->tier = st.to;
  }
  core.tier(old_tier).Free(old_ptr, bytes);
  return true;
}

}  // namespace tensortier
