#include "envs/heat_weight_env.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tensortier {
namespace {


float Cap(double x, double cap) { return static_cast<float>(std::clamp(x, 0.0, cap)); }

}  // namespace

HeatWeightEnv::HeatWeightEnv(const Workload& w, HeatWeightEnvConfig config) : w_(w), config_(config) {
  if (!w.finalized()) throw std::invalid_argument("HeatWeightEnv: workload not finalized");
  if (config_.dram_limit_bytes == 0)
    throw std::invalid_argument("HeatWeightEnv: DRAM limit must be positive");
  if (!(config_.beta >= 0 && config_.beta <= 1))
    throw std::invalid_argument("HeatWeightEnv: beta must be in [0, 1]");
  if (!(config_.weight_min > 0) || !(config_.weight_max >= config_.weight_min) ||
      !std::isfinite(config_.weight_max))
    throw std::invalid_argument("HeatWeightEnv: need 0 < weight_min <= weight_max");
  if (!(config_.threshold_max >= config_.threshold_min) || !std::isfinite(config_.threshold_min) ||
      !std::isfinite(config_.threshold_max))
    throw std::invalid_argument("HeatWeightEnv: need threshold_min <= threshold_max");
  limit_bytes_ = PlannableDramBytes(w, config_.dram_limit_bytes);
  const size_t K = w.num_kernels();
  bottleneck_.resize(K);
  features_.resize(K);
  touched_bytes_.assign(K, 0);
  penalty_ns_.assign(K, 0.0);
  // Pinned tensors are DRAM throughout and the limit is already less them.
  const std::vector<uint64_t> live_bytes = PlannableLiveBytes(w);
  for (size_t k = 0; k < K; ++k) {
    bottleneck_[k] = live_bytes[k] > limit_bytes_;
    if (bottleneck_[k]) {
      decision_kernels_.push_back(static_cast<uint32_t>(k));
      features_[k] = ComputeHeatFeatures(w, k);
    }
    for (uint32_t i : w.accesses_of_kernel(k)) {
      touched_bytes_[k] += w.tensors[w.accesses[i].tensor].size_bytes;
      penalty_ns_[k] += w.accesses[i].slow_penalty_ns;
    }
    max_live_count_ = std::max(max_live_count_, w.live_at(k).size());
  }
  const double span = MaxCostNs(w) - MinCostNs(w);
  time_scale_ = span > 0 ? config_.beta * config_.reward_fix / span : 0.0;
}

HeatWeights HeatWeightEnv::ActionToWeights(const HeatAction& a) const {
  auto unit = [](float x) { return (std::clamp(static_cast<double>(x), -1.0, 1.0) + 1.0) / 2.0; };
  const double ratio = config_.weight_max / config_.weight_min;
  auto weight = [&](float x) { return config_.weight_min * std::pow(ratio, unit(x)); };
  HeatWeights h;
  h.w_r = weight(a[0]);
  h.w_f = weight(a[1]);
  h.w_s = weight(a[2]);
  h.w_l = weight(a[3]);
  h.threshold = config_.threshold_min + (config_.threshold_max - config_.threshold_min) * unit(a[4]);
  return h;
}

HeatAction HeatWeightEnv::WeightsToAction(const HeatWeights& h) const {
  const double log_ratio = std::log(config_.weight_max / config_.weight_min);
  auto from_weight = [&](double x) -> float {
    if (!(log_ratio > 0) || !(x > 0)) return 0.0f;
    return static_cast<float>(std::clamp(2.0 * std::log(x / config_.weight_min) / log_ratio - 1.0, -1.0, 1.0));
  };
  HeatAction a{};
  a[0] = from_weight(h.w_r);
  a[1] = from_weight(h.w_f);
  a[2] = from_weight(h.w_s);
  a[3] = from_weight(h.w_l);
  const double range = config_.threshold_max - config_.threshold_min;
  a[4] = range > 0 ? static_cast<float>(std::clamp(2.0 * (h.threshold - config_.threshold_min) / range - 1.0,
                                                   -1.0, 1.0))
                   : 0.0f;
  return a;
}

HeatObservation HeatWeightEnv::Reset() {
  const size_t T = w_.num_tensors();
  tier_.assign(T, Tier::kDram);
  placed_.assign(T, false);
  plan_ = PlacementPlan::Uniform(w_, Tier::kDram, config_.dram_limit_bytes);
  plan_.mode = config_.mode;
  plan_.produced_by = "heat-weight-env";
  summary_ = EpisodeSummary{};
  kernel_ = 0;
  prev_action_ = WeightsToAction(HeatWeights{});
  pending_reward_ = 0;
  perf_paid_ = 0;
  return_ = 0;
  done_ = false;
  AdvanceToDecision();
  if (kernel_ == w_.num_kernels()) {
    // No bottleneck at all: nothing to decide.
    FinishEpisode();
    return HeatObservation{};
  }
  return MakeObservation();
}

double HeatWeightEnv::KernelSavedNs(size_t k, const std::vector<Tier>& effective) const {
  double saved = 0;
  for (uint32_t i : w_.accesses_of_kernel(k)) {
    const Access& a = w_.accesses[i];
    if (effective[a.tensor] == Tier::kDram) saved += a.slow_penalty_ns;
  }
  return saved;
}

// Walks kernels without a bottleneck (new tensors in DRAM, nothing moves),
// adding the penalties they avoid to pending_reward_, up to the next
// decision kernel or the end of the iteration.
void HeatWeightEnv::AdvanceToDecision() {
  while (kernel_ < w_.num_kernels() && !bottleneck_[kernel_]) {
    for (uint32_t t : w_.allocated_at(kernel_)) {
      placed_[t] = true;
      tier_[t] = Tier::kDram;
    }
    pending_reward_ += KernelSavedNs(kernel_, tier_);
    ++kernel_;
  }
}

HeatObservation HeatWeightEnv::MakeObservation() const {
  HeatObservation o{};
  const size_t k = kernel_;
  const size_t K = w_.num_kernels();
  const double limit = static_cast<double>(limit_bytes_);
  const double live = std::max(1.0, static_cast<double>(w_.live_bytes_at(k)));
  o[kHeatObsPosition] = static_cast<float>(static_cast<double>(k) / static_cast<double>(K));
  o[kHeatObsLiveOverLimit] = Cap(live / limit, 4.0) / 4.0f;
  o[kHeatObsLiveCount] =
      static_cast<float>(static_cast<double>(w_.live_at(k).size()) / static_cast<double>(max_live_count_));
  o[kHeatObsTouchedShare] = Cap(static_cast<double>(touched_bytes_[k]) / live, 1.0);
  o[kHeatObsPenaltyShare] =
      Cap(penalty_ns_[k] / std::max(1e-9, penalty_ns_[k] + w_.kernels[k].dram_time_ns), 1.0);
  uint64_t resident = 0, fresh = 0;
  for (uint32_t t : w_.live_at(k)) {
    if (placed_[t] && tier_[t] == Tier::kDram) resident += w_.tensors[t].size_bytes;
    if (w_.tensors[t].alloc_kernel == k) fresh += w_.tensors[t].size_bytes;
  }
  o[kHeatObsResident] = Cap(static_cast<double>(resident) / limit, 1.0);
  o[kHeatObsNewShare] = Cap(static_cast<double>(fresh) / live, 1.0);
  o[kHeatObsNextLive] =
      k + 1 < K ? Cap(static_cast<double>(w_.live_bytes_at(k + 1)) / limit, 4.0) / 4.0f : 0.0f;
  for (int i = 0; i < kHeatActionSize; ++i) o[kHeatObsPrevAction + i] = prev_action_[i];
  return o;
}

HeatStepResult HeatWeightEnv::Step(const HeatAction& action) {
  if (done_) throw std::logic_error("HeatWeightEnv::Step after the episode ended");
  for (float x : action)
    if (!std::isfinite(x)) throw std::invalid_argument("HeatWeightEnv::Step: the action is not finite");
  const HeatWeights h = ActionToWeights(action);
  const HeatFeatures& f = features_[kernel_];
  const double norm = h.w_r + h.w_f + h.w_s + h.w_l;
  std::vector<double> heat(w_.live_at(kernel_).size());
  for (size_t i = 0; i < heat.size(); ++i) heat[i] = Heat(h, f, i) / norm;
  prev_action_ = action;
  for (float& x : prev_action_) x = std::clamp(x, -1.0f, 1.0f);
  return StepWithHeats(heat, h.threshold);
}

HeatStepResult HeatWeightEnv::StepWithHeats(const std::vector<double>& heat, double threshold) {
  if (done_) throw std::logic_error("HeatWeightEnv::StepWithHeats after the episode ended");
  const size_t k = kernel_;
  const auto& live = w_.live_at(k);
  if (heat.size() != live.size())
    throw std::invalid_argument("HeatWeightEnv::StepWithHeats: " + std::to_string(heat.size()) +
                                " heats for " + std::to_string(live.size()) + " live tensors");
  const uint64_t limit = limit_bytes_;
  const bool async = config_.mode == MigrationMode::kAsync;

  // DRAM a tensor holds during kernel k whatever we decide: with async
  // copies, a DRAM-resident tensor that moves out still holds its DRAM copy
  // (unless k writes it, which makes the copy synchronous). Reserving those
  // bytes first means that hot tensors can never push DRAM over the limit.
  auto forced = [&](uint32_t t) -> uint64_t {
    if (!async || !placed_[t] || tier_[t] != Tier::kDram) return 0;
    const Access* a = w_.FindAccess(k, t);
    return a && a->writes > 0 ? 0 : w_.tensors[t].size_bytes;
  };
  uint64_t committed = 0;
  for (uint32_t t : live) committed += forced(t);

  std::vector<uint32_t> order(live.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return heat[a] > heat[b]; });
  std::vector<Tier> chosen(live.size(), Tier::kSlow);
  for (uint32_t i : order) {
    const uint32_t t = live[i];
    if (w_.tensors[t].pinned_dram) {  // DRAM, outside the limit (PlannableDramBytes)
      chosen[i] = Tier::kDram;
      continue;
    }
    if (!(heat[i] > threshold)) continue;
    const uint64_t extra = w_.tensors[t].size_bytes - forced(t);
    if (committed + extra <= limit) {
      chosen[i] = Tier::kDram;
      committed += extra;
    } else {
      ++summary_.spills;
    }
  }

  // Apply: initial tiers for new tensors, migrations "after kernel k-1" for
  // the others, and the tier each tensor is read from during k.
  std::vector<Tier> effective = tier_;
  double copy_ns = 0;
  const double kernel_ns = std::max(w_.kernels[k].dram_time_ns, 1.0);
  for (size_t i = 0; i < live.size(); ++i) {
    const uint32_t t = live[i];
    const Tier to = chosen[i];
    if (!placed_[t]) {
      plan_.initial_tiers[t] = to;
      placed_[t] = true;
      effective[t] = to;
    } else if (tier_[t] != to) {
      plan_.migrations.push_back({static_cast<int32_t>(k) - 1, t, to});
      const Access* a = w_.FindAccess(k, t);
      const bool overlapped = async && !(a && a->writes > 0);
      const double ns = CopyTimeNs(w_, w_.tensors[t].size_bytes, to);
      copy_ns += overlapped ? ExposedAsyncCopyNs(w_, ns, kernel_ns) : ns;
      effective[t] = overlapped ? tier_[t] : to;
    } else {
      effective[t] = to;
    }
    tier_[t] = to;
  }
  ++summary_.steps;

  double reward_ns = pending_reward_ + KernelSavedNs(k, effective) - copy_ns;
  pending_reward_ = 0;
  ++kernel_;
  AdvanceToDecision();
  reward_ns += pending_reward_;
  pending_reward_ = 0;
  perf_paid_ += reward_ns;

  HeatStepResult result;
  result.reward = time_scale_ * reward_ns;
  if (kernel_ == w_.num_kernels()) {
    FinishEpisode();
    // Settle the difference between the step-wise account and the cost
    // model's exact score, and pay the memory-price term.
    const double target = summary_.cost.oom ? -config_.reward_fix : summary_.episodic_reward;
    result.reward += target - (return_ + result.reward);
    result.done = true;
  } else {
    result.observation = MakeObservation();
  }
  summary_.step_reward_sum += result.reward;
  return_ += result.reward;
  return result;
}

double HeatWeightEnv::EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes) const {
  return tensortier::EpisodicReward(normalised_cost, dram_peak_bytes, w_.peak_live_bytes(), config_.beta,
                                    config_.reward_fix);
}

void HeatWeightEnv::FinishEpisode() {
  done_ = true;
  plan_.Normalize();
  plan_.KeepPinnedInDram(w_);
  summary_.plan = plan_;
  summary_.cost = EvaluatePlan(w_, plan_);
  summary_.oom = summary_.cost.oom;
  summary_.normalised_cost = NormalisedCost(w_, summary_.cost.total_ns);
  summary_.price_score = PriceScore(w_, summary_.cost.dram_peak_bytes);
  summary_.episodic_reward =
      summary_.oom ? 0.0 : EpisodicReward(summary_.normalised_cost, summary_.cost.dram_peak_bytes);
}

EpisodeSummary RunAlgorithm1(HeatWeightEnv& env, double* episode_return) {
  const std::vector<std::vector<double>> heats =
      ComputeAllHeats(env.workload(), env.config().dram_limit_bytes);
  const double threshold = HeatWeights{}.threshold;
  env.Reset();
  while (!env.done()) env.StepWithHeats(heats[env.current_kernel()], threshold);
  if (episode_return) *episode_return = env.episode_return();
  return env.summary();
}

EpisodeSummary RunFixedWeights(HeatWeightEnv& env, const HeatAction& action, double* episode_return) {
  env.Reset();
  while (!env.done()) env.Step(action);
  if (episode_return) *episode_return = env.episode_return();
  return env.summary();
}

}  // namespace tensortier
