// Search at plan time guided by a learned action-value function: the policy's
// greedy episode; the same policy with its preference for DRAM shifted by a
// few biases (a network imitating a plan that keeps most tensors leans to
// "DRAM" at the doubtful decisions, and how far is the workload's: the
// best bias is chosen by the cost model); then a limited-discrepancy search (Harvey and Ginsberg
// 1995) that takes the other action at the decisions where the values were
// closest and follows the policy after each deviation. Candidates are scored
// by the cost model; a better one becomes the incumbent and the search goes
// on from it (first improvement), until the rollout budget is spent or no
// candidate improves. The network decides which few of the 10^3-10^6
// decisions are worth questioning; without it the search would be blind.
//
// The result keeps the greedy plan apart from the searched one, so that a
// report can show both (a search is not the policy).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "envs/placement_env.h"

namespace tensortier {

// Preference of each action at an observation: higher is better (DQN's
// Q-values; a policy's log-probabilities). Two actions: 0 DRAM, 1 slow.
using ActionScores = std::function<std::pair<float, float>(const Observation&)>;

struct PlanSearchOptions {
  int max_rollouts = 64;        // episodes played, the greedy one and the biased ones included; 1 = greedy only
  int candidates_per_round = 16;  // closest decisions tried before the search gives up on an incumbent
  double max_seconds = 0;       // 0 = no time limit
  // After the rollouts: episodes that flip one of the incumbent's decisions
  // and keep all its others (the policy decides only decisions the
  // incumbent never met), in passes over its doubtful decisions, closest
  // first. They call the network for a few steps at most, so they cost about
  // an environment episode each. 0 = none; none either when max_rollouts is 1.
  int max_replays = 2048;
  // Each single flip that improves adds this many to max_replays, so a
  // search whose flips keep paying goes on flipping, and one whose flips
  // rarely pay leaves the time to the moves after them. With 256, of the 20
  // zoo cells of Fig. 14 (cost model, DRAM 0.2): MobileNetV2 async 71.07 ->
  // 71.80% of all-DRAM, ResNet-152 async 68.19 -> 68.37% (paper scale
  // 81.02 -> 81.60%), Inception-v3 paper async 82.33 -> 82.43%, the others
  // unchanged (docs/results/learning.md, session twenty-eight). 0 = a fixed
  // budget.
  int replays_per_improvement = 256;
  // When a pass of single flips improves nothing: episodes that flip two of
  // the incumbent's decisions of opposite directions over overlapping
  // kernels (one tensor's DRAM for another's), each doubtful decision with
  // its `pair_partners` least sure partners. 0 = none.
  int max_pair_replays = 0;
  int pair_partners = 4;
  // When neither improves: episodes that put every decision of one tensor
  // in one tier (the tier it holds least), or DRAM at each of its uses with
  // its keep-or-evict decisions between left as they were; the least sure
  // tensors first. An improvement sends the search back to single flips.
  // From the committed 19-float networks: ResNet-152 62.00 -> 62.05% of
  // all-DRAM, Inception-v3 48.84 -> 48.95% (docs/results/learning.md,
  // session twenty-two). 0 = none.
  int max_tensor_replays = 8000;
  // When none of the moves above improves: for each tensor of three uses or
  // more, the costliest first (its slow-tier penalties and copies), window
  // replays: the slow tier over a stretch of its uses and DRAM elsewhere, or
  // the other way round, between boundaries at its longest gaps between
  // uses (`window_gaps` of them) and the iteration's ends: evicted over the
  // memory peak and fetched back after it, or fetched for a stretch of close
  // uses. 0 = none.
  int max_window_replays = 20000;
  int window_gaps = 16;
  // Windows priced before they are played, each tensor's dearest first:
  // what the tensor's own slow-tier reads and copies would save, plus all
  // that the incumbent's clipped DRAM requests cost over the kernels where
  // the window frees its DRAM; one priced at no gain is not played
  // (PlanSearchResult::windows_priced_out). On ResNet-152, 83% of the
  // windows priced out, 1 of the 19 that improved among them; the row GRU
  // 49%, none that improved (docs/results/learning.md, session forty-one).
  // False: every window played, in WindowPins' order.
  bool price_windows = true;
  // With max_seconds: each pass of single flips, room, tensor or window
  // replays is a turn of at most this share of it; a turn cut short goes on
  // where it stopped at the move's next turn, and the moves after it take
  // theirs. Without it, on ResNet-152 the single flips took the whole 120 s
  // and no window was played, 60.96% of all-DRAM; with turns 61.48%
  // (AutoTM-sync 61.68%). The first turns decide where the search ends: at
  // 300 s a quarter gave 61.26%, a tenth (30 s turns again) 61.49%
  // (docs/results/learning.md, session forty-one). 0 = a move's pass runs
  // to its end.
  double move_turn_share = 0.25;
  // Before the tensor replays, in passes over the incumbent's
  // `room_uses_per_pass` costliest slow-tier uses: replays that take DRAM
  // there and evict the DRAM choices kept through their gap over that
  // kernel until they free the tensor's size (the least sure first, or the
  // largest first). ResNet-152 from a network's greedy plan: 61.43 ->
  // 61.72% of all-DRAM within the same 120 s (AutoTM-sync 62.06%);
  // Inception-v3: no gain (docs/results/learning.md, session twenty-three).
  // 0 = none.
  int max_room_replays = 2000;
  int room_uses_per_pass = 32;
  // After the rollouts, before the single flips: for each persistent tensor
  // the incumbent ends in another tier than it starts (the executor copies
  // it back after the last kernel), replays that keep it in its starting
  // tier all the iteration, or in its last one. Before the network saw a
  // tensor's starting tier (kObsStartTier), its greedy plan on ResNet-152
  // ended 104-135 persistent tensors elsewhere, and that copy back was 51 of
  // the 79 ms it lost to its expert; these replays took it 57.9% of all-DRAM
  // -> 60.6% in 13 s (Inception-v3 45.7 -> 47.9% in 6 s). With the float it
  // ends 1-4 elsewhere (docs/results/learning.md). 0 = none.
  int max_cyclic_replays = 2000;
  // Then, for each of the incumbent's DRAM choices clipped to the slow tier
  // for want of room, replays that evict one of the DRAM choices holding
  // room at its kernel (up to `blockers_per_clip`, the least sure first).
  // ResNet-152 from the greedy plan: 58.0 -> 58.7% in 6 s. 0 = none.
  int max_blocker_replays = 500;
  int blockers_per_clip = 4;
  // Replays resume the incumbent's episode at a checkpoint before their
  // first flip and end where their state is the incumbent's again
  // (PlacementEnv::Resume, FinishAs): the same plans as whole episodes in
  // a fraction of the steps (each new incumbent is played whole to check;
  // PlanSearchResult::shortening_mismatches). False: every replay plays
  // the whole episode.
  bool shortened_replays = true;
  // Shifts of the DRAM preference tried after the greedy episode: a bias b
  // plays "DRAM when score(DRAM) - score(slow) > b" (greedy is b = 0). In
  // units of DQN's Q-values, whose large-margin loss separates the expert's
  // action by 0.8 (DqnConfig::demo_margin).
  std::vector<float> biases = {-0.2f, -0.1f, 0.1f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
  // In async mode, episodes are compared by their plans with the copies
  // moved to the boundaries where they are exposed least
  // (envs/copy_schedule.h), and the best plan is returned so: the MDP
  // issues a prefetch at the kernel before the use, which crowds copies
  // under a few kernels. False: by the episodes' own plans.
  bool schedule_async_copies = true;
  // The best plan's copied tensors each tried in one tier all iteration,
  // priced by the cost model on the plan itself, outside the MDP
  // (envs/plan_polish.h), after its copies are scheduled. best_episode_plan
  // stays the MDP's. With max_seconds, for polish_share of it at most. Not with
  // max_rollouts 1 (the greedy plan alone).
  // False: the search's plan as it ends.
  bool polish_plan = true;
  // The polish's limit within each search: this share of max_seconds. A
  // tenth was set when the limit was 120 s (ResNet-152's polish took 6.7 s
  // of it). At the 5 s default, 0.5 or 1 left the network's search the
  // same plan on five zoo models (its polish ends sooner) and lifted the
  // searches with heat order or an untrained network in its place by up to
  // 22 points (docs/results/learning.md, session fifty-three).
  double polish_share = 0.1;
  // When the search and its polish end with more than a tenth of
  // max_seconds left: the search again from the polished plan (a starting
  // plan, FollowPlan), up to this many times while each is faster.
  // 0 = none.
  int max_polished_restarts = 8;
  // Then iterated local search: up to max_kicks kicks, while time is left
  // (with max_seconds). A kick moves `kick_tensors` tensors of the best
  // plan wholly to the other tier (one in DRAM all its life to the slow
  // tier; any other to DRAM), drawn at random (kick_seed) from the
  // `kick_pool` tensors the policy was least sure of in the best episode (0:
  // from every tensor); the search goes on from that plan with the kicked
  // tensors held as kicked (otherwise its first single flips undo the
  // kick), and the faster plan is kept. The search and its polish end at a
  // local optimum of their moves; a kick of several tensors at once leaves
  // it. Paper-scale AlexNet async, 120 s: heat order's search 30.98 ->
  // 39.67% of all-DRAM, the network's 37.54 -> 38.25%; VGG19 nothing; the
  // larger models leave no time for a kick (docs/results/learning.md,
  // session fifty). 0 = none.
  int max_kicks = 0;
  int kick_tensors = 8;
  int kick_pool = 24;
  uint64_t kick_seed = 1;
};

// The plan-time search of a trained policy (`bench`'s "+search" policies,
// `train`'s final plan): a plan in seconds. With 5 s the best learned row of
// the 26 cells of the Fig. 14 and outside-the-zoo tables came within 0.54
// points of its 120 s plan (at or above every baseline on all 26), while the
// same search with heat order in the network's place fell 16-22 points below
// the network's on ResNet-152 and Inception-v3 async at both scales, where
// with 120 s it came within 1.6-4.5, and heat order's plan polished for the
// whole 5 s with no search move within 4.3-8.1 (docs/results/learning.md,
// sessions fifty and fifty-one). Where a plan may take minutes, raise
// max_seconds: the network-free searches catch up with time, the network's
// gains little.
inline PlanSearchOptions PlanTimeSearch() {
  PlanSearchOptions o;
  o.max_seconds = 5;
  return o;
}

struct PlanSearchResult {
  EpisodeSummary greedy;        // the policy's own episode
  // The best episode the search found (greedy when nothing beat it); in
  // async mode with schedule_async_copies, its plan and cost are those of
  // the episode's plan with its copies rescheduled.
  EpisodeSummary best;
  // The best episode's own plan, as the MDP made it: what a network can
  // imitate (the MDP cannot say when a copy starts). best.plan without
  // rescheduled copies and without the polish's edits.
  PlacementPlan best_episode_plan;
  int polish_edits = 0;         // PlanPolishResult::changes(): edits kept, tensors best responses moved, copies rescheduled
  double polish_saved_ns = 0;
  double polish_seconds = 0;    // part of `seconds`
  int copies_moved = 0;         // by the copy schedule of the best plan
  double copy_schedule_saved_ns = 0;
  float bias = 0;               // of the biased episode the deviations started from (0: the greedy one)
  // Of the starting plans, the one the search went on from (-1: the
  // policy's own episodes were faster).
  int starting_plan = -1;
  // A starting plan won the start and its search ended with time left, so
  // the search from the policy's own episodes ran too (starting_plan says
  // which of the two was kept; seconds is both).
  bool restarted = false;
  // Searches again from the polished plan (PlanSearchOptions::
  // max_polished_restarts), the last one included when it was not faster.
  int polished_restarts = 0;
  int kicks = 0;                // searches from a kicked best plan (PlanSearchOptions::max_kicks)
  int kick_improvements = 0;    // of them, those that were faster
  // The best episode's tensors the policy decided, the least sure first
  // (the smallest finite gap at any of their decisions).
  std::vector<uint32_t> doubtful_tensors;
  int rollouts = 0;
  int deviations = 0;           // decisions where best differs from what the policy would pick
  int replays = 0;              // single-flip episodes played after the rollouts
  int improvements = 0;         // of the rollouts and the replays together
  int replay_improvements = 0;
  int pair_replays = 0;         // two-flip episodes, after single flips stopped improving
  int pair_improvements = 0;
  int blocker_replays = 0;      // evictions of a clipped DRAM choice's blockers, before the single flips
  int blocker_improvements = 0;
  int cyclic_replays = 0;       // persistent tensors that ended elsewhere than they start, kept in one tier
  int cyclic_improvements = 0;
  int tensor_replays = 0;       // every decision of one tensor in one tier, after single and pair flips
  int tensor_improvements = 0;
  int room_replays = 0;         // a slow-tier use taken to DRAM with room made over its kernel
  int room_improvements = 0;
  int window_replays = 0;       // a tensor in one tier over a stretch of its uses and in the other elsewhere
  int window_improvements = 0;
  int windows_priced_out = 0;   // windows not played: priced at no gain on the incumbent (price_windows)
  // Steps the environment took in the replays, and the steps of the
  // episodes they made: shortened replays walk a fraction of them.
  int64_t replay_steps = 0;
  int64_t replay_episode_steps = 0;
  // Shortened replays whose whole play ended with another plan (none
  // expected; PlanSearchOptions::shortened_replays): the whole play's plan
  // stood and every later replay was played whole.
  int shortening_mismatches = 0;
  double seconds = 0;
};

// One decision of a policy's greedy episode: the tier it chose for `tensor`
// at `kernel`, which holds until `holds_until` (exclusive) unless the tensor
// is touched (PlacementEnv::decision_holds_until), and how sure the policy
// was: the gap between its two scores.
struct PolicyDecision {
  uint32_t kernel = 0;
  uint32_t tensor = 0;
  uint32_t holds_until = 0;
  Tier tier = Tier::kDram;
  float gap = 0;
};

// A kick of the iterated local search (PlanSearchOptions::max_kicks):
// `plan` with `count` tensors drawn at random from `pool` (empty: from
// every tensor; pinned ones never) each moved wholly to one tier: one in
// DRAM all its life to the slow tier, any other to DRAM. The DRAM limit is
// the episode's to keep (FollowPlan's episode clips what does not fit).
// `moved`, when given, marks the drawn tensors by index.
PlacementPlan KickedPlan(const Workload& w, const PlacementPlan& plan, int count, const std::vector<uint32_t>& pool,
                         std::mt19937_64& rng, std::vector<uint8_t>* moved = nullptr);

struct GreedyEpisode {
  EpisodeSummary summary;
  std::vector<PolicyDecision> decisions;  // in the order taken
};

// The policy's greedy episode with its decisions. `env` is reset and left
// done. Throws what `scores` throws, and std::runtime_error for a
// non-finite score.
GreedyEpisode PlayGreedy(PlacementEnv& env, const ActionScores& scores);

// Persistent tensors that `plan` ends in another tier than it starts them:
// the executor copies each back after the last kernel, a cost a policy's
// decisions meet only in the episode's total. Without kObsStartTier a
// network that imitated a plan brought persistent tensors to DRAM for the
// optimizer's update and left them there (ResNet-152: 135 tensors, 168 MB,
// 51 ms of the greedy plan's 79 ms over its expert's;
// docs/results/learning.md). The cyclic replays question them.
struct EndsElsewhereTensor {
  uint32_t tensor = 0;
  Tier start = Tier::kDram;
  Tier end = Tier::kDram;
};
std::vector<EndsElsewhereTensor> EndsElsewhere(const Workload& w, const PlacementPlan& plan);

// A policy that takes `plan`'s tier at every decision (PlanLabels), as sure
// as `scores` where they agree with it and barely where they do not: the
// search from another planner's plan questions first where the network
// doubts it. Reads the decision's kernel and tensor from `env`, which must
// be the environment the scores are asked in.
ActionScores FollowPlan(const PlacementEnv& env, const PlacementPlan& plan, ActionScores scores);

// `env` is reset and left done. Throws what `scores` throws.
//
// `starting_plans` (another planner's, e.g. the ILP the network guides)
// compete with the policy's own rollouts as the episode the search goes on
// from, each played through the MDP with FollowPlan. After that the policy
// decides every decision a starting plan never met. When a starting plan
// wins and its search ends with more than a tenth of max_seconds left, the
// search from the policy's own episodes runs in the time left and the
// faster result is kept (PlanSearchResult::restarted). Each must be for
// env's workload (throws otherwise).
PlanSearchResult SearchPlan(PlacementEnv& env, const ActionScores& scores, const PlanSearchOptions& options,
                            const std::vector<PlacementPlan>& starting_plans = {});

}  // namespace tensortier
