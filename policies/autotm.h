// AutoTM (ASPLOS 2020): tensor placement and movement as an integer linear
// program over one network-flow graph per tensor, solved with CBC, with the
// fragmentation loop around it.
//
// Adapted to our additive kernel-time model: a kernel's time is its DRAM time
// plus the slow penalty of each access whose tensor is in the slow tier, so
// AutoTM's one-hot configuration variables d_{k,c} collapse into the tensor
// location variables and rho_k is linear in them. The formulation models
// EvaluatePlan exactly for the plans it can express, so its objective is the
// cost model's prediction of the plan it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "policies/mip.h"
#include "policies/policy.h"

namespace tensortier {

enum class AutoTmFormulation : uint8_t {
  kStatic = 0,        // a tensor stays where it is created
  kSynchronous = 1,   // moves at kernel boundaries, every copy on the critical path
  kAsynchronous = 2,  // copies may overlap a kernel: min sum_k max(rho_k, copies_k) + sync copies
};
const char* AutoTmFormulationName(AutoTmFormulation f);

// How the DRAM limit of each kernel (AutoTM eq. 5) enters the program. Both
// state the same constraint; they differ in size and in what CBC makes of
// them. kPerKernel writes one row per kernel over every tensor live there:
// sum_k |live_k| nonzeros, 8 million on a paper-scale ResNet-152, which CBC
// copies several times (3.4 GB per solve, and no LP finished in a minute).
// kRunningSum carries the DRAM-resident bytes from kernel to kernel in a
// continuous variable per kernel, D_k = D_{k-1} + segments that begin at k -
// segments that ended at k-1, bounded by L_k, so each location variable
// enters two rows (66,000 nonzeros there; solved to 0.03% in 2 s, 132 MiB).
// On small programs the per-kernel rows solve as fast or faster (CBC's
// cuts use them: VGG19 at batch 8, 128 px, 1 s against 15 s), so kAuto
// takes them up to kPerKernelNonzeroLimit nonzeros (bench/bench_ilp.cc).
enum class MemoryRows : uint8_t { kPerKernel = 0, kRunningSum = 1, kAuto = 2 };
const char* MemoryRowsName(MemoryRows m);
constexpr int64_t kPerKernelNonzeroLimit = 1000000;

struct AutoTmIlpOptions {
  AutoTmFormulation formulation = AutoTmFormulation::kSynchronous;
  MigrationMode mode = MigrationMode::kSync;
  uint64_t dram_limit_bytes = 0;       // the plan's limit (0 = none)
  std::vector<uint64_t> kernel_limits; // L_k; empty = dram_limit_bytes everywhere
  MemoryRows memory_rows = MemoryRows::kAuto;
  double time_limit_seconds = 60;
  double mip_gap = 0.01;
  // Where a tensor may change tier when copies can overlap kernels (async
  // mode): at kernels within this many kernels of one of its uses; longer
  // idle stretches are one location. Sync mode needs no window: moving right
  // after or right before a use is always at least as good (AutoTM's
  // components), which keeps that formulation exact.
  int async_window = 1;
  // Tensors smaller than this are placed statically (never moved).
  uint64_t min_moved_bytes = 4096;
  // A tensor's location over a run of kernels [first, last] in which the
  // formulation lets it not move (one location variable), decided outside
  // the solver (policies/guided_ilp.h): a tier, or nullopt for none.
  using SegmentTierFn = std::function<std::optional<Tier>(uint32_t tensor, int32_t first, int32_t last)>;
  SegmentTierFn fixed_tier;  // fixes the variable; empty: nothing fixed
  SegmentTierFn start_tier;  // the MIP start (unset variables: CBC's); empty: first-touch's, or in
                             // the asynchronous formulation the synchronous one's solution
  // A solution of this same program (the same workload, formulation, mode
  // and limits; fixed_tier may differ) whose integer values start the solve:
  // complete, where start_tier may leave CBC to finish a start. Overrides it.
  std::vector<double> start_values;
  bool preprocess = true;  // MipOptions::preprocess
};

struct AutoTmIlpResult {
  PlacementPlan plan;
  MipSolution mip;
  double predicted_ns = 0;  // the ILP objective: the cost model's time for `plan`
  int variables = 0;
  int integer_variables = 0;
  int constraints = 0;
  int64_t nonzeros = 0;
  MemoryRows memory_rows = MemoryRows::kPerKernel;  // the form used (kAuto resolved)
  // The asynchronous formulation's synchronous start was faster than what CBC
  // returned, or CBC returned nothing and the first-touch start stands:
  // `plan` and the integer values are the start's.
  bool start_kept = false;
};

// One solve. Without a start of the caller's (start_values, start_tier), a
// solve that ends with no solution (time limit, a crash of CBC) returns the
// first-touch start's plan, which fits every limit. Throws
// std::runtime_error when CBC returns nothing from the caller's start.
AutoTmIlpResult SolveAutoTmIlp(const Workload& w, const AutoTmIlpOptions& options);

// DRAM a plan really takes at each kernel once an allocator has placed its
// tensors; the fragmentation loop re-solves while this exceeds the limit.
using DramPerKernelFn = std::function<std::vector<uint64_t>(const Workload&, const PlacementPlan&)>;

class AutoTmPolicy : public PlacementPolicy {
 public:
  explicit AutoTmPolicy(AutoTmFormulation formulation) : formulation_(formulation) {}
  std::string name() const override;
  // By default the cost model's count (ReplayPlan), which has no
  // fragmentation; a real allocator's footprint can be plugged in here.
  void SetAllocatorModel(DramPerKernelFn fn) { allocator_model_ = std::move(fn); }

 protected:
  // Solves, scores the plan on the cost model, and on a kernel over the
  // limit shrinks that kernel's L_k by 2% and solves again (AutoTM 4.2), up
  // to ctx.max_solves solves.
  PolicyResult DecideImpl(const Workload& w, const PolicyContext& ctx) const override;

 private:
  AutoTmFormulation formulation_;
  DramPerKernelFn allocator_model_;
};

}  // namespace tensortier
