// A learned policy's plan finished by the ILP: "neural diving" (Nair et al.
// 2020, "Solving Mixed Integer Programs Using Neural Networks"). The
// policy's greedy episode fixes the tier of the tensors where it was surest,
// and CBC solves AutoTM's formulation (policies/autotm.h) for the rest,
// starting from the policy's plan. The network decides which of the 10^3-10^5
// location variables the solver may still change; the smaller program solves
// faster than the whole ILP and, where the whole one stops at its time limit
// or its gap, can end closer to its optimum. The ablations: an untrained
// network's decisions, and no network at all ("heat+ilp",
// DecideHeatGuidedIlp: heat order's plan, the hottest decisions fixed first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/placement_env.h"
#include "envs/plan_search.h"
#include "policies/autotm.h"
#include "policies/mip.h"
#include "policies/policy.h"

namespace tensortier {

struct GuidedIlpOptions {
  // Solves in turn, each with the surest share of the policy's decisions
  // (by the gap between its two scores) fixing their tensors' locations
  // over the kernels they cover, and each starting from the best plan so
  // far. Descending: a solve fixes a subset of what the one before fixed, so
  // it can keep that plan. A small program first gives a plan in a second
  // or two; the larger ones that follow use what time is left.
  std::vector<double> fixed_shares = {0.9, 0.7, 0.5, 0.3, 0.1};
  double time_limit_seconds = 60;  // all the solves together
  // A share's solve may use at most this fraction of the time left in its
  // phase: CBC can stall on one share's program (a corpus network's 30%
  // share of MobileNetV2 ran 58 of 60 s to a 1.1% gap), and the whole
  // program from the best plan, which follows the shares, needs time too.
  double share_time_fraction = 0.5;
  double mip_gap = 0.01;
  // After the shares' solves, one more solve of the whole program (nothing
  // fixed) from the best plan, in all the time left, to this gap: the
  // shares' solves stop at `mip_gap` of their own programs, which leaves up
  // to that much on the table (0: no such solve). A share that reached its
  // time cap ends the shares (one that fixes less would not finish either)
  // but not this solve.
  double final_mip_gap = 0.001;
  // In async mode, the solves first use AutoTM's synchronous formulation
  // (its plans are valid there too, and its programs solve in a fraction of
  // the asynchronous one's time: on the paper-scale models it is the ILP
  // that finishes), for up to half the time, then the asynchronous one from
  // the best plan so far, for the rest; the synchronous shares are followed,
  // within that half, by the whole synchronous program to `mip_gap`. False:
  // the asynchronous one alone.
  bool synchronous_first_in_async = true;
  // That synchronous phase: the shares, then the whole program (true), or
  // the whole program alone from the policy's plan (false). With the DRAM
  // rows as a running sum (policies/autotm.h) the whole synchronous program
  // solves in seconds even on a paper-scale ResNet-152, and the shares cost
  // a third of the minute there (six solves, none improving on a network
  // that had imitated an asynchronous plan) that the windows use better.
  bool synchronous_shares_in_async = false;
  // In async mode, before the asynchronous shares: large-neighbourhood
  // search over windows of consecutive kernels. Each solve frees the
  // location variables of the segments inside one window and fixes every
  // other to the best plan so far, so the asynchronous program, whose whole
  // does not solve in minutes on the large models, becomes a sequence of
  // small ones. Windows half overlap; a pass takes them in order of the
  // policy's doubt (its decisions there below the median gap), and passes
  // repeat while one improves the plan. Paper-scale Inception-v3, from
  // AutoTM-sync's plan (78.2% of all-DRAM): 84.2% in 28 s, where the whole
  // asynchronous program stops at its time limit with the start unchanged.
  bool async_windows = true;
  // The first window's kernels (0: a quarter of the workload's, within
  // [64, 1024]). A window whose solve reaches its time cap halves the size
  // for the next; one solved to its gap within a tenth of it doubles it
  // (up to the workload), so a small model ends with its whole program.
  int window_kernels = 0;
  // A window's solve gets at most this fraction of the phase's time left,
  // and stops at the smaller of mip_gap and final_mip_gap (when set).
  double window_time_fraction = 0.2;
  // GuidedIlpResult::candidates: kept when true (a plan each: memory).
  bool keep_candidates = false;
  int trail_candidates = 3;
};

struct GuidedIlpSolve {
  std::string formulation;   // synchronous | asynchronous
  double fixed_share = 0;    // of the policy's surest decisions (-1: a window's solve)
  int32_t window_first = -1, window_last = -1;  // a window's kernels (-1: not a window)
  double target_gap = 0;     // the relative gap CBC was asked to stop at (mip.gap: the one it reached)
  double time_limit_seconds = 0;  // the time CBC was given (mip.seconds: what it took)
  int fixed_variables = 0;   // location variables fixed by the policy
  MipSolution mip;           // status, gap, seconds (values dropped)
  double cost_ns = 0;        // the solver's plan on the cost model (0: no plan)
  bool improved = false;     // on the best plan before it
};

// A plan the guided ILP held as its best at some point, for a caller that
// can tell plans apart better than the cost model (real iterations: the
// cost model's best asynchronous plan can make five times the copies of the
// synchronous one for a few points that a host may not pay back).
struct GuidedIlpCandidate {
  std::string source;  // "greedy", "synchronous", "asynchronous" (the formulation's best), or
                       // "asynchronous, improvement N of M" (a plan on the way to that best), or
                       // "synchronous, not better on the cost model" (that formulation's best
                       // solution where none beat the plan before it)
  PlacementPlan plan;
  double cost_ns = 0;  // on the cost model
};

struct GuidedIlpResult {
  EpisodeSummary greedy;   // the policy's own plan
  PlacementPlan plan;      // the best plan: the greedy one when no solve beat it
  CostReport cost;         // of `plan`, on the cost model
  bool solved = false;     // a solve beat the greedy plan
  std::string formulation; // synchronous | asynchronous | "synchronous, then asynchronous"
  int location_variables = 0;  // segments of AutoTM's flow graphs (the last formulation's)
  std::vector<GuidedIlpSolve> solves;
  double seconds = 0;          // the greedy episode and the solves
  // The greedy plan, each formulation's best (its best solution, when none
  // beat the plan before it), and up to GuidedIlpOptions::trail_candidates
  // plans improved on the way to the last formulation's best (evenly spaced,
  // by solve); distinct plans only, in the order found, `plan` among them.
  // Empty unless GuidedIlpOptions::keep_candidates.
  std::vector<GuidedIlpCandidate> candidates;
};

// "0.9 0.7 0.5": shares as a command line takes them (for help texts).
std::string SharesText(const std::vector<double>& shares);

// Throws std::invalid_argument for no share, a share outside [0, 1], shares
// that do not descend, a non-positive time limit, a share or window time
// fraction outside (0, 1], or a negative window size.
void ValidateGuidedIlpOptions(const GuidedIlpOptions& options);

// Plays `scores` greedily on `env` (reset and left done) and solves the rest
// on env.workload() under env's DRAM limit and migration mode. Throws what
// ValidateGuidedIlpOptions and `scores` throw.
GuidedIlpResult SolveGuidedIlp(PlacementEnv& env, const ActionScores& scores, const GuidedIlpOptions& options);

// Scores with no network: every decision asks for DRAM (with clip-to-fit,
// the MDP's hottest-first fill: heat order), and the hotter the tensor at
// the kernel, the surer the decision.
ActionScores HeatOrderScores();

// "heat+ilp": the guided ILP with HeatOrderScores in place of a network, in
// the default decision scope, with the context's DRAM limit, mode, solver
// time limit (all solves together) and MIP gap. What dqn+ilp's network adds
// is its plan against this one's in the same bench run. The decision of a
// StatelessPolicy.
PolicyResult DecideHeatGuidedIlp(const Workload& w, const PolicyContext& ctx);

}  // namespace tensortier
