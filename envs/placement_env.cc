#include "envs/placement_env.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tensortier {
namespace {

// The access of tensor t by kernel k, or nullptr.

uint64_t BytesTouched(const Workload& w, size_t k) {
  uint64_t sum = 0;
  for (uint32_t i : w.accesses_of_kernel(k)) sum += w.tensors[w.accesses[i].tensor].size_bytes;
  return sum;
}

constexpr float kNewTensor = 0.5f;

}  // namespace

PlacementEnv::PlacementEnv(const Workload& w, EnvConfig config) : w_(w), config_(config) {
  if (!w.finalized()) throw std::invalid_argument("PlacementEnv: workload not finalized");
  if (config_.dram_limit_bytes == 0) throw std::invalid_argument("PlacementEnv: DRAM limit must be positive");
  if (!(config_.beta >= 0 && config_.beta <= 1)) throw std::invalid_argument("PlacementEnv: beta must be in [0, 1]");
  heats_ = ComputeAllHeats(w, config_.dram_limit_bytes);
  observed_heats_.resize(heats_.size());
  for (size_t k = 0; k < heats_.size(); ++k)
    for (double h : heats_[k]) observed_heats_[k].push_back(static_cast<float>(std::tanh(h)));
  signature_ = w.Signature();
  bottleneck_.resize(w.num_kernels());
  decision_order_.resize(w.num_kernels());
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    bottleneck_[k] = w.live_bytes_at(k) > config_.dram_limit_bytes;
    if (!bottleneck_[k]) continue;
    max_steps_ += static_cast<uint32_t>(w.live_at(k).size());
    // Hottest first, so that D_left tells the agent what the hot tensors left.
    auto& order = decision_order_[k];
    order.resize(w.live_at(k).size());
    std::iota(order.begin(), order.end(), 0u);
    const auto& heat = heats_[k];
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return heat[a] > heat[b]; });
  }
  const double span = MaxCostNs(w) - MinCostNs(w);
  // The performance part of eq. 13, beta R_fix (1 - C_normal), paid out
  // step by step as time is saved: see StepRewardKind::kTimeSaved.
  time_scale_ = span > 0 ? config_.beta * config_.reward_fix / span : 0.0;
  touched_bytes_.resize(w.num_kernels());
  for (size_t k = 0; k < w.num_kernels(); ++k) touched_bytes_[k] = BytesTouched(w, k);
}

Observation PlacementEnv::Reset() {
  const size_t T = w_.num_tensors();
  tier_.assign(T, Tier::kDram);
  placed_.assign(T, false);
  plan_ = PlacementPlan();
  plan_.workload_signature = signature_;
  plan_.dram_limit_bytes = config_.dram_limit_bytes;
  plan_.initial_tiers.assign(T, Tier::kDram);
  plan_.mode = config_.mode;
  plan_.produced_by = "placement-env";
  summary_ = EpisodeSummary{};
  kernel_ = 0;
  cursor_ = 0;
  in_kernel_ = false;
  done_ = false;
  AdvanceToDecision();
  return done_ ? Observation{} : MakeObservation();
}

// Places the tensors of kernels that need no decision, skips tensors that
// need none, and stops at the next decision (or finishes the episode).
void PlacementEnv::AdvanceToDecision() {
  while (kernel_ < w_.num_kernels()) {
    if (!in_kernel_) {
      if (!bottleneck_[kernel_]) {
        for (uint32_t t : w_.allocated_at(kernel_)) placed_[t] = true;  // new tensors start in DRAM
        ++kernel_;
        continue;
      }
      in_kernel_ = true;
      cursor_ = 0;
      dram_committed_ = 0;
      undecided_bytes_ = w_.live_bytes_at(kernel_);
      resident_undecided_bytes_ = 0;
      for (uint32_t t : w_.live_at(kernel_))
        if (placed_[t] && tier_[t] == Tier::kDram) resident_undecided_bytes_ += w_.tensors[t].size_bytes;
    }
    const auto& order = decision_order_[kernel_];
    // Skipped tensors are all in the slow tier: no resident bytes to drop.
    while (cursor_ < order.size() && !NeedsDecision(CurrentTensor())) {
      undecided_bytes_ -= w_.tensors[CurrentTensor()].size_bytes;
      ++cursor_;
    }
    if (cursor_ < order.size()) return;
    in_kernel_ = false;
    ++kernel_;
  }
  FinishEpisode(false);
}

bool PlacementEnv::NeedsDecision(uint32_t t) const {
  if (config_.scope == DecisionScope::kAllLive || !placed_[t] || tier_[t] == Tier::kDram) return true;
  if (w_.FindAccess(kernel_, t)) return true;
  return config_.mode == MigrationMode::kAsync && kernel_ + 1 < w_.num_kernels() &&
         w_.FindAccess(kernel_ + 1, t) != nullptr;
}

// DRAM that placing t in `tier` for the current kernel holds: its size if it
// is in DRAM, and also if an async copy of it is in flight (one of the two
// copies is in DRAM).
uint64_t PlacementEnv::DramNeeded(uint32_t t, Tier tier) const {
  if (tier == Tier::kDram) return w_.tensors[t].size_bytes;
  const bool moves = placed_[t] && tier_[t] != tier;
  if (!moves || config_.mode != MigrationMode::kAsync) return 0;
  const Access* access = w_.FindAccess(kernel_, t);
  return access && access->writes > 0 ? 0 : w_.tensors[t].size_bytes;
}

uint32_t PlacementEnv::CurrentTensor() const {
  return w_.live_at(kernel_)[decision_order_[kernel_][cursor_]];
}

Observation PlacementEnv::MakeObservation() const {
  Observation o{};
  const size_t k = kernel_;
  const uint32_t t = CurrentTensor();
  const Tensor& x = w_.tensors[t];
  const double limit = static_cast<double>(config_.dram_limit_bytes);
  const double kernel_ns = std::max(w_.kernels[k].dram_time_ns, 1.0);
  const Access* access = w_.FindAccess(k, t);

  o[kObsTier] = placed_[t] ? static_cast<float>(tier_[t]) : kNewTensor;
  o[kObsHeat] = observed_heats_[k][decision_order_[k][cursor_]];
  o[kObsDramLeft] = static_cast<float>((limit - static_cast<double>(dram_committed_)) / limit);
  o[kObsSlowLeft] = 1.0f;
  if (w_.device.slow_capacity_bytes > 0)
    o[kObsSlowLeft] = static_cast<float>(1.0 - static_cast<double>(w_.live_bytes_at(k) - dram_committed_) /
                                                   static_cast<double>(w_.device.slow_capacity_bytes));
  o[kObsSizeShare] = static_cast<float>(static_cast<double>(x.size_bytes) / static_cast<double>(w_.live_bytes_at(k)));
  o[kObsAccessedNow] = access ? 1.0f : 0.0f;
  o[kObsInputShare] = access ? static_cast<float>(static_cast<double>(x.size_bytes) /
                                                  static_cast<double>(touched_bytes_[k]))
                             : 0.0f;
  o[kObsPenaltyShare] = access ? static_cast<float>(std::min(1.0, access->slow_penalty_ns / kernel_ns)) : 0.0f;
  const auto& uses = w_.kernels_of_tensor(t);
  auto next = std::upper_bound(uses.begin(), uses.end(), static_cast<uint32_t>(k));
  o[kObsNextUse] = next == uses.end() ? 1.0f
                                      : static_cast<float>(static_cast<double>(*next - k) /
                                                           static_cast<double>(w_.num_kernels()));
  o[kObsPosition] = static_cast<float>(static_cast<double>(k) / static_cast<double>(w_.num_kernels()));
  Tier other = placed_[t] && tier_[t] == Tier::kDram ? Tier::kSlow : Tier::kDram;
  o[kObsCopyCost] = placed_[t] ? static_cast<float>(std::min(1.0, CopyTimeNs(w_, x.size_bytes, other) / kernel_ns))
                               : 0.0f;
  o[kObsPendingBytes] = static_cast<float>(std::min(4.0, static_cast<double>(undecided_bytes_) / limit) / 4.0);
  o[kObsSizeOfLimit] = static_cast<float>(std::min(1.0, static_cast<double>(x.size_bytes) / limit));
  o[kObsResidentPending] =
      static_cast<float>(std::min(1.0, static_cast<double>(resident_undecided_bytes_) / limit));
  if (next != uses.end()) {
    const Access* a = w_.FindAccess(*next, t);
    o[kObsNextUsePenalty] = static_cast<float>(
        std::min(1.0, a->slow_penalty_ns / std::max(w_.kernels[*next].dram_time_ns, 1.0)));
  }
  return o;
}

StepResult PlacementEnv::Step(int action) {
  if (done_) throw std::logic_error("PlacementEnv::Step after the episode ended");
  if (action != 0 && action != 1) throw std::invalid_argument("PlacementEnv::Step: action must be 0 or 1");
  const Tier requested = static_cast<Tier>(action);
  const size_t k = kernel_;
  const uint32_t t = CurrentTensor();
  const Tensor& x = w_.tensors[t];
  const Access* access = w_.FindAccess(k, t);
  const double kernel_ns = std::max(w_.kernels[k].dram_time_ns, 1.0);

  StepResult result;
  double reward = 0;
  Tier chosen = requested;
  if (chosen == Tier::kDram && config_.oom_handling == OomHandling::kSpillToSlow &&
      DramNeeded(t, Tier::kDram) > config_.dram_limit_bytes - dram_committed_) {
    chosen = Tier::kSlow;
    reward -= config_.spill_penalty;
    ++summary_.spills;
  }
  const uint64_t needed = DramNeeded(t, chosen);
  if (placed_[t] && tier_[t] == Tier::kDram) resident_undecided_bytes_ -= x.size_bytes;
  Tier effective = chosen;  // the tier kernel k reads t from
  if (!placed_[t]) {
    plan_.initial_tiers[t] = chosen;
    placed_[t] = true;
  } else if (tier_[t] != chosen) {
    plan_.migrations.push_back({static_cast<int32_t>(k) - 1, t, chosen});
    // An async copy overlaps kernel k, which still uses the source copy
    // unless it writes the tensor (then the copy is synchronous).
    bool overlapped = config_.mode == MigrationMode::kAsync && !(access && access->writes > 0);
    if (overlapped) effective = tier_[t];
    const double copy_ns = CopyTimeNs(w_, x.size_bytes, chosen);
    if (config_.step_reward == StepRewardKind::kDeepTm) {
      reward -= std::min(1.0, copy_ns / kernel_ns);  // m_nor
    } else {
      // An overlapped copy is exposed only beyond the kernel it runs under.
      reward -= time_scale_ * (overlapped ? std::max(0.0, copy_ns - kernel_ns) : copy_ns);
    }
  }
  // DRAM held during kernel k: DRAM-placed tensors and, with async copies,
  // every tensor in flight (one of its two copies is in DRAM). An eviction
  // in flight can overflow DRAM even after a spill: that is an OOM.
  tier_[t] = chosen;
  dram_committed_ += needed;
  undecided_bytes_ -= x.size_bytes;
  ++summary_.steps;

  if (dram_committed_ > config_.dram_limit_bytes) {
    reward -= config_.oom_penalty;
    summary_.step_reward_sum += reward;
    FinishEpisode(true);
    result.reward = reward;
    result.done = true;
    return result;
  }
  if (effective == Tier::kDram && access) {
    if (config_.step_reward == StepRewardKind::kDeepTm)
      reward += static_cast<double>(x.size_bytes) / static_cast<double>(touched_bytes_[k]);  // eq. 8
    else
      reward += time_scale_ * access->slow_penalty_ns;
  }
  summary_.step_reward_sum += reward;

  ++cursor_;
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

double PlacementEnv::EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes) const {
  // eq. 13 with both terms scaled by R_fix (docs/mdp.md): performance
  // 1 - C_normal, and P_normal, the memory price saved against all-DRAM,
  // which with linear prices reduces to the share of the peak kept out of DRAM.
  double c = std::clamp(normalised_cost, 0.0, 2.0);
  double peak = static_cast<double>(w_.peak_live_bytes());
  double price = peak > 0 ? std::clamp(1.0 - static_cast<double>(dram_peak_bytes) / peak, 0.0, 1.0) : 0.0;
  return config_.reward_fix * (config_.beta * (1.0 - c) + (1.0 - config_.beta) * price);
}

void PlacementEnv::FinishEpisode(bool oom) {
  done_ = true;
  // Tensors never reached (the episode ended early) go to the slow tier, so
  // the plan is complete and can still be scored.
  for (uint32_t t = 0; t < w_.num_tensors(); ++t)
    if (!placed_[t] && w_.tensors[t].alloc_kernel >= kernel_) plan_.initial_tiers[t] = Tier::kSlow;
  plan_.Normalize();
  summary_.oom = oom;
  summary_.plan = plan_;
  summary_.cost = EvaluatePlan(w_, plan_);
  summary_.normalised_cost = NormalisedCost(w_, summary_.cost.total_ns);
  double peak = static_cast<double>(w_.peak_live_bytes());
  summary_.price_score =
      peak > 0 ? std::clamp(1.0 - static_cast<double>(summary_.cost.dram_peak_bytes) / peak, 0.0, 1.0) : 0.0;
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
