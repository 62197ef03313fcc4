#include "allocator/tiered_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <unordered_map>
#include <unordered_set>

#include "common/spin.h"

namespace tensortier {

struct MoveMember {
  AllocationRecord* record = nullptr;  // nullptr once the tensor is freed (then cancelled)
  void* src = nullptr;
  void* dst = nullptr;
  size_t bytes = 0;
  PageRegion* src_region = nullptr;
  PageRegion* dst_region = nullptr;
  bool cancelled = false;
};

struct MoveState {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> copied{false};  // written under mu; read without it while spinning
  static constexpr long kSpinBeforeSleepNs = 200'000;
  std::atomic<bool> claimed{false};  // someone has taken (or waived) the copy
  Tier from = Tier::kDram, to = Tier::kDram;
  BlockClass block_class = BlockClass::kOwn;
  // Guarded by the allocator's lock.
  std::vector<MoveMember> members;
  size_t live_members = 0;
  bool completed = false;

  // The copy is usually about to end (the training thread waits for it at
  // the next kernel boundary): spin a little before sleeping (common/spin.h).
  void WaitCopied() {
    if (SpinUntil([&] { return copied.load(std::memory_order_acquire); }, kSpinBeforeSleepNs)) return;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return copied.load(); });
  }
  void SetCopied() {
    {
      std::lock_guard<std::mutex> lock(mu);
      copied = true;
    }
    cv.notify_all();
  }
};

namespace {
constexpr size_t kSmallRegionChunkBytes = 256 << 10;
constexpr size_t kLongLivedRegionChunkBytes = 8 << 20;
int TierIndex(Tier t) { return t == Tier::kDram ? 0 : 1; }
uint64_t OwnPages(size_t bytes) { return (bytes + PageRegion::kPageBytes - 1) / PageRegion::kPageBytes; }
}  // namespace

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
  TierUsage use[2];
  // Declared after the tiers: destroyed before them.
  std::unique_ptr<PageRegion> regions[2][3];

  MemoryTier& tier(Tier t) { return t == Tier::kDram ? *dram : *slow; }
  bool DramFits(size_t bytes) const { return dram_limit == 0 || use[0].charged_bytes + bytes <= dram_limit; }
  void Release(AllocationRecord* r);

  PageRegion* Region(Tier t, BlockClass cls) {
    if (cls == BlockClass::kOwn) return nullptr;
    std::unique_ptr<PageRegion>& r = regions[TierIndex(t)][static_cast<int>(cls)];
    if (!r)
      r = std::make_unique<PageRegion>(&tier(t), cls == BlockClass::kSmall ? kSmallRegionChunkBytes
                                                                             : kLongLivedRegionChunkBytes);
    return r.get();
  }
  void Charge(Tier t, uint64_t bytes, uint64_t pages) {
    TierUsage& u = use[TierIndex(t)];
    u.charged_bytes += bytes;
    u.pages_in_use += pages;
    u.charged_peak_bytes = std::max(u.charged_peak_bytes, u.charged_bytes);
    u.pages_peak = std::max(u.pages_peak, u.pages_in_use);
  }
  void Uncharge(Tier t, uint64_t bytes, uint64_t pages) {
    TierUsage& u = use[TierIndex(t)];
    u.charged_bytes -= bytes;
    u.pages_in_use -= pages;
  }
  // A block of `bytes` in tier t: in the `cls` region, else (kOwn, or the
  // tier refused a region chunk) its own. nullptr when the tier has no room.
  void* AllocateBlock(Tier t, BlockClass cls, size_t bytes, PageRegion** region) {
    *region = nullptr;
    if (PageRegion* rg = Region(t, cls)) {
      if (void* p = rg->Reserve(bytes)) {
        Charge(t, bytes, rg->Commit(p, bytes));
        *region = rg;
        return p;
      }
      ++c.region_fallbacks;
    }
    void* p = tier(t).Allocate(bytes);
    if (p) Charge(t, bytes, OwnPages(bytes));
    return p;
  }
  void FreeBlock(Tier t, PageRegion* region, void* p, size_t bytes) {
    uint64_t pages;
    if (region) {
      pages = region->Release(p, bytes);
    } else {
      tier(t).Free(p, bytes);
      pages = OwnPages(bytes);
    }
    Uncharge(t, bytes, pages);
  }
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

// Points the storage at `dst` (which holds a copy of the data) and frees the
// record's old block. Under core.mu.
void SwapLocked(AllocatorCore& core, AllocationRecord* r, c10::StorageImpl& storage, void* dst, Tier to,
                PageRegion* region, BlockClass cls) {
  {
    Registry& reg = Reg();
    std::lock_guard<std::mutex> rl(reg.mu);
    reg.map.erase(r->ptr);
    reg.map[dst] = r;
  }
  c10::DataPtr old = storage.set_data_ptr(c10::DataPtr(dst, dst, &DeleteRecord, c10::Device(c10::DeviceType::CPU)));
  old.release_context();  // the record lives on with the new buffer
  core.FreeBlock(r->tier, r->region, r->ptr, r->bytes);
  r->ptr = dst;
  r->tier = to;
  r->region = region;
  r->block_class = region ? cls : BlockClass::kOwn;
}

bool Adjacent(const AllocationRecord* a, const AllocationRecord* b) {
  return a->region != nullptr && a->region == b->region &&
         static_cast<const char*>(a->ptr) + PageRegion::Footprint(a->bytes) == static_cast<const char*>(b->ptr);
}

}  // namespace

void AllocatorCore::Release(AllocationRecord* r) {
  const uint64_t t0 = NowNs();
  AllocationObserver* obs;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (std::shared_ptr<MoveState> move = std::move(r->move)) {
      // Both blocks stay reserved until CompleteMove: a copy may be reading
      // the source or writing the destination right now.
      for (MoveMember& m : move->members)
        if (m.record == r) {
          m.cancelled = true;
          m.record = nullptr;
        }
      if (--move->live_members == 0 && !move->claimed.exchange(true)) move->SetCopied();  // nobody needs the data
    } else {
      FreeBlock(r->tier, r->region, r->ptr, r->bytes);
    }
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

c10::DataPtr TieredAllocator::allocate(size_t n) { return static_cast<const TieredAllocator&>(*this).allocate(n); }

void TieredAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  if (count != 0) std::memcpy(dest, src, count);
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
  BlockClass cls = BlockClass::kOwn;
  AllocationObserver* obs;
  {
    std::lock_guard<std::mutex> lock(core.mu);
    r->sequence = core.sequence++;
    if (core.in_iteration) {
      const uint64_t i = core.iteration_allocations++;
      if (i < core.routing.tiers.size()) {
        r->tensor_id = static_cast<int64_t>(core.routing.first_tensor_id + i);
        want = core.routing.tiers[i];
        if (!core.routing.classes.empty()) cls = core.routing.classes[i];
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
                                std::to_string(core.use[0].charged_bytes) + " of " + std::to_string(core.dram_limit) +
                                " in use";
        delete r;
        throw DramOomError(msg);
      }
      want = Tier::kSlow;
      ++core.c.spilled_allocations;
      core.c.spilled_bytes += n;
    }
    PageRegion* region = nullptr;
    void* p = core.AllocateBlock(want, cls, n, &region);
    if (p == nullptr && want == Tier::kSlow && core.DramFits(n)) {
      // Slow tier full: the only place left is DRAM, if it fits.
      want = Tier::kDram;
      p = core.AllocateBlock(want, cls, n, &region);
    }
    if (p == nullptr) {
      ++core.c.failed_allocations;
      delete r;
      throw DramOomError("TieredAllocator: no memory for " + std::to_string(n) + " bytes in " +
                         std::string(TierName(want)) + " (" + core.tier(want).backend() + ")");
    }
    r->ptr = p;
    r->tier = want;
    r->region = region;
    r->block_class = region ? cls : BlockClass::kOwn;
    if (region) ++core.c.region_allocations;
    ++core.c.allocations;
    core.live.insert(r);
    obs = core.observer;
  }
  {
    Registry& reg = Reg();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.map[r->ptr] = r;
  }
  if (obs) obs->OnAllocate(*r);
  void* p = r->ptr;
  {
    std::lock_guard<std::mutex> lock(core.mu);
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
  if (!routing.classes.empty() && routing.classes.size() != routing.tiers.size())
    throw std::invalid_argument("IterationRouting: classes and tiers differ in length");
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

TierUsage TieredAllocator::usage(Tier t) const {
  std::lock_guard<std::mutex> lock(core_->mu);
  TierUsage u = core_->use[TierIndex(t)];
  for (const auto& rg : core_->regions[TierIndex(t)])
    if (rg) {
      u.region_reserved_bytes += rg->reserved_bytes();
      u.region_pages_in_use += rg->pages_in_use();
    }
  return u;
}

void TieredAllocator::ResetPeaks() {
  std::lock_guard<std::mutex> lock(core_->mu);
  for (TierUsage& u : core_->use) {
    u.charged_peak_bytes = u.charged_bytes;
    u.pages_peak = u.pages_in_use;
  }
}

uint64_t TieredAllocator::TrimRegions() {
  std::lock_guard<std::mutex> lock(core_->mu);
  uint64_t n = 0;
  for (auto& per_tier : core_->regions)
    for (auto& rg : per_tier)
      if (rg) n += rg->Trim();
  return n;
}

TieredAllocator::MoveStart TieredAllocator::BeginMove(AllocationRecord* r, Tier to, MoveTicket* ticket) {
  return BeginGroupMove({r}, to, ticket);
}

TieredAllocator::MoveStart TieredAllocator::BeginGroupMove(const std::vector<AllocationRecord*>& records, Tier to,
                                                           MoveTicket* ticket) {
  if (records.empty()) return MoveStart::kNoStorage;
  AllocatorCore& core = *core_;
  std::vector<c10::intrusive_ptr<c10::StorageImpl>> storages;  // released after the lock (a release may free a record)
  std::lock_guard<std::mutex> lock(core.mu);
  const AllocationRecord* first = records.front();
  const AllocationRecord* last = records.back();
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    AllocationRecord* r = records[i];
    if (r->move) return MoveStart::kBusy;
    if (r->tier == to) return MoveStart::kSameTier;
    if (i > 0 && (r->tier != first->tier || !Adjacent(records[i - 1], r))) return MoveStart::kNotAdjacent;
    storages.push_back(r->storage.lock());
    if (!storages.back() || storages.back()->data_ptr().get() != r->ptr) return MoveStart::kNoStorage;
    total += r->bytes;
  }
  if (to == Tier::kDram && !core.DramFits(total)) return MoveStart::kOutOfMemory;
  auto state = std::make_shared<MoveState>();
  state->from = first->tier;
  state->to = to;
  state->block_class = first->block_class;
  char* base = nullptr;
  PageRegion* dst_region = core.Region(to, first->block_class);
  if (dst_region) {
    // One range with the same layout as the source: the neighbours stay neighbours.
    const size_t span = static_cast<size_t>(static_cast<const char*>(last->ptr) - static_cast<const char*>(first->ptr)) +
                        PageRegion::Footprint(last->bytes);
    base = static_cast<char*>(dst_region->Reserve(span));
    if (base == nullptr) return MoveStart::kOutOfMemory;
  } else {
    base = static_cast<char*>(core.tier(to).Allocate(first->bytes));
    if (base == nullptr) return MoveStart::kOutOfMemory;
    core.Charge(to, first->bytes, OwnPages(first->bytes));
  }
  for (AllocationRecord* r : records) {
    MoveMember m;
    m.record = r;
    m.src = r->ptr;
    m.dst = base + (static_cast<const char*>(r->ptr) - static_cast<const char*>(first->ptr));
    m.bytes = r->bytes;
    m.src_region = r->region;
    m.dst_region = dst_region;
    if (dst_region) core.Charge(to, r->bytes, dst_region->Commit(m.dst, r->bytes));
    state->members.push_back(m);
    r->move = state;
  }
  state->live_members = records.size();
  ticket->state = state;
  ticket->src = first->ptr;
  ticket->dst = base;
  ticket->bytes = static_cast<size_t>(static_cast<const char*>(last->ptr) - static_cast<const char*>(first->ptr)) +
                  last->bytes;
  ticket->to = to;
  ticket->members = records.size();
  return MoveStart::kStarted;
}

bool TieredAllocator::ClaimCopy(const MoveTicket& ticket) { return !ticket.state->claimed.exchange(true); }

void TieredAllocator::MarkCopied(const MoveTicket& ticket) { ticket.state->SetCopied(); }

size_t TieredAllocator::CompleteMove(const MoveTicket& ticket, std::vector<uint8_t>* moved) {
  AllocatorCore& core = *core_;
  MoveState& st = *ticket.state;
  st.WaitCopied();
  std::vector<c10::intrusive_ptr<c10::StorageImpl>> storages;  // declared before the lock: dropped after it
  size_t n = 0;
  std::lock_guard<std::mutex> lock(core.mu);
  if (moved) moved->assign(st.members.size(), 0);
  if (st.completed) return 0;
  st.completed = true;
  for (size_t i = 0; i < st.members.size(); ++i) {
    MoveMember& m = st.members[i];
    if (m.cancelled) {  // Release left both blocks to us
      core.FreeBlock(st.from, m.src_region, m.src, m.bytes);
      core.FreeBlock(st.to, m.dst_region, m.dst, m.bytes);
      continue;
    }
    AllocationRecord* r = m.record;
    r->move.reset();
    storages.push_back(r->storage.lock());
    c10::StorageImpl* storage = storages.back().get();
    if (storage == nullptr || storage->data_ptr().get() != r->ptr) {
      // The storage is dying: its Release will free the source block.
      core.FreeBlock(st.to, m.dst_region, m.dst, m.bytes);
      continue;
    }
    SwapLocked(core, r, *storage, m.dst, st.to, m.dst_region, st.block_class);
    ++n;
    if (moved) (*moved)[i] = 1;
  }
  return n;
}

TieredAllocator::MoveStart TieredAllocator::Place(AllocationRecord* r, Tier to, BlockClass cls) {
  AllocatorCore& core = *core_;
  c10::intrusive_ptr<c10::StorageImpl> storage;  // released after the lock
  std::lock_guard<std::mutex> lock(core.mu);
  if (r->move) return MoveStart::kBusy;
  if (r->tier == to && r->block_class == cls) return MoveStart::kSameTier;
  storage = r->storage.lock();
  if (!storage || storage->data_ptr().get() != r->ptr) return MoveStart::kNoStorage;
  if (to == Tier::kDram && !core.DramFits(r->bytes)) return MoveStart::kOutOfMemory;
  PageRegion* region = nullptr;
  void* dst = core.AllocateBlock(to, cls, r->bytes, &region);
  if (dst == nullptr) return MoveStart::kOutOfMemory;
  std::memcpy(dst, r->ptr, r->bytes);
  SwapLocked(core, r, *storage, dst, to, region, cls);
  return MoveStart::kStarted;
}

int64_t TieredAllocator::PlaceContiguously(const std::vector<AllocationRecord*>& records, Tier to, BlockClass cls) {
  if (cls == BlockClass::kOwn) throw std::invalid_argument("PlaceContiguously: kOwn blocks have no layout");
  AllocatorCore& core = *core_;
  std::vector<c10::intrusive_ptr<c10::StorageImpl>> storages;  // released after the lock
  std::lock_guard<std::mutex> lock(core.mu);
  if (records.empty()) return 0;
  PageRegion* region = core.Region(to, cls);
  bool in_place = true;
  uint64_t footprint = 0, arriving = 0, largest_staying = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    AllocationRecord* r = records[i];
    if (r->move) return -1;
    in_place = in_place && r->tier == to && r->region == region && (i == 0 || Adjacent(records[i - 1], r));
    storages.push_back(r->storage.lock());
    if (!storages.back() || storages.back()->data_ptr().get() != r->ptr) return -1;
    footprint += PageRegion::Footprint(r->bytes);
    if (r->tier == to) largest_staying = std::max<uint64_t>(largest_staying, r->bytes);
    else arriving += r->bytes;
  }
  if (in_place) return 0;
  // Laid out before (some are in the region already): only the others move,
  // each into the first room of the region that fits it. A tensor that a plan
  // moves out and back within an iteration comes back elsewhere (its room
  // was taken meanwhile), and laying the whole range out again before every
  // iteration copied all of it: 54.7 MB an iteration on AlexNet for one
  // 4 MB gradient. Adjacency only makes copies cheaper; keeping it is not
  // worth that.
  bool laid_out = false;
  for (const AllocationRecord* r : records) laid_out = laid_out || (r->tier == to && r->region == region);
  if (laid_out) {
    if (to == Tier::kDram && !core.DramFits(arriving)) return -1;
    int64_t copied = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      AllocationRecord* r = records[i];
      if (r->tier == to && r->region == region) continue;
      void* dst = region->Reserve(r->bytes);
      if (dst == nullptr) return -1;
      core.Charge(to, r->bytes, region->Commit(dst, r->bytes));
      std::memcpy(dst, r->ptr, r->bytes);
      SwapLocked(core, r, *storages[i], dst, to, region, cls);
      copied += static_cast<int64_t>(r->bytes);
    }
    return copied;
  }
  // Each old block is freed right after its copy: at most one tensor already
  // in `to` is held twice.
  if (to == Tier::kDram && !core.DramFits(arriving + largest_staying)) return -1;
  char* base = static_cast<char*>(region->Reserve(footprint));
  if (base == nullptr) return -1;
  int64_t copied = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    AllocationRecord* r = records[i];
    core.Charge(to, r->bytes, region->Commit(base, r->bytes));
    std::memcpy(base, r->ptr, r->bytes);
    SwapLocked(core, r, *storages[i], base, to, region, cls);
    base += PageRegion::Footprint(r->bytes);
    copied += static_cast<int64_t>(r->bytes);
  }
  return copied;
}

}  // namespace tensortier
