// The learned form of DeepTM's Algorithm 1: an episode walks one training
// iteration, and at each bottleneck kernel (live bytes above the DRAM limit)
// the action is a set of heat weights (w_r, w_f, w_s, w_l) and a threshold.
// The kernel's live tensors get heats from those weights (envs/heat.h); the
// hot ones (heat above the threshold) go to DRAM, hottest first, as long as
// they fit, and the rest go to the slow tier. Kernels without a bottleneck
// keep every tensor where it is and put new tensors in DRAM, as in
// PlacementEnv (envs/placement_env.h, docs/mdp.md).
//
// Action: kHeatActionSize numbers in [-1, 1] (a tanh-squashed Gaussian's
// output), mapped to ranges:
//   w_i       = weight_min * (weight_max / weight_min)^((a_i + 1) / 2)   (log scale; a = 0 -> 1
//               with the default [0.1, 10], Algorithm 1's starting weights)
//   threshold = threshold_min + (threshold_max - threshold_min) (a_4 + 1) / 2
// and the threshold applies to the normalised heat H / (w_r + w_f + w_s + w_l),
// which lies in [-1, 1] for any weights (the features are min-max scaled).
// Algorithm 1 compares the raw heat with threshold 0, which is the same test
// as normalised heat > 0, so Algorithm 1's placements are in this family.
//
// Reward: the performance part of DeepTM eq. 13 paid as time is saved, as
// PlacementEnv's kTimeSaved. A step pays beta R_fix / (C_max - C_min) times
// (the slow penalties avoided by reading tensors from DRAM at the step's
// kernel and the non-bottleneck kernels up to the next decision, minus the
// copy time of the migrations it makes, exposed part only with async copies).
// The last step adds the memory-price term R_fix (1 - beta) P_normal and a
// correction to the exact cost-model score, so that an episode's return is
// exactly R_fix (beta (1 - C_normal) + (1 - beta) P_normal) of the final
// plan as EvaluatePlan scores it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "envs/cost_model.h"
#include "envs/heat.h"
#include "envs/placement_env.h"
#include "envs/placement_plan.h"
#include "envs/workload.h"

namespace tensortier {

struct HeatWeightEnvConfig {
  uint64_t dram_limit_bytes = 0;
  MigrationMode mode = MigrationMode::kSync;
  double beta = 0.5;          // performance against memory price (eq. 13)
  double reward_fix = 50.0;   // R_fix
  double weight_min = 0.1;    // heat weights span [weight_min, weight_max], log scale
  double weight_max = 10.0;
  double threshold_min = -1.0;  // on the normalised heat, which lies in [-1, 1]
  double threshold_max = 1.0;
};

// Observation of a decision kernel k; kHeatObservationSize floats in [-1, 1].
enum HeatObservationIndex : int {
  kHeatObsPosition = 0,    // k / K
  kHeatObsLiveOverLimit,   // live bytes / L_D, capped at 4, then / 4
  kHeatObsLiveCount,       // live tensors / the most live at any kernel
  kHeatObsTouchedShare,    // bytes kernel k touches / live bytes
  kHeatObsPenaltyShare,    // slow penalties of k / (penalties + k's DRAM time)
  kHeatObsResident,        // live bytes now in DRAM / L_D, capped at 1
  kHeatObsNewShare,        // bytes allocated at k / live bytes
  kHeatObsNextLive,        // live bytes of kernel k+1 / L_D, capped at 4, then / 4 (0 at the end)
  kHeatObsPrevAction,      // the previous decision's action (5 floats; Algorithm 1
                           // carries its weights from kernel to kernel)
  kHeatObservationSize = kHeatObsPrevAction + 5
};
constexpr int kHeatActionSize = 5;  // w_r, w_f, w_s, w_l, threshold
using HeatObservation = std::array<float, kHeatObservationSize>;
using HeatAction = std::array<float, kHeatActionSize>;

struct HeatStepResult {
  HeatObservation observation{};  // next decision's (zeros when done)
  double reward = 0;
  bool done = false;
};

class HeatWeightEnv {
 public:
  // `w` must be finalized and outlive the env. Throws std::invalid_argument.
  HeatWeightEnv(const Workload& w, HeatWeightEnvConfig config);

  HeatObservation Reset();
  // Places the current kernel's live tensors by the action's weights and threshold.
  HeatStepResult Step(const HeatAction& action);
  // The same with explicit heats (live_at(k) order) compared with `threshold`
  // as they are: how Algorithm 1's own heats are placed.
  HeatStepResult StepWithHeats(const std::vector<double>& heat, double threshold);
  bool done() const { return done_; }

  // Valid once done(): the plan and its cost-model score. `spills` counts
  // hot tensors that did not fit in DRAM.
  const EpisodeSummary& summary() const { return summary_; }
  double episode_return() const { return return_; }

  HeatWeights ActionToWeights(const HeatAction& action) const;  // threshold: normalised
  HeatAction WeightsToAction(const HeatWeights& weights) const;  // clamped to the ranges

  const Workload& workload() const { return w_; }
  const HeatWeightEnvConfig& config() const { return config_; }
  // Decision kernels (bottleneck kernels): the number of steps of every episode.
  const std::vector<uint32_t>& decision_kernels() const { return decision_kernels_; }
  size_t current_kernel() const { return kernel_; }
  // Episodic reward (eq. 11-13, both terms scaled by R_fix) of a plan's score.
  double EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes) const;

 private:
  void AdvanceToDecision();
  void FinishEpisode();
  HeatObservation MakeObservation() const;
  double KernelSavedNs(size_t k, const std::vector<Tier>& effective) const;

  const Workload& w_;
  HeatWeightEnvConfig config_;
  uint64_t limit_bytes_ = 0;  // DRAM for the tensors: the limit less the pinned tensors
  std::vector<bool> bottleneck_;
  std::vector<uint32_t> decision_kernels_;
  std::vector<HeatFeatures> features_;  // per kernel (bottleneck kernels only)
  std::vector<uint64_t> touched_bytes_;
  std::vector<double> penalty_ns_;      // sum of slow penalties per kernel
  size_t max_live_count_ = 1;
  double time_scale_ = 0;

  // Episode state.
  size_t kernel_ = 0;
  std::vector<Tier> tier_;
  std::vector<bool> placed_;
  HeatAction prev_action_{};
  double pending_reward_ = 0;  // earned at kernels since the last step
  double perf_paid_ = 0;       // performance reward paid so far (unscaled ns)
  double return_ = 0;
  bool done_ = true;
  PlacementPlan plan_;
  EpisodeSummary summary_;
};

// Runs DeepTM's Algorithm 1 through the env: ComputeAllHeats' heats with
// threshold 0 (its starting weights' threshold) at every decision kernel.
EpisodeSummary RunAlgorithm1(HeatWeightEnv& env, double* episode_return = nullptr);
// Runs fixed weights (no adjustment) at every decision kernel.
EpisodeSummary RunFixedWeights(HeatWeightEnv& env, const HeatAction& action,
                               double* episode_return = nullptr);

}  // namespace tensortier
