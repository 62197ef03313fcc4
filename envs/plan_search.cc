#include "envs/plan_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "envs/copy_schedule.h"
#include "envs/cost_model.h"
#include "envs/demonstration.h"
#include "envs/plan_polish.h"

namespace tensortier {
namespace {

// One played episode: its actions, how sure the policy was at each (the gap
// between the two scores; infinite where the action is a deviation, so the
// search does not question it again) and whether the action deviates.
struct Episode {
  std::vector<uint64_t> keys;  // DecisionKey of each step
  std::vector<uint8_t> actions;
  std::vector<float> gaps;
  std::vector<uint8_t> deviates;
  std::vector<uint32_t> holds_until;  // PlacementEnv::decision_holds_until of each step
  std::vector<uint8_t> clipped;       // a DRAM choice that did not fit and went to the slow tier
  // For replays that resume this episode and end where they rejoin it:
  std::vector<uint8_t> kernel_start;     // the step is its kernel's first
  std::vector<uint64_t> fingerprints;    // PlacementEnv::fingerprint before the step
  std::vector<double> reward_before;     // the step rewards before the step
  std::vector<std::pair<size_t, PlacementEnv::Checkpoint>> checkpoints;  // (step, checkpoint before it), by step
  EpisodeSummary summary;
  size_t walked = 0;  // steps the env took to play it (a shortened replay's are fewer)
  double scheduled_ns = -1;  // summary.plan's cost with its copies rescheduled (-1: not yet priced)

  // Records the step the env is about to take with action `a`.
  void Record(const PlacementEnv& env, uint64_t key, uint8_t a) {
    keys.push_back(key);
    actions.push_back(a);
    holds_until.push_back(static_cast<uint32_t>(env.decision_holds_until()));
    kernel_start.push_back(env.at_kernel_start());
    fingerprints.push_back(env.fingerprint());
    reward_before.push_back(env.summary().step_reward_sum);
  }
  // base's first `n` steps, as a replay resumed at base's step n took them.
  void CopyPrefix(const Episode& base, size_t n) {
    auto head = [n](const auto& v) { return std::decay_t<decltype(v)>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)); };
    keys = head(base.keys);
    actions = head(base.actions);
    gaps = head(base.gaps);
    deviates = head(base.deviates);
    holds_until = head(base.holds_until);
    clipped = head(base.clipped);
    kernel_start = head(base.kernel_start);
    fingerprints = head(base.fingerprints);
    reward_before = head(base.reward_before);
  }
  // base's steps from `i` on, which a replay that rejoined base at its step i
  // takes alike; the step rewards go on from this episode's `reward_sum`.
  void AppendSuffix(const Episode& base, size_t i, double reward_sum) {
    auto tail = [i](auto& to, const auto& from) { to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(i), from.end()); };
    tail(keys, base.keys);
    tail(actions, base.actions);
    tail(gaps, base.gaps);
    tail(deviates, base.deviates);
    tail(holds_until, base.holds_until);
    tail(clipped, base.clipped);
    tail(kernel_start, base.kernel_start);
    tail(fingerprints, base.fingerprints);
    for (size_t j = i; j < base.reward_before.size(); ++j)
      reward_before.push_back(reward_sum + base.reward_before[j] - base.reward_before[i]);
  }
  // Takes the recorded step in `env` and notes whether its DRAM choice was clipped.
  Observation Take(PlacementEnv& env, uint8_t a) {
    const uint32_t spills = env.summary().spills;
    Observation next = env.Step(a).observation;
    clipped.push_back(env.summary().spills != spills);
    ++walked;
    return next;
  }
};

// The decisions a replay takes the other action at, by DecisionKey.
using Flips = std::vector<uint64_t>;

// A decision's identity across episodes whose step indices differ: the
// kernel and the tensor it places (one decision per tensor per kernel).
uint64_t DecisionKey(const PlacementEnv& env) {
  return (static_cast<uint64_t>(env.current_kernel()) << 32) | env.current_tensor();
}

// The policy's choice at `obs` with its DRAM preference shifted by `bias`;
// records it in `e`.
uint8_t PolicyStep(const ActionScores& scores, const Observation& obs, float bias, Episode& e) {
  auto [dram, slow] = scores(obs);
  if (!std::isfinite(dram) || !std::isfinite(slow))
    throw std::runtime_error("SearchPlan: the policy scored an action as non-finite");
  const float preference = dram - slow - bias;
  const uint8_t a = preference >= 0 ? 0 : 1;
  e.gaps.push_back(std::abs(preference));
  e.deviates.push_back(a != (slow > dram ? 1 : 0));
  return a;
}

// `base`'s action at its step i, or the other one when `flip`; records it in
// `e`. A flipped decision is a deviation, with an infinite gap so that the
// search does not question it again.
uint8_t BaseStep(const Episode& base, size_t i, bool flip, Episode& e) {
  if (flip) {
    e.gaps.push_back(std::numeric_limits<float>::infinity());
    e.deviates.push_back(!base.deviates[i]);
    return static_cast<uint8_t>(1 - base.actions[i]);
  }
  e.gaps.push_back(base.gaps[i]);
  e.deviates.push_back(base.deviates[i]);
  return base.actions[i];
}

// Follows `base` for its first `flip` steps, takes the other action at step
// `flip` (none when flip == base.actions.size()), then the policy with its
// DRAM preference shifted by `bias`.
Episode Play(PlacementEnv& env, const ActionScores& scores, const Episode& base, size_t flip, float bias) {
  Episode e;
  Observation obs = env.Reset();
  size_t step = 0;
  while (!env.done()) {
    uint8_t a;
    if (step < flip || (step == flip && flip < base.actions.size())) {
      a = BaseStep(base, step, step == flip, e);
    } else {
      a = PolicyStep(scores, obs, bias, e);
    }
    e.Record(env, DecisionKey(env), a);
    obs = e.Take(env, a);
    ++step;
  }
  e.summary = env.summary();
  return e;
}

// A tensor whose every decision a replay sets to one action, or (at_uses)
// only its decisions at the kernels that touch it (PlacementEnv::
// decision_holds_until is the next kernel), its keep-or-evict decisions in
// between left to the incumbent and the policy.
//
// Or (window) a stretch: the slow tier at the tensor's decisions from
// kernel `from` on that hold no further than kernel `to` (its uses in
// there, the gaps between them), DRAM at every other (or the other way
// round, inside_slow false): evicted after one use and fetched back for a
// later one, or fetched for one stretch of uses only. The row GRU's
// recurrent weights are read every ~46 kernels in the forward pass and
// every ~9 in the backward pass, where the memory peaks; AutoTM-sync keeps
// five of them in DRAM for the forward pass, evicts them over the backward
// pass and fetches them back for the optimizer's update, where the
// fine-tuned network keeps them in the slow tier all the iteration (102
// slow-tier reads; 66.7% of all-DRAM against AutoTM-sync's 68.0%;
// docs/results/learning.md). No flip or whole-tensor pin reaches that
// plan one decision at a time: each of its steps alone costs a copy.
struct Pin {
  uint32_t tensor = ~uint32_t{0};  // none
  uint8_t action = 0;
  bool at_uses = false;
  bool window = false;
  bool inside_slow = true;
  uint32_t from = 0, to = 0;

  // Of a decision at `kernel` (DecisionKey's) that holds until `holds_until`.
  bool Applies(uint64_t key, uint64_t holds_until) const {
    return static_cast<uint32_t>(key) == tensor && (!at_uses || holds_until == (key >> 32) + 1);
  }
  uint8_t Action(uint64_t key, uint64_t holds_until) const {
    if (!window) return action;
    const bool inside = (key >> 32) >= from && holds_until <= to;
    return inside == inside_slow ? 1 : 0;
  }
};

// The window pins worth trying for tensor t: stretches between two of its
// boundaries (the iteration's start and end; after a use, where it can be
// evicted, and at the next use, where it can be fetched), each with the
// slow tier inside and DRAM outside and the other way round. A tensor of
// more than `max_gaps` gaps between uses has the boundaries of its
// `max_gaps` longest only (the windows grow as their square). One of two
// uses or fewer has none: its windows are pins.
std::vector<Pin> WindowPins(const Workload& w, uint32_t t, size_t max_gaps) {
  const std::vector<uint32_t>& uses = w.kernels_of_tensor(t);
  if (uses.size() < 3 || max_gaps == 0) return {};
  std::vector<std::pair<uint32_t, size_t>> gaps;  // (length, index of the use after it)
  for (size_t i = 1; i < uses.size(); ++i) gaps.push_back({uses[i] - uses[i - 1], i});
  std::sort(gaps.begin(), gaps.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<uint32_t> ends = {0, static_cast<uint32_t>(w.num_kernels())};
  for (size_t g = 0; g < gaps.size() && g < max_gaps; ++g) {
    ends.push_back(uses[gaps[g].second - 1] + 1);
    ends.push_back(uses[gaps[g].second]);
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<Pin> pins;
  for (size_t i = 0; i < ends.size(); ++i)
    for (size_t j = i + 1; j < ends.size(); ++j) {
      if (i == 0 && j + 1 == ends.size()) continue;  // the whole iteration: a pin
      for (bool inside_slow : {true, false}) {
        Pin p{t};
        p.window = true;
        p.inside_slow = inside_slow;
        p.from = ends[i];
        p.to = ends[j];
        pins.push_back(p);
      }
    }
  return pins;
}

// Tensors of three uses or more, the costliest in `plan` first (the
// slow-tier penalties and copies the cost model charges them): the
// window replays' order.
std::vector<uint32_t> WindowTensors(const Workload& w, const PlacementPlan& plan) {
  CostReport cost;
  TensorLedger ledger;
  EvaluateValidPlan(w, plan, cost, nullptr, &ledger);
  std::vector<std::pair<double, uint32_t>> costly;
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    const double ns = ledger.slow_penalty_ns[t] + ledger.copy_ns[t];
    if (w.kernels_of_tensor(t).size() >= 3 && ns > 0 && !w.tensors[t].pinned_dram) costly.push_back({ns, t});
  }
  std::sort(costly.begin(), costly.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<uint32_t> order;
  for (const auto& c : costly) order.push_back(c.second);
  return order;
}

// An optimistic price of a window replay before it is played, on the
// incumbent `e`: what the pinned tensor's own slow-tier reads and copies
// would save (its DRAM requests assumed granted; a copy the window adds
// priced at the least it can cost, in async mode the exposed share of one
// under a long kernel), plus, over the kernels where the window frees the
// tensor's DRAM, all that the incumbent's clipped DRAM requests there cost
// (the request's slow-tier read and two copies of its tensor). `steps` are
// the incumbent's steps of the pinned tensor in order, `clipped` its steps
// whose DRAM choice was clipped. A window priced at no gain can improve the
// plan only through decisions the incumbent never met; on ResNet-152 83% of
// the windows are priced so, and one of the 19 that improved
// (docs/results/learning.md, session forty-one).
double WindowGainBoundNs(const Workload& w, MigrationMode mode, const Episode& e, const Pin& pin,
                         const std::vector<size_t>& steps, const std::vector<size_t>& clipped) {
  const Tensor& tensor = w.tensors.at(pin.tensor);
  const double added_copy_share = mode == MigrationMode::kAsync ? w.device.async_copy_exposure : 1.0;
  auto incumbent_slow = [&](size_t i) -> bool { return e.actions[i] != 0 || e.clipped[i]; };
  auto window_slow = [&](size_t i) -> bool { return pin.Action(e.keys[i], e.holds_until[i]) != 0; };
  // The tensor's slow-tier reads and copies with its tier at each step.
  auto own_ns = [&](auto slow_at, double copy_share) {
    double ns = 0;
    bool first = false, last = false;
    for (size_t n = 0; n < steps.size(); ++n) {
      const size_t i = steps[n];
      const bool slow = slow_at(i);
      if (slow && e.holds_until[i] == (e.keys[i] >> 32) + 1)
        if (const Access* a = w.FindAccess(e.keys[i] >> 32, pin.tensor)) ns += a->slow_penalty_ns;
      if (n == 0) first = slow;
      else if (slow != last) ns += copy_share * CopyTimeNs(w, tensor.size_bytes, slow ? Tier::kSlow : Tier::kDram);
      last = slow;
    }
    if (tensor.persistent && !steps.empty() && last != first)  // the copy back after the last kernel
      ns += copy_share * CopyTimeNs(w, tensor.size_bytes, first ? Tier::kSlow : Tier::kDram);
    return ns;
  };
  double gain = own_ns(incumbent_slow, 1.0) - own_ns(window_slow, added_copy_share);
  for (size_t n : steps) {
    if (incumbent_slow(n) || !window_slow(n)) continue;  // frees no DRAM here
    const uint64_t from = e.keys[n] >> 32, to = e.holds_until[n];
    for (size_t c : clipped) {
      const uint64_t kernel = e.keys[c] >> 32;
      if (kernel >= to || e.holds_until[c] <= from) continue;
      const uint32_t u = static_cast<uint32_t>(e.keys[c]);
      if (const Access* a = w.FindAccess(kernel, u)) gain += a->slow_penalty_ns;
      gain += 2 * CopyTimeNs(w, w.tensors[u].size_bytes, Tier::kDram);
    }
  }
  return gain;
}

// How a replay plays: resumed at `base`'s last checkpoint before the first
// step it can change and ended where it rejoins `base` (PlacementEnv::
// Resume, FinishAs), or the whole episode, taking checkpoints (an
// incumbent's, for the replays that follow it).
enum class ReplayMode : uint8_t { kShortened, kWhole, kWholeWithCheckpoints };

// Steps between checkpoints: a replay walks at most this many before its
// first changed step. Each holds a copy of the env's per-tensor and
// per-kernel state (about 0.3 MB on ResNet-152).
constexpr size_t kCheckpointEverySteps = 256;

// Takes the other action at the decisions `flips` names and, everywhere
// else, the action `base` took at the same (kernel, tensor); the policy
// decides only the decisions `base` never met (the flip can change which
// tensors a kernel asks about). So a candidate differs from the incumbent's
// plan by those decisions and their consequences, where Play's continuation re-decides
// everything after the flip. No network call for the decisions kept, so a
// replay costs little more than the environment's own steps, and with
// ReplayMode::kShortened only those between base's checkpoint before the
// first flip and the kernel where its state is base's again (after every
// flip; with a pin, after the pinned tensor dies: never for a persistent
// one). A pinned tensor takes the pin's action at every decision, met by
// `base` or not.
Episode Replay(PlacementEnv& env, const ActionScores& scores, const Episode& base,
               const std::unordered_map<uint64_t, size_t>& step_of, Flips flips,
               float bias, Pin pin = {}, ReplayMode mode = ReplayMode::kShortened) {
  std::sort(flips.begin(), flips.end());  // looked up at every step
  Episode e;
  Observation obs{};
  bool resumed = false;
  uint64_t rejoin_after = ~uint64_t{0};  // the kernel after which the replay may rejoin base
  if (mode == ReplayMode::kShortened) {
    // The first step that can differ from base's: a flip's, or the pinned tensor's first.
    size_t first = base.keys.size();
    for (uint64_t f : flips) {
      auto it = step_of.find(f);
      if (it != step_of.end()) first = std::min(first, it->second);
    }
    if (pin.tensor != Pin{}.tensor) {
      // Up to the pinned tensor's first decision in base that the pin takes
      // otherwise, the replay is base; after its last, base's decisions of
      // it are the pin's, so where the state is base's again the replay may
      // rejoin it (a window changes a few of a persistent tensor's many).
      rejoin_after = 0;
      for (size_t i = 0; i < base.keys.size(); ++i)
        if (pin.Applies(base.keys[i], base.holds_until[i]) &&
            pin.Action(base.keys[i], base.holds_until[i]) != base.actions[i]) {
          first = std::min(first, i);
          rejoin_after = base.keys[i] >> 32;
        }
    } else {
      rejoin_after = 0;
      for (uint64_t f : flips) rejoin_after = std::max(rejoin_after, f >> 32);
    }
    auto cp = std::upper_bound(base.checkpoints.begin(), base.checkpoints.end(), first,
                               [](size_t step, const auto& c) { return step < c.first; });
    if (cp != base.checkpoints.begin()) {
      --cp;
      obs = env.Resume(cp->second, base.summary.plan);
      e.CopyPrefix(base, cp->first);
      resumed = true;
    }
  }
  if (!resumed) obs = env.Reset();
  while (!env.done()) {
    const uint64_t key = DecisionKey(env);
    auto it = step_of.find(key);
    if (it != step_of.end() && env.at_kernel_start() && env.current_kernel() > rejoin_after &&
        base.kernel_start[it->second] && base.fingerprints[it->second] == env.fingerprint()) {
      // In base's state at the start of this kernel: base's decisions from here on.
      const size_t i = it->second;
      EpisodeSummary base_here;
      base_here.steps = static_cast<uint32_t>(i);
      base_here.spills = static_cast<uint32_t>(std::count(base.clipped.begin(), base.clipped.begin() + static_cast<std::ptrdiff_t>(i), uint8_t{1}));
      base_here.step_reward_sum = base.reward_before[i];
      const double reward_sum = env.summary().step_reward_sum;
      env.FinishAs(base.summary, base_here);
      e.AppendSuffix(base, i, reward_sum);
      break;
    }
    if (mode == ReplayMode::kWholeWithCheckpoints && env.at_kernel_start() &&
        (e.checkpoints.empty() || e.keys.size() - e.checkpoints.back().first >= kCheckpointEverySteps))
      e.checkpoints.emplace_back(e.keys.size(), env.TakeCheckpoint());
    uint8_t a;
    if (pin.Applies(key, env.decision_holds_until())) {
      a = pin.Action(key, env.decision_holds_until());
      const bool same = it != step_of.end() && base.actions[it->second] == a;
      e.gaps.push_back(same ? base.gaps[it->second] : std::numeric_limits<float>::infinity());
      e.deviates.push_back(same ? base.deviates[it->second] : 1);
    } else {
      a = it == step_of.end() ? PolicyStep(scores, obs, bias, e)
                              : BaseStep(base, it->second, std::binary_search(flips.begin(), flips.end(), key), e);
    }
    e.Record(env, key, a);
    obs = e.Take(env, a);
  }
  e.summary = env.summary();
  return e;
}

// Whole-tensor moves: each tensor the incumbent decides, every decision in
// the tier it holds least often (both when it holds both), and where it
// uses the tensor from the slow tier, DRAM at every use with the
// keep-or-evict decisions between left as they were; the least sure
// tensors first (their least sure decision's gap). A single flip changes a
// tensor's tier until its next decision. Where the searched plan differs
// from AutoTM-sync's on ResNet-152 and Inception-v3 it is gradient buffers
// that AutoTM keeps in DRAM at their three uses and evicts over the memory
// peak in between, and the plan keeps in the slow tier all the iteration
// (docs/results/learning.md, session twenty-two).
std::vector<Pin> TensorPins(const Episode& e) {
  struct Held {
    float least_gap = std::numeric_limits<float>::infinity();
    uint32_t dram = 0, slow = 0, slow_uses = 0;
  };
  std::unordered_map<uint32_t, Held> held;
  for (size_t i = 0; i < e.keys.size(); ++i) {
    Held& h = held[static_cast<uint32_t>(e.keys[i])];
    if (std::isfinite(e.gaps[i])) h.least_gap = std::min(h.least_gap, e.gaps[i]);
    const bool dram = e.actions[i] == 0 && !e.clipped[i];
    (dram ? h.dram : h.slow) += 1;
    h.slow_uses += !dram && e.holds_until[i] == (e.keys[i] >> 32) + 1;
  }
  std::vector<std::pair<float, Pin>> pins;
  for (const auto& [tensor, h] : held) {
    if (!std::isfinite(h.least_gap)) continue;  // every decision a deviation already
    if (h.slow > 0) pins.push_back({h.least_gap, Pin{tensor, 0}});
    if (h.dram > 0) pins.push_back({h.least_gap, Pin{tensor, 1}});
    if (h.slow_uses > 0) pins.push_back({h.least_gap, Pin{tensor, 0, true}});
  }
  std::sort(pins.begin(), pins.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first
                              : std::make_tuple(a.second.tensor, a.second.action, a.second.at_uses) <
                                    std::make_tuple(b.second.tensor, b.second.action, b.second.at_uses);
  });
  std::vector<Pin> order;
  order.reserve(pins.size());
  for (const auto& p : pins) order.push_back(p.second);
  return order;
}

std::unordered_map<uint64_t, size_t> StepOf(const Episode& e) {
  std::unordered_map<uint64_t, size_t> step_of;
  step_of.reserve(e.keys.size());
  for (size_t i = 0; i < e.keys.size(); ++i) step_of.emplace(e.keys[i], i);
  return step_of;
}

// `e` played again whole with its own decisions, taking checkpoints, so
// that replays can resume it.
Episode WithCheckpoints(PlacementEnv& env, const ActionScores& scores, const Episode& e, float bias) {
  return Replay(env, scores, e, StepOf(e), {}, bias, {}, ReplayMode::kWholeWithCheckpoints);
}

bool SameEpisode(const Episode& a, const Episode& b) {
  return a.summary.plan == b.summary.plan && a.summary.cost.total_ns == b.summary.cost.total_ns && a.keys == b.keys;
}

// The incumbent's decisions the search may question, the closest first;
// deviations (infinite gap) are not questioned again.
std::vector<size_t> Doubtful(const Episode& e, size_t limit) {
  std::vector<size_t> order;
  for (size_t i = 0; i < e.gaps.size(); ++i)
    if (std::isfinite(e.gaps[i])) order.push_back(i);
  const size_t n = std::min(order.size(), limit);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](size_t a, size_t b) { return e.gaps[a] < e.gaps[b]; });
  order.resize(n);
  return order;
}

// Partners of the incumbent's step i for a pair move: steps that took the
// other action over an overlapping stretch of kernels ([kernel, holds_until)
// of each), the least sure first. Where DRAM is short a single flip is paid
// by a displaced tensor (keep one more: a later DRAM request is clipped;
// evict one: its room goes unused); flipping two decisions of opposite
// directions together trades one tensor's DRAM for another's.
std::vector<size_t> Partners(const Episode& e, size_t i, size_t limit) {
  const uint64_t kernel_i = e.keys[i] >> 32;
  std::vector<size_t> partners;
  for (size_t j = 0; j < e.keys.size(); ++j) {
    const uint64_t kernel_j = e.keys[j] >> 32;
    if (j == i || e.actions[j] == e.actions[i] || !std::isfinite(e.gaps[j])) continue;
    if (kernel_j < e.holds_until[i] && kernel_i < e.holds_until[j]) partners.push_back(j);
  }
  const size_t n = std::min(partners.size(), limit);
  std::partial_sort(partners.begin(), partners.begin() + static_cast<std::ptrdiff_t>(n), partners.end(),
                    [&](size_t a, size_t b) { return e.gaps[a] < e.gaps[b]; });
  partners.resize(n);
  return partners;
}

// The incumbent's DRAM choices that hold room at the kernel of its step c,
// whose DRAM choice was clipped: decisions before c that kept another tensor
// in DRAM over that kernel ([kernel, holds_until) of each), the least sure
// first. A policy that imitates a plan goes wrong mostly at near-ties, and
// one extra DRAM choice there clips the sure ones after it; evicting the
// doubtful one that took their room undoes that cascade at its source.
std::vector<size_t> Blockers(const Episode& e, size_t c, size_t limit) {
  const uint64_t kernel_c = e.keys[c] >> 32;
  const uint32_t tensor_c = static_cast<uint32_t>(e.keys[c]);
  std::vector<size_t> blockers;
  for (size_t j = 0; j < c; ++j) {
    if (e.actions[j] != 0 || e.clipped[j] || !std::isfinite(e.gaps[j])) continue;
    if (static_cast<uint32_t>(e.keys[j]) == tensor_c) continue;
    if ((e.keys[j] >> 32) <= kernel_c && kernel_c < e.holds_until[j]) blockers.push_back(j);
  }
  const size_t n = std::min(blockers.size(), limit);
  std::partial_sort(blockers.begin(), blockers.begin() + static_cast<std::ptrdiff_t>(n), blockers.end(),
                    [&](size_t a, size_t b) { return e.gaps[a] < e.gaps[b]; });
  blockers.resize(n);
  return blockers;
}

// Room moves: the uses the incumbent reads from the slow tier (a slow
// choice, or a DRAM choice clipped), the costliest first (the tensor's slow
// penalty there), each as a replay that takes DRAM there and evicts DRAM
// choices that hold room over that kernel through a gap (kept over
// [kernel, holds_until) without a use at it) until they free the
// tensor's size: the least sure first, or the largest first (the fewest
// copies). A blocker replay evicts one; a large tensor needs several. Where
// the searched plan lost to AutoTM-sync on ResNet-152 it was mostly 8-9 MB
// backward temporaries read from the slow tier, which the ILP gives DRAM by
// evicting a few gradient buffers over that kernel.
std::vector<Flips> RoomMoves(const Workload& w, const Episode& e, size_t limit) {
  std::vector<std::pair<double, size_t>> uses;
  for (size_t i = 0; i < e.keys.size(); ++i) {
    if (e.actions[i] == 0 && !e.clipped[i]) continue;
    if (e.holds_until[i] != (e.keys[i] >> 32) + 1) continue;
    const Access* a = w.FindAccess(e.keys[i] >> 32, static_cast<uint32_t>(e.keys[i]));
    if (a && a->slow_penalty_ns > 0) uses.push_back({a->slow_penalty_ns, i});
  }
  const size_t n = std::min(uses.size(), limit);
  std::partial_sort(uses.begin(), uses.begin() + static_cast<std::ptrdiff_t>(n), uses.end(),
                    [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<Flips> moves;
  for (size_t u = 0; u < n; ++u) {
    const size_t c = uses[u].second;
    const uint64_t kernel_c = e.keys[c] >> 32;
    const uint64_t need = w.tensors.at(static_cast<uint32_t>(e.keys[c])).size_bytes;
    std::vector<size_t> holders = Blockers(e, c, c);
    holders.erase(std::remove_if(holders.begin(), holders.end(),
                                 [&](size_t j) { return e.holds_until[j] <= (e.keys[j] >> 32) + 1; }),  // a use, not a gap kept
                  holders.end());
    auto size_of = [&](size_t j) { return w.tensors.at(static_cast<uint32_t>(e.keys[j])).size_bytes; };
    for (bool largest_first : {false, true}) {
      std::sort(holders.begin(), holders.end(), [&](size_t a, size_t b) {
        if (largest_first && size_of(a) != size_of(b)) return size_of(a) > size_of(b);
        return e.gaps[a] != e.gaps[b] ? e.gaps[a] < e.gaps[b] : a < b;
      });
      Flips flips;
      if (e.actions[c] != 0) flips.push_back(e.keys[c]);
      uint64_t freed = 0, first_kernel = kernel_c;
      for (size_t j : holders) {
        if (freed >= need) break;
        flips.push_back(e.keys[j]);
        freed += size_of(j);
        first_kernel = std::min(first_kernel, e.keys[j] >> 32);
      }
      if (freed == 0) continue;
      std::sort(flips.begin(), flips.end());  // to compare with the last move
      if (moves.empty() || moves.back() != flips) moves.push_back(flips);
      // Also with the DRAM choices clipped from the first eviction on kept
      // in the slow tier, as they were: granted, they take the room made
      // for c (or use it better: both are tried).
      for (size_t j = 0; j < c; ++j)
        if (e.clipped[j] && (e.keys[j] >> 32) >= first_kernel) flips.push_back(e.keys[j]);
      std::sort(flips.begin(), flips.end());
      if (moves.back() != flips) moves.push_back(std::move(flips));
    }
  }
  return moves;
}

}  // namespace

std::vector<EndsElsewhereTensor> EndsElsewhere(const Workload& w, const PlacementPlan& plan) {
  std::vector<Tier> tier = plan.initial_tiers;
  for (const Migration& m : plan.migrations)
    if (m.tensor < tier.size()) tier[m.tensor] = m.to;
  std::vector<EndsElsewhereTensor> tensors;
  for (uint32_t t = 0; t < tier.size() && t < w.tensors.size(); ++t)
    if (w.tensors[t].persistent && tier[t] != plan.initial_tiers[t]) tensors.push_back({t, plan.initial_tiers[t], tier[t]});
  return tensors;
}

GreedyEpisode PlayGreedy(PlacementEnv& env, const ActionScores& scores) {
  if (!scores) throw std::invalid_argument("PlayGreedy: no action scores");
  Episode e = Play(env, scores, Episode{}, 0, 0.0f);
  GreedyEpisode g;
  g.decisions.reserve(e.keys.size());
  for (size_t i = 0; i < e.keys.size(); ++i) {
    PolicyDecision d;
    d.kernel = static_cast<uint32_t>(e.keys[i] >> 32);
    d.tensor = static_cast<uint32_t>(e.keys[i]);
    d.holds_until = e.holds_until[i];
    d.tier = e.actions[i] == 0 ? Tier::kDram : Tier::kSlow;
    d.gap = e.gaps[i];
    g.decisions.push_back(d);
  }
  g.summary = std::move(e.summary);
  return g;
}

ActionScores FollowPlan(const PlacementEnv& env, const PlacementPlan& plan, ActionScores scores) {
  if (!scores) throw std::invalid_argument("FollowPlan: no action scores");
  auto labels = std::make_shared<const PlanLabels>(env.workload(), plan);
  // So sure that a disagreement is questioned before every agreement the
  // network is unsure of, yet finite: a flipped decision's gap is infinite.
  constexpr float kDisagreementGap = 1e-6f;
  return [&env, labels, scores = std::move(scores)](const Observation& obs) -> std::pair<float, float> {
    const auto [dram, slow] = scores(obs);
    const int label = labels->At(env.current_tensor(), env.current_kernel(), env.decision_holds_until());
    const float preference = dram - slow;  // non-finite scores stay so, for the search to refuse
    const bool agrees = (preference >= 0) == (label == 0);
    const float sure = !std::isfinite(preference) ? preference : agrees ? std::abs(preference) : kDisagreementGap;
    return label == 0 ? std::pair<float, float>{sure, 0.0f} : std::pair<float, float>{0.0f, sure};
  };
}

namespace {

// The search from the fastest of the policy's episodes and `starting_plans`
// (from the first starting plan whatever its speed with `force_start`: a
// kicked plan is slower than the plan it was kicked from by design).
PlanSearchResult SearchOnce(PlacementEnv& env, const ActionScores& scores, const PlanSearchOptions& options,
                            const std::vector<PlacementPlan>& starting_plans, bool force_start = false) {
  if (!scores) throw std::invalid_argument("SearchPlan: no action scores");
  if (options.max_rollouts < 1) throw std::invalid_argument("SearchPlan: max_rollouts must be at least 1");
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >= options.max_seconds;
  };

  // In async mode an episode is worth its plan with the copies rescheduled
  // (priced once per episode): a plan whose copies crowd under a few
  // kernels can be the better one once they are spread.
  const bool schedule = options.schedule_async_copies && env.config().mode == MigrationMode::kAsync;
  auto worth = [&](Episode& e) {
    if (e.scheduled_ns < 0) e.scheduled_ns = ScheduleValidAsyncCopies(env.workload(), e.summary.plan).cost.total_ns;
    return e.scheduled_ns;
  };
  auto faster = [&](Episode& a, Episode& b) {
    if (!schedule || a.summary.oom || b.summary.oom) return FasterEpisode(a.summary, b.summary);
    return worth(a) < worth(b) * (1 - 1e-12);
  };

  PlanSearchResult result;
  Episode incumbent = Play(env, scores, Episode{}, 0, 0.0f);  // no step to flip: the greedy episode
  result.rollouts = 1;
  result.greedy = incumbent.summary;
  for (float bias : options.biases) {
    if (result.rollouts >= options.max_rollouts || out_of_time()) break;
    if (!std::isfinite(bias)) throw std::invalid_argument("SearchPlan: biases must be finite");
    if (bias == 0) continue;
    Episode biased = Play(env, scores, Episode{}, 0, bias);
    ++result.rollouts;
    if (faster(biased, incumbent)) {
      incumbent = std::move(biased);
      result.bias = bias;
    }
  }
  for (size_t i = 0; i < starting_plans.size(); ++i) {
    Episode started = Play(env, FollowPlan(env, starting_plans[i], scores), Episode{}, 0, 0.0f);
    ++result.rollouts;
    if ((force_start && i == 0) || faster(started, incumbent)) {
      incumbent = std::move(started);
      result.bias = 0;
      result.starting_plan = static_cast<int>(i);
    }
  }
  bool improved = true;
  while (improved && result.rollouts < options.max_rollouts && !out_of_time()) {
    improved = false;
    const std::vector<size_t> order =
        Doubtful(incumbent, static_cast<size_t>(std::max(options.candidates_per_round, 0)));
    for (size_t c = 0; c < order.size() && result.rollouts < options.max_rollouts && !out_of_time(); ++c) {
      const size_t step = order[c];
      Episode candidate = Play(env, scores, incumbent, step, result.bias);
      ++result.rollouts;
      if (faster(candidate, incumbent)) {
        incumbent = std::move(candidate);
        ++result.improvements;
        improved = true;
        break;
      }
    }
  }
  // Then replays that keep the rest of the incumbent's plan: the cyclic
  // and the blocker replays, then passes of single flips over its doubtful
  // decisions (an improvement is kept and the pass goes on from it:
  // restarting at the closest decision would retry the ones that just
  // failed) until a pass improves nothing; then a pass of pair moves, which
  // goes back to single flips when it improves. A search that improves
  // nothing ends.
  ReplayMode replay_mode = options.shortened_replays ? ReplayMode::kShortened : ReplayMode::kWhole;
  bool searching = options.max_rollouts > 1;  // 1 rollout is the greedy plan alone
  // Every incumbent is played again whole, with checkpoints. A shortened
  // replay must end with the plan its whole play makes; if one ever does not
  // (a state the fingerprint misses), the whole play stands and the search
  // goes on with whole replays: slower, never wrong.
  auto played_whole = [&](Episode e) {
    if (replay_mode != ReplayMode::kShortened) return e;
    Episode whole = WithCheckpoints(env, scores, e, result.bias);
    if (!SameEpisode(whole, e)) {
      ++result.shortening_mismatches;
      replay_mode = ReplayMode::kWhole;
    }
    return whole;
  };
  if (searching) incumbent = played_whole(std::move(incumbent));
  std::unordered_map<uint64_t, size_t> step_of = StepOf(incumbent);
  uint64_t version = 0;  // incumbents the replays made so far
  auto try_replay = [&](const Flips& flips, Pin pin = {}) {
    Episode candidate = Replay(env, scores, incumbent, step_of, flips, result.bias, pin, replay_mode);
    result.replay_steps += static_cast<int64_t>(candidate.walked);
    result.replay_episode_steps += static_cast<int64_t>(candidate.keys.size());
    if (!faster(candidate, incumbent)) return false;
    Episode kept = played_whole(std::move(candidate));
    if (!faster(kept, incumbent)) return false;  // only after a mismatch
    incumbent = std::move(kept);
    ++result.improvements;
    ++version;
    step_of = StepOf(incumbent);
    return true;
  };
  auto doubtful_keys = [&] {
    std::vector<uint64_t> keys;
    for (size_t step : Doubtful(incumbent, incumbent.gaps.size())) keys.push_back(incumbent.keys[step]);
    return keys;
  };
  // First the persistent tensors that end elsewhere than they start: each
  // kept in its starting tier all the iteration, or in its last one; passes
  // until one improves nothing.
  for (bool improved = searching; improved && !out_of_time();) {
    improved = false;
    for (const EndsElsewhereTensor& t : EndsElsewhere(env.workload(), incumbent.summary.plan)) {
      for (Tier tier : {t.start, t.end}) {
        if (result.cyclic_replays >= options.max_cyclic_replays || out_of_time()) break;
        ++result.cyclic_replays;
        if (try_replay({}, Pin{t.tensor, static_cast<uint8_t>(tier == Tier::kDram ? 0 : 1)})) {
          ++result.cyclic_improvements;
          improved = true;
          break;
        }
      }
    }
  }
  // Then the clipped DRAM choices: passes over them, each trying its
  // least sure blockers, until a pass improves nothing.
  for (bool improved = searching; improved && !out_of_time();) {
    improved = false;
    std::vector<uint64_t> clipped_keys;
    for (size_t i = 0; i < incumbent.keys.size(); ++i)
      if (incumbent.clipped[i]) clipped_keys.push_back(incumbent.keys[i]);
    for (uint64_t key : clipped_keys) {
      if (result.blocker_replays >= options.max_blocker_replays || out_of_time()) break;
      auto it = step_of.find(key);
      if (it == step_of.end() || !incumbent.clipped[it->second]) continue;  // an improvement made room
      for (size_t b : Blockers(incumbent, it->second, static_cast<size_t>(std::max(options.blockers_per_clip, 0)))) {
        if (result.blocker_replays >= options.max_blocker_replays || out_of_time()) break;
        ++result.blocker_replays;
        if (try_replay({incumbent.keys[b]})) {
          ++result.blocker_improvements;
          improved = true;
          break;
        }
      }
    }
  }
  // Single flips that keep improving earn more of them (MobileNetV2 async:
  // 13 improvements in the first 2,048); where they rarely do, the other
  // moves get the time (ResNet-152: 7 in 2,048, and 13 in the next 56,000).
  int replay_budget = options.max_replays;
  // Each move's pass is a turn of at most move_turn_share of max_seconds;
  // one cut short goes on where it stopped at its next turn, while the
  // incumbent is the one it was cut on, and the moves after it take theirs.
  const double turn_seconds = options.max_seconds > 0 ? options.move_turn_share * options.max_seconds : 0;
  Clock::time_point turn_start;
  bool cut = false;
  auto turn_over = [&] {
    if (turn_seconds <= 0 || std::chrono::duration<double>(Clock::now() - turn_start).count() < turn_seconds)
      return false;
    cut = true;
    return true;
  };
  // A turn plays one candidate at least, so that a pass always advances.
  struct Turn {
    uint64_t version = ~uint64_t{0};  // of the incumbent it was cut on, or ended on without improving
    size_t next = 0;                  // SIZE_MAX: ended
    size_t next_window = 0;           // window replays: of the tensor `next`, in its priced order
  };
  // Where a move's pass starts: where its last turn stopped, on the same
  // incumbent (a pass that ended without improving is not played again on it).
  auto resume = [&](const Turn& t) { return t.version == version ? t.next : size_t{0}; };
  // A pass that ran to its end: ended on this incumbent unless it improved it.
  auto ended = [&](Turn& t, uint64_t pass_version) {
    if (version == pass_version) t = {version, std::numeric_limits<size_t>::max()};
  };
  // One turn of a move's pass over its `n` candidates: play(i) replays
  // candidate i and says whether it improved; more() whether the move's
  // budget allows another. (`improved`: the rollouts' flag, a round's now.)
  auto take_turn = [&](Turn& turn, size_t n, auto&& more, auto&& play) {
    turn_start = Clock::now();
    const uint64_t pass_version = version;
    const size_t first = std::min(resume(turn), n);
    size_t i = first;
    for (; i < n && more() && !out_of_time(); ++i) {
      if (i > first && turn_over()) {
        turn = {version, i};
        return;
      }
      if (play(i)) improved = true;
    }
    if (i == n) ended(turn, pass_version);
  };
  Turn flip_turn, room_turn, tensor_turn, window_turn;
  std::vector<uint64_t> keys;
  while (searching && !out_of_time()) {
    improved = false;
    cut = false;
    if (resume(flip_turn) == 0) keys = doubtful_keys();
    take_turn(flip_turn, keys.size(), [&] { return result.replays < replay_budget; }, [&](size_t c) {
      if (!step_of.count(keys[c])) return false;  // an earlier improvement removed this decision
      ++result.replays;
      if (!try_replay({keys[c]})) return false;
      ++result.replay_improvements;
      replay_budget += options.replays_per_improvement;
      return true;
    });
    if (improved && !cut) continue;
    for (size_t c = 0; c < keys.size() && result.pair_replays < options.max_pair_replays && !out_of_time(); ++c) {
      auto it = step_of.find(keys[c]);
      if (it == step_of.end()) continue;
      for (size_t partner : Partners(incumbent, it->second, static_cast<size_t>(std::max(options.pair_partners, 0)))) {
        if (result.pair_replays >= options.max_pair_replays || out_of_time()) break;
        ++result.pair_replays;
        if (try_replay({keys[c], incumbent.keys[partner]})) {
          ++result.pair_improvements;
          improved = true;
          break;  // keys[c] is flipped now
        }
      }
    }
    if (improved && !cut) continue;
    const std::vector<Flips> moves =
        RoomMoves(env.workload(), incumbent, static_cast<size_t>(std::max(options.room_uses_per_pass, 0)));
    take_turn(room_turn, moves.size(), [&] { return result.room_replays < options.max_room_replays; }, [&](size_t m) {
      ++result.room_replays;
      if (!try_replay(moves[m])) return false;
      ++result.room_improvements;
      return true;
    });
    if (improved && !cut) continue;
    const std::vector<Pin> pins = TensorPins(incumbent);
    take_turn(tensor_turn, pins.size(), [&] { return result.tensor_replays < options.max_tensor_replays; }, [&](size_t p) {
      ++result.tensor_replays;
      if (!try_replay({}, pins[p])) return false;
      ++result.tensor_improvements;
      return true;
    });
    // (An episode that ran out of memory has no whole plan to price.)
    if ((!improved || cut) && !incumbent.summary.oom) {
      turn_start = Clock::now();
      // The incumbent's steps by tensor and its clipped steps, for pricing
      // windows (WindowGainBoundNs); rebuilt after each improvement.
      std::vector<std::vector<size_t>> steps_of_tensor;
      std::vector<size_t> clipped_steps;
      auto index_incumbent = [&] {
        steps_of_tensor.assign(env.workload().num_tensors(), {});
        clipped_steps.clear();
        for (size_t i = 0; i < incumbent.keys.size(); ++i) {
          const uint32_t t = static_cast<uint32_t>(incumbent.keys[i]);
          if (t < steps_of_tensor.size()) steps_of_tensor[t].push_back(i);
          if (incumbent.clipped[i]) clipped_steps.push_back(i);
        }
      };
      auto price = [&](const Pin& pin) {
        return WindowGainBoundNs(env.workload(), env.config().mode, incumbent, pin, steps_of_tensor[pin.tensor],
                                 clipped_steps);
      };
      if (options.price_windows) index_incumbent();
      const std::vector<uint32_t> tensors = WindowTensors(env.workload(), incumbent.summary.plan);
      // A cut turn goes on at the window it was cut at.
      const uint64_t pass_version = version;
      size_t n = std::min(resume(window_turn), tensors.size());
      size_t first_window = n < tensors.size() && window_turn.version == version ? window_turn.next_window : 0;
      bool played = false;
      for (; n < tensors.size(); ++n, first_window = 0) {
        if (result.window_replays >= options.max_window_replays || out_of_time()) break;
        const uint32_t t = tensors[n];
        std::vector<Pin> pins = WindowPins(env.workload(), t, static_cast<size_t>(std::max(options.window_gaps, 0)));
        std::vector<double> prices;  // of pins, on the incumbent when they were ordered
        if (options.price_windows) {  // the dearest first; those priced at no gain not played
          std::vector<std::pair<double, size_t>> priced;
          for (size_t i = 0; i < pins.size(); ++i) priced.push_back({price(pins[i]), i});
          std::stable_sort(priced.begin(), priced.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
          std::vector<Pin> ordered;
          for (const auto& [ns, i] : priced) {
            ordered.push_back(pins[i]);
            prices.push_back(ns);
          }
          pins = std::move(ordered);
        }
        const uint64_t priced_version = version;
        bool stop = false;
        for (size_t p = std::min(first_window, pins.size()); p < pins.size(); ++p) {
          const Pin& pin = pins[p];
          if (result.window_replays >= options.max_window_replays || out_of_time()) break;
          if (played && turn_over()) {
            window_turn = {version, n, p};
            stop = true;
            break;
          }
          // Priced again after an improvement: the price is the incumbent's.
          if (options.price_windows && (version == priced_version ? prices[p] : price(pin)) <= 0) {
            ++result.windows_priced_out;
            continue;
          }
          ++result.window_replays;
          played = true;
          if (try_replay({}, pin)) {
            ++result.window_improvements;
            improved = true;
            if (options.price_windows) index_incumbent();
          }
        }
        if (stop) break;
      }
      if (n == tensors.size() && !out_of_time() && result.window_replays < options.max_window_replays)
        ended(window_turn, pass_version);
    }
    // A turn cut short has candidates left on this incumbent.
    searching = improved || cut;
  }
  result.best = std::move(incumbent.summary);
  result.best_episode_plan = result.best.plan;
  if (schedule && !result.best.oom) {
    CopyScheduleResult scheduled = ScheduleValidAsyncCopies(env.workload(), result.best.plan);
    if (scheduled.moved > 0) {
      const Workload& w = env.workload();
      result.best.plan = std::move(scheduled.plan);
      result.best.cost = std::move(scheduled.cost);
      result.best.normalised_cost = NormalisedCost(w, result.best.cost.total_ns);
      result.best.price_score = PriceScore(w, result.best.cost.dram_peak_bytes);
      result.copies_moved = scheduled.moved;
      result.copy_schedule_saved_ns = scheduled.saved_ns;
    }
  }
  // After the copy schedule, so that the polish prices the plan as it is
  // returned: before it, on paper ResNet-152 async, its edits left the
  // schedule 9 ms less to save than they saved themselves (1.6 ms).
  if (options.polish_plan && options.max_rollouts > 1 && !result.best.oom) {
    const Workload& w = env.workload();
    // PlanSearchOptions::polish_share of the search's limit at most: on ResNet-152 the network's
    // plan took 6.7 s of 120; heat order's, which needs hundreds of edits, meets it (sessions
    // forty-four, forty-five).
    PlanPolishOptions polish;
    polish.max_seconds = options.polish_share * options.max_seconds;
    PlanPolishResult polished = PolishValidPlan(w, result.best.plan, polish);
    result.polish_edits = polished.changes();
    result.polish_saved_ns = polished.saved_ns;
    result.polish_seconds = polished.seconds;
    if (result.polish_edits > 0) {
      result.best.plan = std::move(polished.plan);
      result.best.cost = std::move(polished.cost);
      result.best.normalised_cost = NormalisedCost(w, result.best.cost.total_ns);
      result.best.price_score = PriceScore(w, result.best.cost.dram_peak_bytes);
    }
  }
  for (uint8_t d : incumbent.deviates) result.deviations += d;
  {  // The tensors the kicks draw from (PlanSearchOptions::kick_pool).
    std::unordered_map<uint32_t, float> least_gap;
    for (size_t i = 0; i < incumbent.keys.size(); ++i) {
      if (!std::isfinite(incumbent.gaps[i])) continue;
      auto [it, fresh] = least_gap.emplace(static_cast<uint32_t>(incumbent.keys[i]), incumbent.gaps[i]);
      if (!fresh) it->second = std::min(it->second, incumbent.gaps[i]);
    }
    std::vector<std::pair<float, uint32_t>> by_gap;
    by_gap.reserve(least_gap.size());
    for (const auto& [tensor, gap] : least_gap) by_gap.push_back({gap, tensor});
    std::sort(by_gap.begin(), by_gap.end());
    for (const auto& g : by_gap) result.doubtful_tensors.push_back(g.second);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace

PlacementPlan KickedPlan(const Workload& w, const PlacementPlan& plan, int count, const std::vector<uint32_t>& pool,
                         std::mt19937_64& rng, std::vector<uint8_t>* moved) {
  std::vector<uint32_t> movable;
  if (pool.empty()) {
    for (uint32_t t = 0; t < w.tensors.size() && t < plan.initial_tiers.size(); ++t)
      if (!w.tensors[t].pinned_dram) movable.push_back(t);
  } else {
    for (uint32_t t : pool)
      if (t < w.tensors.size() && t < plan.initial_tiers.size() && !w.tensors[t].pinned_dram) movable.push_back(t);
  }
  std::vector<uint8_t> migrates(plan.initial_tiers.size(), 0);
  for (const Migration& m : plan.migrations)
    if (m.tensor < migrates.size()) migrates[m.tensor] = 1;
  PlacementPlan kicked = plan;
  std::vector<uint8_t> drawn(plan.initial_tiers.size(), 0);
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(count, 0)), movable.size());
  for (size_t i = 0; i < n; ++i) {
    std::uniform_int_distribution<size_t> pick(i, movable.size() - 1);
    std::swap(movable[i], movable[pick(rng)]);
    const uint32_t t = movable[i];
    drawn[t] = 1;
    kicked.initial_tiers[t] = plan.initial_tiers[t] == Tier::kDram && !migrates[t] ? Tier::kSlow : Tier::kDram;
  }
  kicked.migrations.erase(std::remove_if(kicked.migrations.begin(), kicked.migrations.end(),
                                         [&](const Migration& m) { return m.tensor < drawn.size() && drawn[m.tensor]; }),
                          kicked.migrations.end());
  if (moved) *moved = std::move(drawn);
  return kicked;
}

PlanSearchResult SearchPlan(PlacementEnv& env, const ActionScores& scores, const PlanSearchOptions& options,
                            const std::vector<PlacementPlan>& starting_plans) {
  PlanSearchResult from_start = SearchOnce(env, scores, options, starting_plans);
  // A starting plan won the start and its search ended early: the search
  // from the policy's own episodes in the time left, the faster kept. The
  // faster start is not always the one that leads furthest (paper-scale
  // MobileNetV2 async: 84.12% of all-DRAM from the guided ILP's plan, which
  // was the faster start, 84.63% from the greedy one; learning.md, session
  // thirty). With a tenth of the time or less left, there is no time to search.
  if (options.max_rollouts <= 1) return from_start;
  double seconds = from_start.seconds;
  // The time left, or 0 where a tenth of max_seconds or less is left.
  auto time_left = [&] {
    if (options.max_seconds <= 0) return std::numeric_limits<double>::infinity();
    const double left = options.max_seconds - seconds;
    return left > 0.1 * options.max_seconds ? left : 0.0;
  };
  // A search in the time left, counted in `seconds`.
  auto search_again = [&](const std::vector<PlacementPlan>& starts, bool force_start = false,
                          const ActionScores* with = nullptr) {
    PlanSearchOptions rest = options;
    rest.max_seconds = options.max_seconds > 0 ? time_left() : 0;
    PlanSearchResult again = SearchOnce(env, with ? *with : scores, rest, starts, force_start);
    seconds += again.seconds;
    return again;
  };
  PlanSearchResult kept = std::move(from_start);
  if (kept.starting_plan >= 0 && time_left() > 0) {
    PlanSearchResult own = search_again({});
    if (FasterEpisode(own.best, kept.best)) kept = std::move(own);
    kept.restarted = true;
  }
  // The polish changes a plan where the MDP's moves cannot (the tensors'
  // copy timing, their best responses), and the MDP's moves where the
  // polish cannot: in the time left, the search again from the polished
  // plan, while that pays.
  for (int round = 0; round < options.max_polished_restarts && time_left() > 0; ++round) {
    PlanSearchResult again = search_again({kept.best.plan});
    ++kept.polished_restarts;
    if (!FasterEpisode(again.best, kept.best)) break;
    again.polished_restarts = kept.polished_restarts;
    again.restarted = kept.restarted;
    again.greedy = kept.greedy;
    kept = std::move(again);
  }
  // Iterated local search in the time still left (PlanSearchOptions::max_kicks).
  std::mt19937_64 rng(options.kick_seed);
  for (int kick = 0; kick < options.max_kicks && time_left() > 0; ++kick) {
    const size_t pool_size = options.kick_pool > 0 ? std::min<size_t>(kept.doubtful_tensors.size(), options.kick_pool) : 0;
    const std::vector<uint32_t> pool(kept.doubtful_tensors.begin(),
                                     kept.doubtful_tensors.begin() + static_cast<std::ptrdiff_t>(pool_size));
    std::vector<uint8_t> moved;
    PlacementPlan kicked = KickedPlan(env.workload(), kept.best.plan, options.kick_tensors, pool, rng, &moved);
    // The kicked tensors held as kicked: the policy's scores replaced there
    // by the kicked plan's tiers, surely.
    auto labels = std::make_shared<const PlanLabels>(env.workload(), kicked);
    auto held_tensors = std::make_shared<const std::vector<uint8_t>>(std::move(moved));
    const ActionScores held = [&env, labels, held_tensors, &scores](const Observation& obs) -> std::pair<float, float> {
      const uint32_t t = env.current_tensor();
      if (t >= held_tensors->size() || !(*held_tensors)[t]) return scores(obs);
      constexpr float kSure = 1e6f;
      return labels->At(t, env.current_kernel(), env.decision_holds_until()) == 0 ? std::make_pair(kSure, 0.0f)
                                                                                 : std::make_pair(0.0f, kSure);
    };
    PlanSearchResult again = search_again({kicked}, /*force_start=*/true, &held);
    if (FasterEpisode(again.best, kept.best)) {
      again.polished_restarts = kept.polished_restarts;
      again.restarted = kept.restarted;
      again.greedy = kept.greedy;
      again.kicks = kept.kicks;
      again.kick_improvements = kept.kick_improvements + 1;
      kept = std::move(again);
    }
    ++kept.kicks;
  }
  kept.seconds = seconds;
  return kept;
}

}  // namespace tensortier
