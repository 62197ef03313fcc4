// The placement MDP of DeepTM IV-C. An episode walks one training iteration
// kernel by kernel; at each kernel whose live tensors exceed the DRAM limit
// (a "bottleneck" kernel) the agent places each live tensor, one step per
// tensor, in DRAM or the slow tier for that kernel. Kernels without a
// bottleneck keep every tensor where it is and put new tensors in DRAM
// (with DecisionScope::kAccessGaps they ask where a new tensor that will
// meet a bottleneck starts, and whether a slow-tier tensor they touch is
// fetched).
// The decisions become a PlacementPlan that the cost model (or a worker on
// real memory) scores at the end of the episode.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "envs/cost_model.h"
#include "envs/heat.h"
#include "envs/placement_plan.h"
#include "envs/transition.h"
#include "envs/workload.h"

namespace tensortier {

// What happens when the agent puts a tensor in DRAM that does not fit.
enum class OomHandling : uint8_t {
  kSpillToSlow = 0,  // the tensor goes to the slow tier instead; the step costs spill_penalty
  kTerminate = 1,    // DeepTM: the episode ends with oom_penalty
};

// The step reward.
enum class StepRewardKind : uint8_t {
  // Time saved against the slow tier: the kernel's slow-tier penalty for t
  // when it reads t from DRAM, minus the copy time a migration adds, scaled
  // by beta R_fix / (C_max - C_min). An episode's step rewards then add up
  // to (about) beta R_fix (1 - C_normal): dense credit for the real objective.
  // The memory-price term of eq. 13 is then the only terminal reward, which
  // keeps the returns close to Markov in the observation.
  kTimeSaved = 0,
  // DeepTM eq. 8: s_t / sum of the kernel's input bytes when t is in DRAM,
  // minus the normalised migration cost.
  kDeepTm = 1,
};

// Which live tensors of a bottleneck kernel get a decision.
enum class DecisionScope : uint8_t {
  // Every live tensor (DeepTM's time-steps, literally).
  kAllLive = 0,
  // All but the tensors that sit in the slow tier and that the kernel does
  // not touch (nor, with async copies, the next kernel): moving those now
  // can only cost time, so the step would teach nothing.
  kRelevant = 1,
  // kRelevant, and a DRAM-resident tensor the kernel does not touch is asked
  // once per access gap (at the first bottleneck kernel after its last
  // access: keep it until the next access, or evict it now) and then keeps
  // its tier until it is touched again. The decisions of an access gap
  // become one (AutoTM's ILP decides per gap too), so an episode is
  // O(accesses) instead of O(live tensors x bottleneck kernels), and one
  // wrong "evict" among hundreds of "keep"s no longer drops a tensor.
  kAccessGaps = 2,
};

// "all-live", "relevant", "access-gaps"; Parse throws std::invalid_argument
// naming the accepted names.
std::string DecisionScopeName(DecisionScope scope);
DecisionScope ParseDecisionScope(const std::string& name);

struct EnvConfig {
  uint64_t dram_limit_bytes = 0;
  DecisionScope scope = DecisionScope::kAccessGaps;
  StepRewardKind step_reward = StepRewardKind::kTimeSaved;
  OomHandling oom_handling = OomHandling::kSpillToSlow;
  // 0: a DRAM request that does not fit is clipped to the slow tier at no
  // cost, like an action mask. A penalty makes the agent learn the capacity
  // boundary itself, which made greedy evaluations swing by hundreds on
  // real workloads (docs/mdp.md).
  double spill_penalty = 0.0;
  MigrationMode mode = MigrationMode::kSync;
  double beta = 0.75;                 // weight of performance against memory price (eq. 13)
  double reward_fix = 50.0;           // R_fix
  double oom_penalty = 50.0;          // subtracted on the step that runs out of DRAM
  double dram_price_per_gb = 23.81;   // U_D (DeepTM)
  double slow_price_per_gb = 7.85;    // U_P
};

// Observation layout; kObservationSize floats. Documented in docs/mdp.md.
enum ObservationIndex : int {
  kObsTier = 0,            // p_t: current tier (0 DRAM, 1 slow)
  kObsHeat,                // H_t from Algorithm 1, squashed to [-1, 1]
  kObsDramLeft,            // D_left / L_D
  kObsSlowLeft,            // P_left / slow capacity (1 when unbounded)
  kObsSizeShare,           // s_t / live bytes at k
  kObsAccessedNow,         // 1 if kernel k reads or writes t
  kObsInputShare,          // s_t / bytes kernel k touches (0 if not touched)
  kObsPenaltyShare,        // slow penalty of t at k / kernel's DRAM time, capped at 1
  kObsNextUse,             // kernels to next access / K (1 if none)
  kObsPosition,            // k / K
  kObsCopyCost,            // copy time of t / kernel's DRAM time, capped at 1
  kObsPendingBytes,        // live bytes still to decide at k / L_D, capped at 4 (then /4)
  kObsSizeOfLimit,         // s_t / L_D, capped at 1
  kObsNextUsePenalty,      // slow penalty at t's next access / that kernel's DRAM time, capped at 1
  kObsResidentPending,     // DRAM-resident bytes of tensors still to decide at k / L_D, capped at 1:
                           // tells apart states that differ only in what earlier kernels kept
  kObsGapPeak,             // most live bytes at a kernel between k and t's next access (the end
                           // when none) / L_D, capped at 4 (then /4): whether keeping t in DRAM
                           // until it is used again competes for room (0: an empty gap)
  kObsGapLength,           // log(1 + kernels to t's next access, or to the end) / log(1 + K)
  kObsGapHeld,             // most DRAM bytes that tensors kept through their own gaps hold at a
                           // kernel between k and t's next access / L_D, capped at 1
                           // (DecisionScope::kAccessGaps; 0 in the other scopes): how much of
                           // the room over t's gap earlier keep decisions already took
  kObsStartTier,           // a persistent tensor with no access left this iteration: its tier at
                           // the iteration's start (0 DRAM, 1 slow); 0.5 otherwise. The plan
                           // repeats, so one that ends elsewhere is copied back after the last
                           // kernel, a cost no other float shows. Shown only there: shown at every
                           // decision it became a shortcut (keep the starting tier) that carried a
                           // first mistake through the iteration (docs/mdp.md)
  kObservationSize
};
using Observation = std::array<float, kObservationSize>;

// The order of a bottleneck kernel's decisions. Given the observations of
// the kernel's decisions, each as if it were the next one (the DRAM left is
// the kernel's at its start), it fills one priority per decision; higher
// decides first (ties keep heat order). With clip-to-fit, a DRAM request
// is granted while room is left, so the order decides which requests win:
// a policy that orders by its own preference for DRAM keeps one doubtful
// DRAM choice from taking the room of a sure one decided after it.
using DecisionPriority = std::function<void(const std::vector<Observation>& decisions, std::vector<float>& priority)>;

struct StepResult {
  Observation observation{};  // next state (zeros when done)
  double reward = 0;          // step reward (eq. 8), plus the episodic reward on the last step
  bool done = false;
};

// The experience of taking `action` in `observation`, as replay stores it.
inline Transition TransitionOf(const Observation& observation, int action, const StepResult& r) {
  return {std::vector<float>(observation.begin(), observation.end()), static_cast<uint8_t>(action),
          static_cast<float>(r.reward), std::vector<float>(r.observation.begin(), r.observation.end()), r.done};
}

struct EpisodeSummary {
  uint32_t steps = 0;
  uint32_t spills = 0;        // DRAM choices that did not fit and went to the slow tier
  double step_reward_sum = 0;
  double episodic_reward = 0;
  bool oom = false;
  CostReport cost;
  double normalised_cost = 0;
  double price_score = 0;     // P_normal
  PlacementPlan plan;
};

// Whether episode `a` is better than `b`: one that fits DRAM beats one that
// ran out of it, then the cost model's time decides (exact ties are not better).
bool FasterEpisode(const EpisodeSummary& a, const EpisodeSummary& b);

// EpisodeSummary::price_score of a plan whose DRAM peaks at `dram_peak_bytes`:
// the share of the workload's peak it leaves out of DRAM, in [0, 1].
double PriceScore(const Workload& w, uint64_t dram_peak_bytes);

class PlacementEnv {
 public:
  // `w` must be finalized and outlive the env. Heats are computed once here.
  PlacementEnv(const Workload& w, EnvConfig config);

  Observation Reset();
  StepResult Step(int action);  // 0 = DRAM, 1 = slow
  // Empty (the default): hottest first (Algorithm 1's heat). Takes effect
  // at the next kernel; set it before Reset.
  void SetDecisionPriority(DecisionPriority priority) { priority_ = std::move(priority); }
  bool has_decision_priority() const { return static_cast<bool>(priority_); }
  bool done() const { return done_; }

  // Valid after done(): the plan built so far and its score.
  const EpisodeSummary& summary() const { return summary_; }

  const Workload& workload() const { return w_; }
  const EnvConfig& config() const { return config_; }
  // Upper bound on the steps of an episode (the decision slots: live
  // tensors of bottleneck kernels, and with kAccessGaps the touched and new
  // tensors of the others).
  uint32_t max_steps() const { return max_steps_; }
  // The decision the next Step() makes: which tensor, at which kernel.
  uint32_t current_tensor() const { return CurrentTensor(); }
  size_t current_kernel() const { return kernel_; }
  // True when the next Step(0) would not get DRAM: with
  // OomHandling::kSpillToSlow, the current tensor does not fit in the DRAM
  // left at this kernel, so Step clips the request to the slow tier. Both
  // actions then place the tensor alike (the plan is the same; only the step
  // reward differs, by spill_penalty, and summary().spills). False when the
  // episode is done or OOM handling is kTerminate.
  bool DramRequestWouldSpill() const;
  // The bytes the next Step(0) lacks in DRAM: 0 when it fits (or the episode
  // is done), else what other tensors would have to free at this kernel for
  // it to fit (with async copies, the room held for undecided residents
  // counted as DramRequestWouldSpill counts it).
  uint64_t DramShortfallBytes() const;
  // The kernel up to which (exclusive) the next Step's tier holds unless the
  // tensor is touched: k + 1, or with DecisionScope::kAccessGaps for a
  // DRAM-resident tensor kernel k does not touch, its next decision: its
  // next access, or with async copies the bottleneck kernel before it (or
  // the end of its life). Demonstrations label such a decision "DRAM" only
  // when the plan keeps the tensor in DRAM that long.
  size_t decision_holds_until() const;

  // Frees the decision slots and the episode state, the bulk of an env's
  // memory (paper-scale ResNet-152: 8 bytes a slot, about 8 million slots),
  // until the next Reset or Resume builds them again (the same slots; a few
  // hundred ms on the largest graphs, more than a greedy episode there).
  // summary() stays valid. For many envs that take turns within a memory
  // budget (PretrainOnCorpus). Throws std::logic_error while an episode is
  // in progress.
  void ReleaseDecisionSlots();
  bool decision_slots_built() const { return !slot_begin_.empty(); }
  // What the decision slots hold now (capacity), for the memory they save.
  uint64_t decision_slot_bytes() const;

  // Replaces the cost-model score of the finished episode with a measured
  // runtime (workers on real memory call this) and recomputes the episodic
  // reward. Returns the new episodic reward.
  double RescoreWithRuntime(double runtime_ns, double min_runtime_ns, double max_runtime_ns);

  // Episodic reward (eq. 11-13) for a normalised cost and a DRAM peak.
  double EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes) const;

  // Resuming and ending episodes early, for the plan-time search's replays
  // (envs/plan_search.h): a replay differs from an episode already played
  // in a decision or two, so it resumes that episode at the start of a
  // kernel before the first difference and ends as soon as its state at
  // the start of a kernel is that episode's again: from there on both take
  // the same decisions. On ResNet-152 an episode walks 19,000 decisions and
  // millions of skipped slots; a replay of the search walks 24-59% of them
  // on average (docs/mdp.md).
  //
  // True when the next Step is the first of its kernel: where checkpoints
  // are taken and fingerprints compared.
  bool at_kernel_start() const { return !done_ && in_kernel_ && kernel_steps_ == 0; }
  // A hash of every placed tensor's tier, decided access gap and starting
  // tier, dead tensors left out: what, with the kernel, decides the rest of
  // an episode (the other state follows from it at a kernel's start). Two
  // episodes of this env whose fingerprints agree at the start of one
  // kernel go on alike when they take the same actions.
  uint64_t fingerprint() const { return fingerprint_; }
  // The progress of an episode at the start of a kernel's decisions, all
  // but its plan (rebuilt from the finished plan when resumed: copying it
  // at every checkpoint would cost more than the rest). Opaque.
  class Checkpoint;
  // Throws std::logic_error unless at_kernel_start().
  Checkpoint TakeCheckpoint() const;
  // Resumes the episode `checkpoint` was taken in, whose finished plan is
  // `plan`: the decisions before it are that plan's. Returns the
  // observation of the next decision. Throws std::invalid_argument for a
  // checkpoint or plan of another env.
  Observation Resume(const Checkpoint& checkpoint, const PlacementPlan& plan);
  // At a kernel's start, ends the episode with `other`'s decisions from
  // here on: `other` is a finished episode of this env whose fingerprint at
  // this kernel's start was this one's, and `other_here` its summary's
  // steps, spills and step rewards before this kernel. Throws
  // std::logic_error unless at_kernel_start(), std::invalid_argument for
  // an episode that ran out of DRAM.
  void FinishAs(const EpisodeSummary& other, const EpisodeSummary& other_here);

 private:
  // One kernel's access to a tensor, for the tensor's decisions.
  struct Use {
    uint32_t kernel = 0;
    bool writes = false;
    float penalty_share = 0;  // slow penalty / the kernel's DRAM time, capped at 1
    double penalty_ns = 0;
  };

  void BuildDecisionSlots();
  uint64_t DramNeededBytes(uint32_t t) const;  // DRAM a request for t takes at this kernel
  bool DramRequestDoesNotFit(uint32_t t) const;
  // Whether slot's tensor gets no decision at kernel_: it idles in the slow
  // tier, or (kAccessGaps) stays in DRAM through a gap already decided.
  bool Skipped(uint32_t slot) const;
  bool HeldThroughGap(uint32_t slot) const;
  void AdvanceToDecision();
  void LeaveKernel();
  void SortKernelMigrations();
  void FinishEpisode(bool oom);
  void FreshSummary();
  Observation MakeObservation() const { return ObservationOf(Slot()); }
  Observation ObservationOf(uint32_t slot) const;
  void OrderKernelDecisions();
  // The slot of the current decision: slot_ is a position in the kernel's
  // decision order, which is the slots' own unless a priority reordered it.
  uint32_t Slot() const { return order_.empty() ? static_cast<uint32_t>(slot_) : order_[slot_ - kernel_slot_begin_]; }
  uint32_t CurrentTensor() const;

  const Workload& w_;
  EnvConfig config_;
  uint64_t limit_bytes_ = 0;  // DRAM for the tensors: the limit less the pinned tensors
  uint64_t signature_ = 0;                        // the workload's, for every episode's plan
  std::vector<uint8_t> bottleneck_;
  // Decision slots: one per live tensor of each bottleneck kernel, hottest
  // first, kernel after kernel; kernel k's are [slot_begin_[k],
  // slot_begin_[k + 1]). Steps read these instead of searching the workload;
  // a few bytes each, as large graphs have millions.
  std::vector<uint32_t> slot_begin_;
  std::vector<uint32_t> slot_word_;               // tensor id and a flag, see placement_env.cc
  std::vector<float> slot_heat_;                  // the squashed heat
  // A slot's use (its tensor's first at or after kernel_) is not stored per
  // slot: decisions are read at kernel_ alone, and kernel_ only grows within
  // an episode, so a cursor per tensor finds it (it was 4 of 12 bytes a slot,
  // learning.md, section 3, session thirty-five). Episode state; Reset and
  // Resume set it, the const readers move it forward.
  static constexpr uint32_t kUseUnknown = UINT32_MAX;
  mutable std::vector<uint32_t> use_cursor_;
  uint32_t UseAtOrAfterKernel(uint32_t t) const;
  // kObsGapPeak and kObsGapLength come from the slot's kernel and use, per
  // observation: per slot they were 40% of the slots' bytes (a 60-task
  // corpus held 2.3 GB, docs/results/learning.md, session thirty-four).
  class LivePeaks;
  std::shared_ptr<const LivePeaks> live_peaks_;   // live bytes / L_D, range maxima over kernels
  std::vector<float> gap_length_of_;              // kObsGapLength by the gap's length in kernels
  // Every tensor's uses in kernel order; tensor t's are
  // [use_begin_[t], use_begin_[t + 1]).
  std::vector<uint32_t> use_begin_;
  std::vector<Use> uses_;
  std::vector<uint64_t> size_;                    // per tensor: contiguous, unlike Tensor (0 for a pinned one)
  std::vector<uint64_t> plannable_live_bytes_;    // per kernel: live bytes less the pinned tensors'
  std::vector<float> size_of_limit_;              // per tensor, the observation's
  std::vector<double> copy_ns_;                   // [2 t + tier]: copy of t towards tier
  std::vector<double> kernel_ns_;                 // max(DRAM time, 1) per kernel
  std::vector<float> position_;                   // k / K
  std::vector<uint64_t> touched_bytes_;           // bytes each kernel reads or writes
  uint32_t max_steps_ = 0;
  double time_scale_ = 0;                         // beta R_fix / (C_max - C_min), per ns
  double min_cost_ns_ = 0, max_cost_ns_ = 0;      // C_min, C_max
  double terminal_reward_ = 0;                    // added to the last step's reward

  // Episode state.
  size_t kernel_ = 0;
  size_t slot_ = 0, slot_end_ = 0;     // the current decision and the end of kernel_'s
  size_t kernel_slot_begin_ = 0;
  DecisionPriority priority_;
  std::vector<uint32_t> order_;        // kernel_'s slots in decision order when priority_ is set
  std::vector<Observation> order_observations_;
  std::vector<float> order_priority_;
  std::vector<uint8_t> state_;         // per tensor: its tier, or not placed yet
  // kAccessGaps, per tensor: 1 + the index in uses_ of the next access of
  // the gap whose keep-or-evict decision was made (0: none yet).
  std::vector<uint32_t> gap_decided_;
  // kAccessGaps, per tensor: 1 + the kernel of the access that ends its
  // decided gap (UINT32_MAX: the gap runs to the tensor's end; 0: none),
  // derived from gap_decided_. HeldThroughGap asks it of every slot of every
  // bottleneck kernel: one load where gap_decided_ needs three.
  std::vector<uint32_t> gap_held_through_;
  void SetGapDecided(uint32_t t, uint32_t value);
  // kAccessGaps: bytes held in DRAM at each kernel by tensors kept through
  // their gaps (kObsGapHeld), range add and range max.
  class HeldBytes {
   public:
    void Reset(size_t kernels);
    void Add(size_t begin, size_t end, double bytes);  // over kernels [begin, end)
    double Max(size_t begin, size_t end) const;        // 0 when empty
   private:
    void Add(size_t node, size_t lo, size_t hi, size_t begin, size_t end, double bytes);
    double Max(size_t node, size_t lo, size_t hi, size_t begin, size_t end) const;
    size_t n_ = 0;
    std::vector<double> max_, pending_;
  };
  HeldBytes held_;
  std::vector<uint32_t> free_end_;     // per tensor: its last kernel + 1
  // The end (exclusive) of the gap after slot's decision: the tensor's next
  // access after kernel_, or the end of its life.
  size_t GapEnd(uint32_t slot) const;
  uint64_t dram_committed_ = 0;        // DRAM held during kernel_ by decisions so far
  uint64_t undecided_bytes_ = 0;
  uint64_t resident_undecided_bytes_ = 0;  // of those, bytes now in DRAM
  uint64_t resident_live_bytes_ = 0;   // DRAM bytes of placed tensors live at kernel_
  size_t kernel_migrations_ = 0;       // kernel_'s first migration in the plan
  bool done_ = true;
  bool in_kernel_ = false;             // kernel_'s decisions have begun
  uint32_t kernel_steps_ = 0;          // steps taken at kernel_
  uint64_t fingerprint_ = 0;           // see fingerprint()
  EpisodeSummary summary_;             // its plan is built as the episode goes

  // Keeps fingerprint_ in step with a change of tensor t's state_,
  // gap_decided_ or starting tier: call before and after the change.
  void ToggleFingerprint(uint32_t t);

 public:
  class Checkpoint {
   private:
    friend class PlacementEnv;
    size_t kernel = 0, slot = 0, slot_end = 0, kernel_slot_begin = 0;
    std::vector<uint32_t> order;
    std::vector<uint8_t> state;
    std::vector<uint32_t> gap_decided;
    HeldBytes held;
    uint64_t dram_committed = 0, undecided_bytes = 0, resident_undecided_bytes = 0, resident_live_bytes = 0;
    uint64_t fingerprint = 0, signature = 0, dram_limit_bytes = 0;
    uint32_t steps = 0, spills = 0;
    double step_reward_sum = 0;
  };
};

// The episodic reward (eq. 11-13, both terms scaled by R_fix) of a plan's
// normalised cost and DRAM peak, on a workload whose live bytes peak at
// `peak_live_bytes`; both environments score their episodes with it.
double EpisodicReward(double normalised_cost, uint64_t dram_peak_bytes, uint64_t peak_live_bytes, double beta,
                      double reward_fix);

// Runs `policy(observation) -> action` through one episode and returns it.
template <typename Policy>
EpisodeSummary RunEpisode(PlacementEnv& env, Policy&& policy) {
  Observation obs = env.Reset();
  while (!env.done()) obs = env.Step(policy(obs)).observation;
  return env.summary();
}

}  // namespace tensortier
