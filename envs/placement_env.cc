#include "envs/placement_env.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "common/hash.h"

namespace tensortier {
namespace {

uint64_t BytesTouched(const Workload& w, size_t k) {
  uint64_t sum = 0;
  for (uint32_t i : w.accesses_of_kernel(k)) sum += w.tensors[w.accesses[i].tensor].size_bytes;
  return sum;
}

constexpr float kNewTensor = 0.5f;

// slot_word_: the tensor in the low bits (Workload::Finalize caps tensors
// at 2^26) and whether it gets a decision even when it idles in the slow tier.
constexpr uint32_t kSlotTensor = (1u << 26) - 1;
constexpr uint32_t kSlotRelevant = 1u << 31;
// A slot of a kernel that is no bottleneck (DecisionScope::kAccessGaps): asked
// only while its tensor is not in DRAM (where a new one starts; whether a
// slow-tier one is fetched).
constexpr uint32_t kSlotOpen = 1u << 30;

// state_ values: a tier (as Tier) or not placed yet.
constexpr uint8_t kInDram = static_cast<uint8_t>(Tier::kDram);
constexpr uint8_t kInSlow = static_cast<uint8_t>(Tier::kSlow);
constexpr uint8_t kNotPlaced = 2;

}  // namespace

// Range maxima of live bytes / L_D over kernels (a sparse table): the most
// DRAM pressure a tensor meets while it waits for its next access.
class PlacementEnv::LivePeaks {
 public:
  LivePeaks(const std::vector<uint64_t>& live_bytes, uint64_t limit_bytes) {
    const size_t K = live_bytes.size();
    levels_.emplace_back(K);
    for (size_t k = 0; k < K; ++k)
      levels_[0][k] = static_cast<float>(static_cast<double>(live_bytes[k]) / static_cast<double>(limit_bytes));
    for (size_t span = 2; span <= K; span *= 2) {
      const std::vector<float>& prev = levels_.back();
      std::vector<float> next(K - span + 1);
      for (size_t k = 0; k + span <= K; ++k) next[k] = std::max(prev[k], prev[k + span / 2]);
      levels_.push_back(std::move(next));
    }
  }
  // Over kernels [begin, end); 0 when empty.
  double Max(size_t begin, size_t end) const {
    if (begin >= end) return 0.0;
    size_t level = 0;
    while ((size_t{2} << level) <= end - begin) ++level;
    const size_t span = size_t{1} << level;
    return std::max(levels_[level][begin], levels_[level][end - span]);
  }

 private:
  std::vector<std::vector<float>> levels_;
};

// A segment tree whose nodes keep the max of their range and an addition
// pending for the whole range (so a range add is O(log K) without pushing down).
void PlacementEnv::HeldBytes::Reset(size_t kernels) {
  n_ = kernels;
  max_.assign(4 * std::max<size_t>(kernels, 1), 0.0);
  pending_.assign(max_.size(), 0.0);
}

void PlacementEnv::HeldBytes::Add(size_t begin, size_t end, double bytes) {
  end = std::min(end, n_);
  if (begin < end) Add(1, 0, n_, begin, end, bytes);
}

void PlacementEnv::HeldBytes::Add(size_t node, size_t lo, size_t hi, size_t begin, size_t end, double bytes) {
  if (end <= lo || hi <= begin) return;
  if (begin <= lo && hi <= end) {
    max_[node] += bytes;
    pending_[node] += bytes;
    return;
  }
  const size_t mid = (lo + hi) / 2;
  Add(2 * node, lo, mid, begin, end, bytes);
  Add(2 * node + 1, mid, hi, begin, end, bytes);
  max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + pending_[node];
}

double PlacementEnv::HeldBytes::Max(size_t begin, size_t end) const {
  end = std::min(end, n_);
  return begin < end ? Max(1, 0, n_, begin, end) : 0.0;
}

double PlacementEnv::HeldBytes::Max(size_t node, size_t lo, size_t hi, size_t begin, size_t end) const {
  if (end <= lo || hi <= begin) return 0.0;
  if (begin <= lo && hi <= end) return max_[node];
  const size_t mid = (lo + hi) / 2;
  return std::max(Max(2 * node, lo, mid, begin, end), Max(2 * node + 1, mid, hi, begin, end)) + pending_[node];
}

std::string DecisionScopeName(DecisionScope scope) {
  switch (scope) {
    case DecisionScope::kAllLive: return "all-live";
    case DecisionScope::kRelevant: return "relevant";
    case DecisionScope::kAccessGaps: return "access-gaps";
  }
  return "unknown";
}

DecisionScope ParseDecisionScope(const std::string& name) {
  for (DecisionScope s : {DecisionScope::kAccessGaps, DecisionScope::kRelevant, DecisionScope::kAllLive})
    if (name == DecisionScopeName(s)) return s;
  throw std::invalid_argument("unknown decision scope '" + name + "' (access-gaps, relevant or all-live)");
}

PlacementEnv::PlacementEnv(const Workload& w, EnvConfig config) : w_(w), config_(config) {
  if (!w.finalized()) throw std::invalid_argument("PlacementEnv: workload not finalized");
  if (config_.dram_limit_bytes == 0) throw std::invalid_argument("PlacementEnv: DRAM limit must be positive");
  if (config_.scope != DecisionScope::kAllLive && config_.scope != DecisionScope::kRelevant &&
      config_.scope != DecisionScope::kAccessGaps)
    throw std::invalid_argument("PlacementEnv: unknown decision scope");
  if (!(config_.beta >= 0 && config_.beta <= 1)) throw std::invalid_argument("PlacementEnv: beta must be in [0, 1]");
  const size_t K = w.num_kernels(), T = w.num_tensors();
  limit_bytes_ = PlannableDramBytes(w, config_.dram_limit_bytes);
  const double limit = static_cast<double>(limit_bytes_);
  signature_ = w.Signature();
  min_cost_ns_ = MinCostNs(w);
  max_cost_ns_ = MaxCostNs(w);
  const double span = max_cost_ns_ - min_cost_ns_;
  // The performance part of eq. 13, beta R_fix (1 - C_normal), paid out
  // step by step as time is saved: see StepRewardKind::kTimeSaved.
  time_scale_ = span > 0 ? config_.beta * config_.reward_fix / span : 0.0;

  kernel_ns_.resize(K);
  position_.resize(K);
  touched_bytes_.resize(K);
  for (size_t k = 0; k < K; ++k) {
    kernel_ns_[k] = std::max(w.kernels[k].dram_time_ns, 1.0);
    position_[k] = static_cast<float>(static_cast<double>(k) / static_cast<double>(K));
    touched_bytes_[k] = BytesTouched(w, k);
  }
  size_.resize(T);
  size_of_limit_.resize(T);
  copy_ns_.resize(2 * T);
  use_begin_.assign(T + 1, 0);
  // Pinned tensors are in DRAM throughout and the limit the MDP plans
  // under is already less their bytes (PlannableDramBytes): they take no
  // room here. Counted in both, they made the MDP clip DRAM requests that
  // fit (one of U-Net-like's, so its demonstration of AutoTM's plan lost 1%).
  plannable_live_bytes_ = PlannableLiveBytes(w);
  for (uint32_t t = 0; t < T; ++t) {
    size_[t] = w.tensors[t].pinned_dram ? 0 : w.tensors[t].size_bytes;
    size_of_limit_[t] = static_cast<float>(std::min(1.0, static_cast<double>(size_[t]) / limit));
    copy_ns_[2 * t + kInDram] = CopyTimeNs(w, size_[t], Tier::kDram);
    copy_ns_[2 * t + kInSlow] = CopyTimeNs(w, size_[t], Tier::kSlow);
    use_begin_[t + 1] = use_begin_[t] + static_cast<uint32_t>(w.kernels_of_tensor(t).size());
  }
  free_end_.resize(T);
  for (uint32_t t = 0; t < T; ++t) free_end_[t] = std::min<uint32_t>(w.tensors[t].free_kernel + 1, static_cast<uint32_t>(K));
  uses_.resize(w.accesses.size());
  std::vector<uint32_t> cursor(use_begin_.begin(), use_begin_.end() - 1);
  for (const Access& a : w.accesses) {  // by kernel, so each tensor's in kernel order
    Use& u = uses_[cursor[a.tensor]++];
    u.kernel = a.kernel;
    u.writes = a.writes > 0;
    u.penalty_share = static_cast<float>(std::min(1.0, a.slow_penalty_ns / kernel_ns_[a.kernel]));
    u.penalty_ns = a.slow_penalty_ns;
  }

  bottleneck_.resize(K);
  for (size_t k = 0; k < K; ++k) bottleneck_[k] = plannable_live_bytes_[k] > limit_bytes_;
  live_peaks_ = std::make_shared<const LivePeaks>(plannable_live_bytes_, limit_bytes_);
  const double log_kernels = std::log1p(static_cast<double>(K));
  gap_length_of_.resize(K + 1);
  for (size_t n = 0; n <= K; ++n)
    gap_length_of_[n] = static_cast<float>(std::log1p(static_cast<double>(n)) / log_kernels);
  BuildDecisionSlots();
}

// The slots depend on the workload and the limit alone, so building them
// again after ReleaseDecisionSlots gives the same ones.
void PlacementEnv::BuildDecisionSlots() {
  const Workload& w = w_;
  const size_t K = w.num_kernels();
  slot_begin_.assign(K + 1, 0);
  size_t slots = 0;
  for (size_t k = 0; k < K; ++k)
    if (bottleneck_[k] || config_.scope == DecisionScope::kAccessGaps) slots += w.live_at(k).size();
  // Bottleneck kernels before each kernel: a tensor whose life holds none
  // fits wherever it is live and needs no decision.
  std::vector<uint32_t> bottlenecks_before(K + 1, 0);
  for (size_t k = 0; k < K; ++k) bottlenecks_before[k + 1] = bottlenecks_before[k] + bottleneck_[k];
  auto meets_a_bottleneck = [&](uint32_t t) {
    return bottlenecks_before[free_end_[t]] > bottlenecks_before[w.tensors[t].alloc_kernel];
  };
  slot_word_.reserve(slots);
  slot_heat_.reserve(slots);
  // Each tensor's first use at or after k, as k goes up.
  std::vector<uint32_t> cursor(use_begin_.begin(), use_begin_.end() - 1);
  std::vector<uint32_t> order;
  HeatWeights weights;  // carried from kernel to kernel, as ComputeAllHeats does
  for (size_t k = 0; k < K; ++k) {
    slot_begin_[k] = static_cast<uint32_t>(slot_word_.size());
    KernelHeats heats = AdjustHeats(w, k, limit_bytes_, weights);
    weights = heats.weights;
    const bool open = !bottleneck_[k];
    if (open && config_.scope != DecisionScope::kAccessGaps) continue;
    const auto& live = w.live_at(k);
    // Hottest first, so that D_left tells the agent what the hot tensors left.
    const auto& heat = heats.heat;
    order.resize(live.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return heat[a] > heat[b]; });
    for (uint32_t i : order) {
      const uint32_t t = live[i];
      if (w.tensors[t].pinned_dram) continue;  // in DRAM throughout (KeepPinnedInDram): no decision
      uint32_t& u = cursor[t];
      while (u < use_begin_[t + 1] && uses_[u].kernel < k) ++u;
      const bool now = u < use_begin_[t + 1] && uses_[u].kernel == k;
      const uint32_t after = now ? u + 1 : u;
      const bool next = after < use_begin_[t + 1] && uses_[after].kernel == k + 1;
      uint32_t word = t;
      const bool touched = now || (config_.mode == MigrationMode::kAsync && next);
      if (open) {
        // Everything fits here: only a tensor the kernel (or, with async
        // copies, the next) touches and that is not in DRAM has a choice: a
        // new one where to start (the slow tier saves a later eviction), a
        // slow-tier one whether to be fetched.
        if ((!touched && w.tensors[t].alloc_kernel != k) || !meets_a_bottleneck(t)) continue;
        word |= kSlotRelevant | kSlotOpen;
      } else if (config_.scope == DecisionScope::kAllLive || touched) {
        word |= kSlotRelevant;
      }
      slot_word_.push_back(word);
      slot_heat_.push_back(static_cast<float>(std::tanh(heat[i])));
    }
  }
  slot_begin_[K] = static_cast<uint32_t>(slot_word_.size());
  max_steps_ = slot_begin_[K];
  // The reserve counted every live tensor of the kAccessGaps scope's open
  // kernels; most get no slot.
  slot_word_.shrink_to_fit();
  slot_heat_.shrink_to_fit();
}

void PlacementEnv::ReleaseDecisionSlots() {
  if (!done_) throw std::logic_error("PlacementEnv::ReleaseDecisionSlots: an episode is in progress");
  std::vector<uint32_t>().swap(slot_begin_);
  std::vector<uint32_t>().swap(slot_word_);
  std::vector<float>().swap(slot_heat_);
  std::vector<uint32_t>().swap(use_cursor_);
  // The per-episode state is rebuilt by Reset and Resume.
  std::vector<uint8_t>().swap(state_);
  std::vector<uint32_t>().swap(gap_decided_);
  std::vector<uint32_t>().swap(gap_held_through_);
  held_ = HeldBytes();
  std::vector<uint32_t>().swap(order_);
  std::vector<Observation>().swap(order_observations_);
  std::vector<float>().swap(order_priority_);
}

uint64_t PlacementEnv::decision_slot_bytes() const {
  return slot_begin_.capacity() * sizeof(uint32_t) + slot_word_.capacity() * sizeof(uint32_t) +
         slot_heat_.capacity() * sizeof(float);
}

Observation PlacementEnv::Reset() {
  if (!decision_slots_built()) BuildDecisionSlots();
  const size_t T = w_.num_tensors();
  state_.assign(T, kNotPlaced);
  use_cursor_.assign(use_begin_.begin(), use_begin_.end() - 1);  // kernel 0: every tensor's first use
  gap_decided_.assign(config_.scope == DecisionScope::kAccessGaps ? T : 0, 0);
  gap_held_through_.assign(gap_decided_.size(), 0);
  if (!gap_decided_.empty()) held_.Reset(w_.num_kernels());
  FreshSummary();
  kernel_ = 0;
  slot_ = slot_end_ = 0;
  order_.clear();
  resident_live_bytes_ = 0;
  in_kernel_ = false;
  kernel_steps_ = 0;
  fingerprint_ = 0;  // no tensor placed, no gap decided
  done_ = false;
  AdvanceToDecision();
  return done_ ? Observation{} : MakeObservation();
}

// A fresh summary with an empty plan that keeps the last episode's buffers.
void PlacementEnv::FreshSummary() {
  const size_t T = w_.num_tensors();
  PlacementPlan plan = std::move(summary_.plan);
  std::vector<double> kernel_ns = std::move(summary_.cost.kernel_ns);
  summary_ = EpisodeSummary{};
  plan.workload_signature = signature_;
  plan.dram_limit_bytes = config_.dram_limit_bytes;
  plan.initial_tiers.assign(T, Tier::kDram);
  plan.migrations.clear();
  plan.mode = config_.mode;
  plan.produced_by = "placement-env";
  summary_.plan = std::move(plan);
  kernel_ns.clear();
  summary_.cost.kernel_ns = std::move(kernel_ns);
}

// Places the tensors of kernels that need no decision, skips tensors that
// need none, and stops at the next decision (or finishes the episode).
void PlacementEnv::AdvanceToDecision() {
  while (kernel_ < w_.num_kernels()) {
    if (!in_kernel_) {
      const uint32_t begin = slot_begin_[kernel_], end = slot_begin_[kernel_ + 1];
      if (!bottleneck_[kernel_]) {
        // Everything live fits: decisions only for the new tensors and the
        // slow-tier ones the kernel touches (kAccessGaps; otherwise new
        // tensors start in DRAM).
        uint64_t asked_bytes = 0;
        for (uint32_t s = begin; s < end; ++s)
          if (!Skipped(s)) asked_bytes += size_[slot_word_[s] & kSlotTensor];
        if (asked_bytes == 0) {
          for (uint32_t t : w_.allocated_at(kernel_)) {
            ToggleFingerprint(t);
            state_[t] = kInDram;
            ToggleFingerprint(t);
            resident_live_bytes_ += size_[t];
          }
          LeaveKernel();
          continue;
        }
        in_kernel_ = true;
        kernel_steps_ = 0;
        slot_ = kernel_slot_begin_ = begin;
        slot_end_ = end;
        dram_committed_ = resident_live_bytes_;  // what stays in DRAM; the rest fits beside it
        undecided_bytes_ = asked_bytes;
        resident_undecided_bytes_ = 0;
        kernel_migrations_ = summary_.plan.migrations.size();
        OrderKernelDecisions();
        continue;
      }
      in_kernel_ = true;
      kernel_steps_ = 0;
      slot_ = kernel_slot_begin_ = begin;
      slot_end_ = end;
      dram_committed_ = 0;
      undecided_bytes_ = plannable_live_bytes_[kernel_];
      resident_undecided_bytes_ = resident_live_bytes_;
      kernel_migrations_ = summary_.plan.migrations.size();
      // Tensors held in DRAM through a decided gap hold their room before
      // any decision of this kernel, so no DRAM request can take it.
      // (Summed in a local: the members, updated per slot, kept the loop
      // waiting on its own stores, a quarter of a search's time.)
      if (!gap_decided_.empty()) {
        uint64_t held_bytes = 0;
        for (uint32_t s = static_cast<uint32_t>(slot_); s < slot_end_; ++s)
          if (HeldThroughGap(s)) held_bytes += size_[slot_word_[s] & kSlotTensor];
        dram_committed_ += held_bytes;
        undecided_bytes_ -= held_bytes;
        resident_undecided_bytes_ -= held_bytes;
      }
      OrderKernelDecisions();
    }
    // In locals, written back once (as above).
    size_t slot = slot_;
    uint64_t skipped_slow_bytes = 0;
    for (; slot < slot_end_; ++slot) {
      const uint32_t s = order_.empty() ? static_cast<uint32_t>(slot) : order_[slot - kernel_slot_begin_];
      if (!Skipped(s)) break;
      if (state_[slot_word_[s] & kSlotTensor] == kInSlow) skipped_slow_bytes += size_[slot_word_[s] & kSlotTensor];
    }
    slot_ = slot;
    undecided_bytes_ -= skipped_slow_bytes;
    if (slot_ < slot_end_) return;
    SortKernelMigrations();
    in_kernel_ = false;
    LeaveKernel();
  }
  FinishEpisode(false);
}

// resident_live_bytes_ counts only live tensors: drop those that die here.
void PlacementEnv::LeaveKernel() {
  for (uint32_t t : w_.freed_at(kernel_)) {
    if (state_[t] == kInDram) resident_live_bytes_ -= size_[t];
    ToggleFingerprint(t);  // a dead tensor's tiers decide nothing more
  }
  ++kernel_;
}

// The plan's migrations go in (after_kernel, tensor) order; one kernel's
// come in decision order, at most one per tensor, so sorting each kernel's
// leaves nothing for PlacementPlan::Normalize to do.
void PlacementEnv::SortKernelMigrations() {
  auto& m = summary_.plan.migrations;
  std::sort(m.begin() + static_cast<std::ptrdiff_t>(kernel_migrations_), m.end(),
            [](const Migration& a, const Migration& b) { return a.tensor < b.tensor; });
}

uint32_t PlacementEnv::CurrentTensor() const { return slot_word_[Slot()] & kSlotTensor; }

uint32_t PlacementEnv::UseAtOrAfterKernel(uint32_t t) const {
  uint32_t u = use_cursor_[t];
  const uint32_t end = use_begin_[t + 1];
  if (u == kUseUnknown) {  // resumed: search once, then step as kernel_ grows
    u = static_cast<uint32_t>(std::partition_point(uses_.begin() + use_begin_[t], uses_.begin() + end,
                                                   [&](const Use& x) { return x.kernel < kernel_; }) -
                              uses_.begin());
    use_cursor_[t] = u;
  }
  if (u < end && uses_[u].kernel < kernel_) {  // written back only when it moves
    do ++u;
    while (u < end && uses_[u].kernel < kernel_);
    use_cursor_[t] = u;
  }
  return u;
}

void PlacementEnv::SetGapDecided(uint32_t t, uint32_t value) {
  gap_decided_[t] = value;
  const uint32_t g = value - 1;  // the access that ends the gap
  gap_held_through_[t] = value == 0 ? 0 : g >= use_begin_[t + 1] ? std::numeric_limits<uint32_t>::max() : uses_[g].kernel + 1;
}

bool PlacementEnv::HeldThroughGap(uint32_t slot) const {
  const uint32_t word = slot_word_[slot];
  const uint32_t t = word & kSlotTensor;
  // The decided gap ends at an access (or at t's end), after the use its
  // decision followed, so kernel_ is in it while that access is not behind it.
  // Read without the use cursor, as every slot of every kernel asks.
  if (gap_decided_.empty() || (word & kSlotRelevant) || state_[t] != kInDram) return false;
  return gap_held_through_[t] > kernel_;
}

bool PlacementEnv::Skipped(uint32_t slot) const {
  const uint32_t word = slot_word_[slot];
  if (word & kSlotOpen) return state_[word & kSlotTensor] == kInDram;
  if (word & kSlotRelevant) return false;
  return state_[word & kSlotTensor] == kInSlow || HeldThroughGap(slot);
}

size_t PlacementEnv::GapEnd(uint32_t slot) const {
  const uint32_t t = slot_word_[slot] & kSlotTensor;
  uint32_t u = UseAtOrAfterKernel(t);
  const uint32_t end = use_begin_[t + 1];
  if (u < end && uses_[u].kernel == kernel_) ++u;
  return u < end ? uses_[u].kernel : free_end_[t];
}

size_t PlacementEnv::decision_holds_until() const {
  if (done_) return kernel_;
  const uint32_t slot = Slot();
  const uint32_t word = slot_word_[slot];
  const uint32_t t = word & kSlotTensor;
  if (gap_decided_.empty() || (word & kSlotRelevant) || state_[t] != kInDram) return kernel_ + 1;
  const uint32_t u = UseAtOrAfterKernel(t);
  if (u >= use_begin_[t + 1]) return free_end_[t];
  // With async copies the kernel before the access decides again (a
  // prefetch, or an eviction there) when it is a bottleneck.
  const size_t next = uses_[u].kernel;
  return config_.mode == MigrationMode::kAsync && bottleneck_[next - 1] ? next - 1 : next;
}

// Decisions that AdvanceToDecision would skip (Skipped) keep the lowest
// priority: they are never asked.
void PlacementEnv::OrderKernelDecisions() {
  order_.clear();
  if (!priority_) return;
  const uint32_t begin = slot_begin_[kernel_], end = slot_begin_[kernel_ + 1];
  order_observations_.clear();
  std::vector<uint32_t> asked;
  asked.reserve(end - begin);
  for (uint32_t s = begin; s < end; ++s) {
    if (Skipped(s)) continue;
    asked.push_back(s);
    order_observations_.push_back(ObservationOf(s));
  }
  order_priority_.assign(asked.size(), 0.0f);
  priority_(order_observations_, order_priority_);
  if (order_priority_.size() != asked.size())
    throw std::logic_error("PlacementEnv: the decision priority must give one value per decision");
  std::vector<uint32_t> rank(asked.size());
  std::iota(rank.begin(), rank.end(), 0u);
  std::stable_sort(rank.begin(), rank.end(), [&](uint32_t a, uint32_t b) {
    // NaN sorts last instead of breaking the ordering.
    const float pa = order_priority_[a], pb = order_priority_[b];
    if (std::isnan(pb)) return !std::isnan(pa);
    return pa > pb;
  });
  order_.reserve(end - begin);
  for (uint32_t i : rank) order_.push_back(asked[i]);
  for (uint32_t s = begin; s < end; ++s)
    if (Skipped(s)) order_.push_back(s);
}

Observation PlacementEnv::ObservationOf(uint32_t slot) const {
  Observation o{};
  const size_t k = kernel_;
  const uint32_t t = slot_word_[slot] & kSlotTensor;
  const double size = static_cast<double>(size_[t]);
  const double limit = static_cast<double>(limit_bytes_);
  const double kernel_ns = kernel_ns_[k];
  const uint32_t end = use_begin_[t + 1];
  uint32_t u = UseAtOrAfterKernel(t);
  const bool now = u < end && uses_[u].kernel == k;

  switch (state_[t]) {
    case kInDram:
      o[kObsTier] = 0.0f;
      o[kObsCopyCost] = static_cast<float>(std::min(1.0, copy_ns_[2 * t + kInSlow] / kernel_ns));
      break;
    case kInSlow:
      o[kObsTier] = 1.0f;
      o[kObsCopyCost] = static_cast<float>(std::min(1.0, copy_ns_[2 * t + kInDram] / kernel_ns));
      break;
    default:
      o[kObsTier] = kNewTensor;
  }
  o[kObsHeat] = slot_heat_[slot];
  o[kObsDramLeft] = static_cast<float>((limit - static_cast<double>(dram_committed_)) / limit);
  o[kObsSlowLeft] = 1.0f;
  if (w_.device.slow_capacity_bytes > 0)
    o[kObsSlowLeft] = static_cast<float>(1.0 - static_cast<double>(plannable_live_bytes_[k] - dram_committed_) /
                                                   static_cast<double>(w_.device.slow_capacity_bytes));
  o[kObsSizeShare] = static_cast<float>(size / static_cast<double>(std::max<uint64_t>(plannable_live_bytes_[k], 1)));
  if (now) {
    o[kObsAccessedNow] = 1.0f;
    o[kObsInputShare] = static_cast<float>(size / static_cast<double>(touched_bytes_[k]));
    o[kObsPenaltyShare] = uses_[u].penalty_share;
    ++u;
  }
  if (u < end) {
    o[kObsNextUse] =
        static_cast<float>(static_cast<double>(uses_[u].kernel - k) / static_cast<double>(w_.num_kernels()));
    o[kObsNextUsePenalty] = uses_[u].penalty_share;
  } else {
    o[kObsNextUse] = 1.0f;
  }
  o[kObsPosition] = position_[k];
  o[kObsPendingBytes] = static_cast<float>(std::min(4.0, static_cast<double>(undecided_bytes_) / limit) / 4.0);
  o[kObsSizeOfLimit] = size_of_limit_[t];
  o[kObsResidentPending] =
      static_cast<float>(std::min(1.0, static_cast<double>(resident_undecided_bytes_) / limit));
  // The gap until the next use (u, after the access at k), to the end of
  // the iteration after the last.
  const size_t gap_end = u < end ? uses_[u].kernel : w_.num_kernels();
  o[kObsGapPeak] = static_cast<float>(std::min(4.0, live_peaks_->Max(k + 1, gap_end)) / 4.0);
  o[kObsGapLength] = gap_length_of_[gap_end - k];
  if (!gap_decided_.empty())
    o[kObsGapHeld] = static_cast<float>(std::min(1.0, held_.Max(k + 1, GapEnd(slot)) / limit));
  o[kObsStartTier] = kNewTensor;  // u >= end: no access left
  if (w_.tensors[t].persistent && state_[t] != kNotPlaced && u >= end)
    o[kObsStartTier] = summary_.plan.initial_tiers[t] == Tier::kDram ? 0.0f : 1.0f;
  return o;
}

double PriceScore(const Workload& w, uint64_t dram_peak_bytes) {
  const double peak = static_cast<double>(w.peak_live_bytes());
  return peak > 0 ? std::clamp(1.0 - static_cast<double>(dram_peak_bytes) / peak, 0.0, 1.0) : 0.0;
}

bool FasterEpisode(const EpisodeSummary& a, const EpisodeSummary& b) {
  if (a.oom != b.oom) return !a.oom;
  return a.cost.total_ns < b.cost.total_ns * (1 - 1e-12);
}

// With async copies every tensor now in DRAM and not decided yet at this
// kernel holds DRAM during it whatever its decision (kept, or its eviction in
// flight): a DRAM request must leave room for them, or a later decision of
// this kernel runs out of memory although it asks for nothing (docs/mdp.md).
// Counting the ones kernel k writes (their eviction is synchronous) is
// conservative.
uint64_t PlacementEnv::DramNeededBytes(uint32_t t) const {
  uint64_t needed = size_[t];
  if (config_.mode == MigrationMode::kAsync)
    needed += resident_undecided_bytes_ - (state_[t] == kInDram ? size_[t] : 0);
  return needed;
}

bool PlacementEnv::DramRequestDoesNotFit(uint32_t t) const { return DramNeededBytes(t) > limit_bytes_ - dram_committed_; }

uint64_t PlacementEnv::DramShortfallBytes() const {
  if (done_) return 0;
  const uint64_t needed = DramNeededBytes(CurrentTensor());
  const uint64_t left = limit_bytes_ - dram_committed_;
  return needed > left ? needed - left : 0;
}

bool PlacementEnv::DramRequestWouldSpill() const {
  // Step's test for clipping a DRAM request, on the same state.
  return !done_ && config_.oom_handling == OomHandling::kSpillToSlow && DramRequestDoesNotFit(CurrentTensor());
}

StepResult PlacementEnv::Step(int action) {
  if (done_) throw std::logic_error("PlacementEnv::Step after the episode ended");
  if (action != 0 && action != 1) throw std::invalid_argument("PlacementEnv::Step: action must be 0 or 1");
  const Tier requested = static_cast<Tier>(action);
  const size_t k = kernel_;
  const uint32_t t = CurrentTensor();
  const uint32_t u = UseAtOrAfterKernel(t);
  const Use* use = u < use_begin_[t + 1] && uses_[u].kernel == k ? &uses_[u] : nullptr;  // k's access to t
  const bool writes = use && use->writes;
  const uint64_t size = size_[t];
  const uint8_t state = state_[t];
  const bool async = config_.mode == MigrationMode::kAsync;
  const double kernel_ns = kernel_ns_[k];

  StepResult result;
  double reward = 0;
  Tier chosen = requested;
  if (async && state != kNotPlaced && !writes && k + 1 >= free_end_[t] && !w_.tensors[t].persistent) {
    // An async copy issued now overlaps kernel k, which still uses the
    // source copy, and would put t in its new tier only after k, where it is
    // dead: the move buys nothing, and the executor cannot finish the copy of
    // a storage freed under it (it counts the migration skipped). t stays
    // where it is. (A persistent tensor's move here still spares its copy
    // back at the iteration's end; one that k writes is copied synchronously.)
    chosen = static_cast<Tier>(state);
  } else if (chosen == Tier::kDram && config_.oom_handling == OomHandling::kSpillToSlow &&
             DramRequestDoesNotFit(t)) {
    chosen = Tier::kSlow;
    reward -= config_.spill_penalty;
    ++summary_.spills;
  }
  const uint8_t chosen_state = static_cast<uint8_t>(chosen);
  ToggleFingerprint(t);  // out with t's old state; in again below
  // An untouched DRAM resident's keep-or-evict holds until its next access.
  if (!gap_decided_.empty() && !use && state == kInDram && !(slot_word_[Slot()] & kSlotRelevant)) {
    if (chosen == Tier::kDram)  // held from the next kernel to the next decision
      held_.Add(k + 1, decision_holds_until(), static_cast<double>(size));
    SetGapDecided(t, u + 1);
  }
  // DRAM that placing t in `chosen` holds during kernel k: its size if it
  // is in DRAM, and also if an async copy of it is in flight (one of the two
  // copies is in DRAM).
  const bool copy_in_flight = state != kNotPlaced && state != chosen_state && async && !writes;
  const uint64_t needed = chosen == Tier::kDram || copy_in_flight ? size : 0;
  if (state == kInDram) {
    resident_undecided_bytes_ -= size;
    resident_live_bytes_ -= size;
  }
  if (chosen == Tier::kDram) resident_live_bytes_ += size;
  Tier effective = chosen;  // the tier kernel k reads t from
  if (state == kNotPlaced) {
    summary_.plan.initial_tiers[t] = chosen;
  } else if (state != chosen_state) {
    summary_.plan.migrations.push_back({static_cast<int32_t>(k) - 1, t, chosen});
    // An async copy overlaps kernel k, which still uses the source copy
    // unless it writes the tensor (then the copy is synchronous).
    bool overlapped = async && !writes;
    if (overlapped) effective = static_cast<Tier>(state);
    const double copy_ns = copy_ns_[2 * t + chosen_state];
    if (config_.step_reward == StepRewardKind::kDeepTm) {
      reward -= std::min(1.0, copy_ns / kernel_ns);  // m_nor
    } else {
      reward -= time_scale_ * (overlapped ? ExposedAsyncCopyNs(w_, copy_ns, kernel_ns) : copy_ns);
    }
  }
  // DRAM held during kernel k: DRAM-placed tensors and, with async copies,
  // every tensor in flight (one of its two copies is in DRAM). An eviction
  // in flight can overflow DRAM even after a spill: that is an OOM.
  state_[t] = chosen_state;
  ToggleFingerprint(t);
  dram_committed_ += needed;
  undecided_bytes_ -= size;
  ++summary_.steps;
  ++kernel_steps_;

  if (dram_committed_ > limit_bytes_) {
    reward -= config_.oom_penalty;
    summary_.step_reward_sum += reward;
    FinishEpisode(true);
    result.reward = reward;
    result.done = true;
    return result;
  }
  if (effective == Tier::kDram && use) {
    if (config_.step_reward == StepRewardKind::kDeepTm)
      reward += static_cast<double>(size) / static_cast<double>(touched_bytes_[k]);  // eq. 8
    else
      reward += time_scale_ * use->penalty_ns;
  }
  summary_.step_reward_sum += reward;

  ++slot_;
  AdvanceToDecision();
  if (done_) {
    reward += terminal_reward_;
    result.done = true;
  } else {
    result.observation = MakeObservation();
  }
  result.reward = reward;
  return result;
}

double EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes, uint64_t peak_live_bytes, double beta,
                      double reward_fix) {
  // eq. 13 with both terms scaled by R_fix (docs/mdp.md): performance
  // 1 - C_normal, and P_normal, the memory price saved against all-DRAM,
  // which with linear prices reduces to the share of the peak kept out of DRAM.
  double c = std::clamp(normalised_cost, 0.0, 2.0);
  double peak = static_cast<double>(peak_live_bytes);
  double price = peak > 0 ? std::clamp(1.0 - static_cast<double>(dram_peak_bytes) / peak, 0.0, 1.0) : 0.0;
  return reward_fix * (beta * (1.0 - c) + (1.0 - beta) * price);
}

double PlacementEnv::EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes) const {
  return tensortier::EpisodicReward(normalised_cost, dram_peak_bytes, w_.peak_live_bytes(), config_.beta,
                                    config_.reward_fix);
}

void PlacementEnv::ToggleFingerprint(uint32_t t) {
  const uint8_t state = state_[t];
  const uint32_t gap = gap_decided_.empty() ? 0 : gap_decided_[t];
  if (state == kNotPlaced && gap == 0) return;  // Reset's fingerprint is 0
  const uint64_t start = state == kNotPlaced ? 2 : static_cast<uint64_t>(summary_.plan.initial_tiers[t]);
  fingerprint_ ^= Fnv1a().Value(t).Value(state).Value(start).Value(gap).digest();
}

PlacementEnv::Checkpoint PlacementEnv::TakeCheckpoint() const {
  if (!at_kernel_start()) throw std::logic_error("PlacementEnv::TakeCheckpoint: not at the start of a kernel");
  Checkpoint c;
  c.kernel = kernel_;
  c.slot = slot_;
  c.slot_end = slot_end_;
  c.kernel_slot_begin = kernel_slot_begin_;
  c.order = order_;
  c.state = state_;
  c.gap_decided = gap_decided_;
  c.held = held_;
  c.dram_committed = dram_committed_;
  c.undecided_bytes = undecided_bytes_;
  c.resident_undecided_bytes = resident_undecided_bytes_;
  c.resident_live_bytes = resident_live_bytes_;
  c.fingerprint = fingerprint_;
  c.signature = signature_;
  c.dram_limit_bytes = config_.dram_limit_bytes;
  c.steps = summary_.steps;
  c.spills = summary_.spills;
  c.step_reward_sum = summary_.step_reward_sum;
  return c;
}

Observation PlacementEnv::Resume(const Checkpoint& c, const PlacementPlan& plan) {
  if (c.signature != signature_ || c.dram_limit_bytes != config_.dram_limit_bytes ||
      c.state.size() != w_.num_tensors() || c.kernel >= w_.num_kernels())
    throw std::invalid_argument("PlacementEnv::Resume: a checkpoint of another environment");
  if (plan.workload_signature != signature_ || plan.initial_tiers.size() != w_.num_tensors())
    throw std::invalid_argument("PlacementEnv::Resume: a plan of another workload");
  if (!decision_slots_built()) BuildDecisionSlots();
  FreshSummary();
  kernel_ = c.kernel;
  slot_ = c.slot;
  slot_end_ = c.slot_end;
  kernel_slot_begin_ = c.kernel_slot_begin;
  order_ = c.order;
  state_ = c.state;
  use_cursor_.assign(w_.num_tensors(), kUseUnknown);
  gap_decided_ = c.gap_decided;
  gap_held_through_.assign(gap_decided_.size(), 0);
  for (uint32_t t = 0; t < gap_decided_.size(); ++t)
    if (gap_decided_[t] != 0) SetGapDecided(t, gap_decided_[t]);
  held_ = c.held;
  dram_committed_ = c.dram_committed;
  undecided_bytes_ = c.undecided_bytes;
  resident_undecided_bytes_ = c.resident_undecided_bytes;
  resident_live_bytes_ = c.resident_live_bytes;
  fingerprint_ = c.fingerprint;
  summary_.steps = c.steps;
  summary_.spills = c.spills;
  summary_.step_reward_sum = c.step_reward_sum;
  // The decisions before c.kernel: the starting tiers of the tensors placed
  // so far (the others are set as they are placed) and the migrations
  // before the kernel's (a decision at kernel k migrates after kernel k - 1).
  summary_.plan.initial_tiers = plan.initial_tiers;
  const int32_t first_of_kernel = static_cast<int32_t>(c.kernel) - 1;
  for (const Migration& m : plan.migrations) {
    if (m.after_kernel >= first_of_kernel) break;  // the plan is sorted by kernel
    summary_.plan.migrations.push_back(m);
  }
  kernel_migrations_ = summary_.plan.migrations.size();
  in_kernel_ = true;
  kernel_steps_ = 0;
  done_ = false;
  return MakeObservation();
}

void PlacementEnv::FinishAs(const EpisodeSummary& other, const EpisodeSummary& other_here) {
  if (!at_kernel_start()) throw std::logic_error("PlacementEnv::FinishAs: not at the start of a kernel");
  if (other.oom) throw std::invalid_argument("PlacementEnv::FinishAs: an episode that ran out of DRAM");
  if (other.plan.initial_tiers.size() != w_.num_tensors())
    throw std::invalid_argument("PlacementEnv::FinishAs: an episode of another workload");
  PlacementPlan& plan = summary_.plan;
  for (uint32_t t = 0; t < w_.num_tensors(); ++t)
    if (state_[t] == kNotPlaced) plan.initial_tiers[t] = other.plan.initial_tiers[t];
  const int32_t first_of_kernel = static_cast<int32_t>(kernel_) - 1;
  for (const Migration& m : other.plan.migrations)
    if (m.after_kernel >= first_of_kernel) plan.migrations.push_back(m);
  summary_.steps += other.steps - other_here.steps;
  summary_.spills += other.spills - other_here.spills;
  summary_.step_reward_sum += other.step_reward_sum - other_here.step_reward_sum;
  kernel_ = w_.num_kernels();
  in_kernel_ = false;
  FinishEpisode(false);
}

void PlacementEnv::FinishEpisode(bool oom) {
  done_ = true;
  PlacementPlan& plan = summary_.plan;
  if (in_kernel_) SortKernelMigrations();
  // Tensors never reached (the episode ended early) go to the slow tier, so
  // the plan is complete and can still be scored.
  if (kernel_ < w_.num_kernels())
    for (uint32_t t = 0; t < w_.num_tensors(); ++t)
      if (state_[t] == kNotPlaced && w_.tensors[t].alloc_kernel >= kernel_) plan.initial_tiers[t] = Tier::kSlow;
  plan.KeepPinnedInDram(w_);
#ifndef NDEBUG
  PlacementPlan normalized = plan;
  normalized.Normalize();
  assert(normalized == plan);
  plan.Validate(w_);
#endif
  summary_.oom = oom;
  // The plan is valid by construction: no need to hash the workload again.
  EvaluateValidPlan(w_, plan, summary_.cost);
  const double span = max_cost_ns_ - min_cost_ns_;  // as NormalisedCost, without re-summing the workload
  summary_.normalised_cost = span <= 0 ? 0 : (summary_.cost.total_ns - min_cost_ns_) / span;
  summary_.price_score = PriceScore(w_, summary_.cost.dram_peak_bytes);
  summary_.episodic_reward = oom ? 0.0 : EpisodicReward(summary_.normalised_cost, summary_.cost.dram_peak_bytes);
  // With time-saved step rewards the performance term has been paid already;
  // only the memory-price term is left for the last step.
  terminal_reward_ = oom || config_.step_reward == StepRewardKind::kDeepTm
                         ? summary_.episodic_reward
                         : config_.reward_fix * (1.0 - config_.beta) * summary_.price_score;
}

double PlacementEnv::RescoreWithRuntime(double runtime_ns, double min_runtime_ns, double max_runtime_ns) {
  if (!done_) throw std::logic_error("RescoreWithRuntime before the episode ended");
  if (summary_.oom) return summary_.episodic_reward;
  double range = max_runtime_ns - min_runtime_ns;
  summary_.normalised_cost = range > 0 ? (runtime_ns - min_runtime_ns) / range : 0.0;
  summary_.episodic_reward = EpisodicReward(summary_.normalised_cost, summary_.cost.dram_peak_bytes);
  return summary_.episodic_reward;
}

}  // namespace tensortier
