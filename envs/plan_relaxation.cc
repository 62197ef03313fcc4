#include "envs/plan_relaxation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tensortier {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One plannable tensor as the dynamic programme sees it: the kernels where
// its tier matters (allocation, uses, free), each one's slow-tier penalty.
struct TensorEvents {
  uint32_t tensor = 0;
  uint64_t size_bytes = 0;
  bool persistent = false;
  double to_dram_ns = 0, to_slow_ns = 0;
  std::vector<uint32_t> kernels;  // ascending, distinct
  std::vector<double> penalty_ns;
};

// Per event: in DRAM there; per gap between events i and i + 1, where both
// are in DRAM: kept there over the kernels between (else evicted after i and
// fetched for i + 1).
struct Schedule {
  std::vector<uint8_t> dram;
  std::vector<uint8_t> kept;
  double cost_ns = 0;  // penalties and copies, without prices
};

// What a schedule may use: DRAM at an event, and kept in DRAM over a gap.
// Empty = anything.
struct Allowed {
  const std::vector<uint8_t>* dram = nullptr;
  const std::vector<uint8_t>* kept = nullptr;
};

// Cheapest schedule of `e` with a price per byte of DRAM at each kernel
// (`price_prefix`[k] = the prices of kernels before k; null = none).
// Returns the priced cost; out->cost_ns is the same schedule without prices.
double Solve(const TensorEvents& e, const std::vector<double>* price_prefix, const Allowed& allowed, Schedule* out) {
  const size_t n = e.kernels.size();
  const double s = static_cast<double>(e.size_bytes);
  auto price = [&](uint32_t from, uint32_t to_exclusive) {  // kernels [from, to)
    return price_prefix && to_exclusive > from ? s * ((*price_prefix)[to_exclusive] - (*price_prefix)[from]) : 0.0;
  };
  auto dram_ok = [&](size_t i) { return !allowed.dram || (*allowed.dram)[i]; };
  auto kept_ok = [&](size_t i) { return !allowed.kept || (*allowed.kept)[i]; };
  double best = kInf;
  // state 0 = slow, 1 = DRAM; the DP runs once per starting tier of a
  // persistent tensor (it must end there or be copied back).
  std::vector<double> v[2] = {std::vector<double>(n), std::vector<double>(n)};
  std::vector<double> c[2] = {std::vector<double>(n), std::vector<double>(n)};  // unpriced
  std::vector<uint8_t> from[2] = {std::vector<uint8_t>(n), std::vector<uint8_t>(n)};
  std::vector<uint8_t> via_keep(n, 0);  // for state DRAM from DRAM
  Schedule candidate;
  // A persistent tensor starts each iteration where the last one ended it
  // (or pays the copy back): one pass per starting tier; another tensor
  // starts in either.
  for (int pass = 0; pass < (e.persistent ? 2 : 1); ++pass) {
    const int start = e.persistent ? pass : -1;
    if (start == 1 && !dram_ok(0)) continue;
    v[0][0] = start != 1 ? e.penalty_ns[0] : kInf;
    c[0][0] = e.penalty_ns[0];
    v[1][0] = start != 0 && dram_ok(0) ? price(e.kernels[0], e.kernels[0] + 1) : kInf;
    c[1][0] = 0;
    for (size_t i = 1; i < n; ++i) {
      const uint32_t a = e.kernels[i - 1], b = e.kernels[i];
      const bool interior = b > a + 1;
      // To slow at i.
      {
        const double ss = v[0][i - 1], ds = v[1][i - 1] + e.to_slow_ns;
        from[0][i] = ds < ss ? 1 : 0;
        v[0][i] = std::min(ss, ds) + e.penalty_ns[i];
        c[0][i] = (ds < ss ? c[1][i - 1] + e.to_slow_ns : c[0][i - 1]) + e.penalty_ns[i];
      }
      // To DRAM at i.
      if (!dram_ok(i)) {
        v[1][i] = kInf;
        continue;
      }
      const double sd = v[0][i - 1] + e.to_dram_ns;
      const double keep = kept_ok(i - 1) ? v[1][i - 1] + price(a + 1, b) : kInf;
      const double cycle = interior ? v[1][i - 1] + e.to_slow_ns + e.to_dram_ns : kInf;
      const double dd = std::min(keep, cycle);
      const double here = price(b, b + 1);
      if (sd <= dd) {
        from[1][i] = 0;
        v[1][i] = sd + here;
        c[1][i] = c[0][i - 1] + e.to_dram_ns;
      } else {
        from[1][i] = 1;
        via_keep[i] = keep <= cycle;
        v[1][i] = dd + here;
        c[1][i] = c[1][i - 1] + (keep <= cycle ? 0 : e.to_slow_ns + e.to_dram_ns);
      }
    }
    for (int end = 0; end < 2; ++end) {
      double back = 0;
      if (e.persistent && end != start) back = end == 1 ? e.to_slow_ns : e.to_dram_ns;
      const double total = v[end][n - 1] + back;
      if (!(total < best)) continue;
      best = total;
      if (!out) continue;
      candidate.dram.assign(n, 0);
      candidate.kept.assign(n > 0 ? n - 1 : 0, 0);
      candidate.cost_ns = c[end][n - 1] + back;
      int state = end;
      for (size_t i = n - 1;; --i) {
        candidate.dram[i] = static_cast<uint8_t>(state);
        if (i == 0) break;
        const int prev = state == 0 ? from[0][i] : from[1][i];
        if (state == 1 && prev == 1) candidate.kept[i - 1] = via_keep[i];
        state = prev;
      }
      *out = candidate;
    }
  }
  return best;
}

// The last kernel of the DRAM x holds from event i (in DRAM there): the
// kernel before the next event where it is kept over the gap, else event i.
uint32_t DramSpanEnd(const TensorEvents& e, const Schedule& x, size_t i) {
  return i + 1 < e.kernels.size() && x.dram[i + 1] && x.kept[i] ? e.kernels[i + 1] - 1 : e.kernels[i];
}

// Adds `sign` x size to `usage` at every kernel the schedule holds DRAM.
void AddUsage(const TensorEvents& e, const Schedule& x, int64_t sign, std::vector<int64_t>& diff) {
  const auto s = sign * static_cast<int64_t>(e.size_bytes);
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    if (!x.dram[i]) continue;
    diff[e.kernels[i]] += s;
    diff[DramSpanEnd(e, x, i) + 1] -= s;
  }
}

// The kernels where x holds DRAM, as inclusive spans, ascending.
void DramIntervals(const TensorEvents& e, const Schedule& x, std::vector<std::pair<uint32_t, uint32_t>>& spans) {
  spans.clear();
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    if (!x.dram[i]) continue;
    const uint32_t last = DramSpanEnd(e, x, i);
    if (!spans.empty() && spans.back().second + 1 >= e.kernels[i]) spans.back().second = last;
    else spans.push_back({e.kernels[i], last});
  }
}

bool InDramAt(const TensorEvents& e, const Schedule& x, uint32_t k) {
  const auto it = std::upper_bound(e.kernels.begin(), e.kernels.end(), k);
  if (it == e.kernels.begin()) return false;
  const size_t i = static_cast<size_t>(it - e.kernels.begin()) - 1;
  if (e.kernels[i] == k) return x.dram[i];
  return i + 1 < e.kernels.size() && x.dram[i] && x.dram[i + 1] && x.kept[i];
}


// Penalties and copies of schedule x of e, without prices.
double ScheduleCost(const TensorEvents& e, const Schedule& x) {
  double ns = 0;
  const size_t n = e.kernels.size();
  for (size_t i = 0; i < n; ++i) {
    if (!x.dram[i]) ns += e.penalty_ns[i];
    if (i == 0) continue;
    if (x.dram[i - 1] && !x.dram[i]) ns += e.to_slow_ns;
    if (!x.dram[i - 1] && x.dram[i]) ns += e.to_dram_ns;
    if (x.dram[i - 1] && x.dram[i] && !x.kept[i - 1]) ns += e.to_slow_ns + e.to_dram_ns;
  }
  if (e.persistent && x.dram[0] != x.dram[n - 1]) ns += x.dram[0] ? e.to_dram_ns : e.to_slow_ns;
  return ns;
}

// The workload as one schedule per plannable tensor, and the DRAM each
// kernel leaves them (the limit less the pinned tensors live there).
class ScheduleModel {
 public:
  ScheduleModel(const Workload& w, uint64_t dram_limit_bytes)
      : w_(w), K_(w.num_kernels()), limit_(dram_limit_bytes),
        capacity_(PlannableDramPerKernel(w, dram_limit_bytes)), index_(w.num_tensors(), -1), diff_(K_ + 1), usage_(K_) {
    for (uint32_t t = 0; t < w.num_tensors(); ++t) {
      const Tensor& x = w.tensors[t];
      if (x.pinned_dram) continue;
      TensorEvents e;
      e.tensor = t;
      e.size_bytes = x.size_bytes;
      e.persistent = x.persistent;
      e.to_dram_ns = CopyTimeNs(w, x.size_bytes, Tier::kDram);
      e.to_slow_ns = CopyTimeNs(w, x.size_bytes, Tier::kSlow);
      e.kernels.push_back(x.alloc_kernel);
      for (uint32_t k : w.kernels_of_tensor(t)) e.kernels.push_back(k);
      e.kernels.push_back(x.free_kernel);
      std::sort(e.kernels.begin(), e.kernels.end());
      e.kernels.erase(std::unique(e.kernels.begin(), e.kernels.end()), e.kernels.end());
      e.penalty_ns.assign(e.kernels.size(), 0);
      index_[t] = static_cast<int64_t>(events_.size());
      events_.push_back(std::move(e));
    }
    for (size_t k = 0; k < K_; ++k)
      for (uint32_t a : w.accesses_of_kernel(k)) {
        const Access& acc = w.accesses[a];
        if (index_[acc.tensor] < 0) continue;
        TensorEvents& e = events_[static_cast<size_t>(index_[acc.tensor])];
        const auto it = std::lower_bound(e.kernels.begin(), e.kernels.end(), static_cast<uint32_t>(k));
        e.penalty_ns[static_cast<size_t>(it - e.kernels.begin())] += acc.slow_penalty_ns;
      }
  }

  size_t size() const { return events_.size(); }
  const std::vector<int64_t>& capacity() const { return capacity_; }
  const std::vector<int64_t>& usage() const { return usage_; }

  // The plan's schedules, tightened: a tensor in DRAM at two events and
  // copied between is evicted after the first and fetched for the second,
  // one leaving DRAM between them leaves after the first, one coming back
  // comes for the second. In sync mode that costs no more and holds no
  // more DRAM.
  std::vector<Schedule> FromPlan(const PlacementPlan& plan) const {
    std::vector<std::vector<Migration>> own(events_.size());
    for (const Migration& m : plan.migrations)
      if (m.tensor < index_.size() && index_[m.tensor] >= 0) own[static_cast<size_t>(index_[m.tensor])].push_back(m);
    std::vector<Schedule> xs(events_.size());
    for (size_t i = 0; i < events_.size(); ++i) {
      const TensorEvents& e = events_[i];
      Schedule& x = xs[i];
      const size_t n = e.kernels.size();
      x.dram.assign(n, 0);
      x.kept.assign(n > 0 ? n - 1 : 0, 1);
      Tier tier = plan.initial_tiers[e.tensor];
      size_t next = 0;
      for (size_t j = 0; j < n; ++j) {
        // Migrations after kernels before this event; any between the
        // previous event and this one breaks "kept".
        for (; next < own[i].size() && own[i][next].after_kernel < static_cast<int32_t>(e.kernels[j]); ++next) {
          tier = own[i][next].to;
          if (j > 0) x.kept[j - 1] = 0;
        }
        x.dram[j] = tier == Tier::kDram;
      }
      x.cost_ns = ScheduleCost(e, x);
    }
    return xs;
  }

  PlacementPlan ToPlan(const std::vector<Schedule>& xs, MigrationMode mode) const {
    PlacementPlan plan = PlacementPlan::Uniform(w_, Tier::kSlow, limit_);
    plan.mode = mode;
    for (size_t i = 0; i < events_.size(); ++i) {
      const TensorEvents& e = events_[i];
      const Schedule& x = xs[i];
      plan.initial_tiers[e.tensor] = x.dram[0] ? Tier::kDram : Tier::kSlow;
      for (size_t j = 0; j + 1 < e.kernels.size(); ++j) {
        const auto a = static_cast<int32_t>(e.kernels[j]), b = static_cast<int32_t>(e.kernels[j + 1]);
        if (x.dram[j] && (!x.dram[j + 1] || !x.kept[j])) plan.migrations.push_back({a, e.tensor, Tier::kSlow});
        if (x.dram[j + 1] && (!x.dram[j] || !x.kept[j])) plan.migrations.push_back({b - 1, e.tensor, Tier::kDram});
      }
    }
    plan.KeepPinnedInDram(w_);
    plan.Normalize();
    return plan;
  }

  // Each tensor's cheapest schedule at these prices (prefix sums per byte);
  // returns the sum of their priced costs.
  double Price(const std::vector<double>& price_prefix, std::vector<Schedule>& xs) const {
    double sum = 0;
    for (size_t i = 0; i < events_.size(); ++i) sum += Solve(events_[i], &price_prefix, {}, &xs[i]);
    return sum;
  }

  double CostOf(const std::vector<Schedule>& xs) const {
    double ns = 0;
    for (const Schedule& x : xs) ns += x.cost_ns;
    return ns;
  }

  void SetUsage(const std::vector<Schedule>& xs) {
    std::fill(diff_.begin(), diff_.end(), 0);
    for (size_t i = 0; i < events_.size(); ++i) AddUsage(events_[i], xs[i], 1, diff_);
    int64_t run = 0;
    for (size_t k = 0; k < K_; ++k) usage_[k] = run += diff_[k];
  }

  // Until every kernel fits: at the first one over, the tensor whose
  // schedule loses DRAM there (and gains none anywhere) for the fewest ns
  // per byte over the limit it frees, summed over the kernels. false where
  // nothing can.
  bool Repair(std::vector<Schedule>& xs) {
    SetUsage(xs);
    std::vector<uint8_t> dram_allowed, kept_allowed;
    std::vector<std::pair<uint32_t, uint32_t>> old_spans, new_spans;
    std::vector<int64_t> over_count(K_ + 1, 0), over_bytes(K_ + 1, 0);  // prefix sums over kernels
    Schedule trial, chosen;
    for (size_t k = 0; k < K_;) {
      if (usage_[k] <= capacity_[k]) {
        ++k;
        continue;
      }
      for (size_t q = 0; q < K_; ++q) {
        const int64_t excess = std::max<int64_t>(usage_[q] - capacity_[q], 0);
        over_count[q + 1] = over_count[q] + (excess > 0);
        over_bytes[q + 1] = over_bytes[q] + excess;
      }
      double best_ratio = kInf;
      size_t best_i = 0;
      for (uint32_t t : w_.live_at(k)) {
        if (index_[t] < 0) continue;
        const auto i = static_cast<size_t>(index_[t]);
        const TensorEvents& e = events_[i];
        if (!InDramAt(e, xs[i], static_cast<uint32_t>(k))) continue;
        dram_allowed = xs[i].dram;
        kept_allowed = xs[i].kept;
        for (size_t j = 0; j < e.kernels.size(); ++j) {
          if (e.kernels[j] == k) dram_allowed[j] = 0;
          if (j + 1 < e.kernels.size() && e.kernels[j] < k && k < e.kernels[j + 1]) kept_allowed[j] = 0;
        }
        Solve(e, nullptr, {&dram_allowed, &kept_allowed}, &trial);
        // Bytes over the limit it frees: the kernels over the limit where
        // the old schedule holds DRAM and the new one does not.
        DramIntervals(e, xs[i], old_spans);
        DramIntervals(e, trial, new_spans);
        // Per span freed, min(size x kernels over, bytes over): exact where
        // every kernel is over by more than the tensor or every one by less.
        uint64_t freed = 0;
        size_t next_new = 0;
        auto add_span = [&](uint32_t from, uint32_t to) {  // inclusive
          const int64_t count = over_count[to + 1] - over_count[from];
          const int64_t bytes = over_bytes[to + 1] - over_bytes[from];
          freed += static_cast<uint64_t>(std::min<int64_t>(count * static_cast<int64_t>(e.size_bytes), bytes));
        };
        for (const auto& [from, to] : old_spans) {
          uint32_t at = from;
          for (; next_new < new_spans.size() && new_spans[next_new].first <= to; ++next_new) {
            if (new_spans[next_new].first > at) add_span(at, new_spans[next_new].first - 1);
            at = std::max(at, new_spans[next_new].second + 1);
            if (new_spans[next_new].second > to) break;
          }
          if (at <= to) add_span(at, to);
        }
        if (freed == 0) continue;
        const double ratio = (trial.cost_ns - xs[i].cost_ns) / static_cast<double>(freed);
        if (ratio < best_ratio) {
          best_ratio = ratio;
          best_i = i;
          chosen = trial;
        }
      }
      if (best_ratio == kInf) return false;
      Replace(xs, best_i, std::move(chosen));
    }
    return true;
  }

  // Best responses: each tensor, the costliest first, moved to its cheapest
  // schedule in the DRAM the others leave it, in passes until one moves
  // none (at most `max_passes`). xs must fit. Returns the tensors moved.
  int Respond(std::vector<Schedule>& xs, int max_passes) {
    SetUsage(xs);
    std::vector<size_t> order(events_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return xs[a].cost_ns != xs[b].cost_ns ? xs[a].cost_ns > xs[b].cost_ns : a < b; });
    std::vector<uint8_t> dram_allowed, kept_allowed;
    std::vector<int64_t> own;
    Schedule trial;
    int moved = 0;
    for (int pass = 0; pass < max_passes; ++pass) {
      bool changed = false;
      for (size_t i : order) {
        const TensorEvents& e = events_[i];
        if (xs[i].cost_ns <= 0) continue;
        const uint32_t first = e.kernels.front(), last = e.kernels.back();
        // Its own DRAM over its lifetime, so that the room it leaves counts.
        own.assign(last - first + 2, 0);
        for (size_t j = 0; j < e.kernels.size(); ++j) {
          if (!xs[i].dram[j]) continue;
          own[e.kernels[j] - first] += 1;
          own[DramSpanEnd(e, xs[i], j) + 1 - first] -= 1;
        }
        int64_t in = 0;
        for (uint32_t k = first; k <= last; ++k) own[k - first] = in += own[k - first];
        const auto s = static_cast<int64_t>(e.size_bytes);
        auto room = [&](uint32_t k) { return usage_[k] - (own[k - first] ? s : 0) + s <= capacity_[k]; };
        const size_t n = e.kernels.size();
        dram_allowed.assign(n, 0);
        kept_allowed.assign(n > 0 ? n - 1 : 0, 0);
        for (size_t j = 0; j < n; ++j) {
          dram_allowed[j] = room(e.kernels[j]);
          if (j + 1 == n) continue;
          bool ok = true;
          for (uint32_t k = e.kernels[j] + 1; ok && k < e.kernels[j + 1]; ++k) ok = room(k);
          kept_allowed[j] = ok;
        }
        Solve(e, nullptr, {&dram_allowed, &kept_allowed}, &trial);
        if (trial.cost_ns >= xs[i].cost_ns - 1e-6) continue;
        Replace(xs, i, trial);
        changed = true;
        ++moved;
      }
      if (!changed) break;
    }
    return moved;
  }

 private:
  void Replace(std::vector<Schedule>& xs, size_t i, Schedule x) {
    std::fill(diff_.begin(), diff_.end(), 0);
    AddUsage(events_[i], xs[i], -1, diff_);
    AddUsage(events_[i], x, 1, diff_);
    int64_t run = 0;
    for (size_t k = 0; k < K_; ++k) usage_[k] += run += diff_[k];
    xs[i] = std::move(x);
  }

  const Workload& w_;
  size_t K_;
  uint64_t limit_;
  std::vector<int64_t> capacity_;
  std::vector<TensorEvents> events_;
  std::vector<int64_t> index_;
  std::vector<int64_t> diff_, usage_;
};

void RequireSync(const PlacementPlan& plan, const char* what) {
  if (plan.mode != MigrationMode::kSync)
    throw std::invalid_argument(std::string(what) + ": sync mode only (an async copy's cost depends on the kernel it overlaps)");
}

}  // namespace

std::vector<int64_t> PlannableDramPerKernel(const Workload& w, uint64_t dram_limit_bytes) {
  const size_t K = w.num_kernels();
  std::vector<int64_t> room(K, dram_limit_bytes == 0 ? std::numeric_limits<int64_t>::max() / 4
                                                      : static_cast<int64_t>(dram_limit_bytes));
  for (const Tensor& x : w.tensors) {
    if (!x.pinned_dram) continue;
    for (uint32_t k = x.alloc_kernel; k <= x.free_kernel && k < K; ++k) room[k] -= static_cast<int64_t>(x.size_bytes);
  }
  for (int64_t c : room)
    if (c < 0) throw std::invalid_argument("the pinned tensors alone exceed the DRAM limit");
  return room;
}

BestResponseResult RespondPerTensor(const Workload& w, const PlacementPlan& plan, int max_passes) {
  RequireSync(plan, "RespondPerTensor");
  BestResponseResult result;
  result.plan = plan;
  EvaluateValidPlan(w, result.plan, result.cost);
  if (result.cost.oom) return result;
  ScheduleModel model(w, plan.dram_limit_bytes);
  std::vector<Schedule> xs = model.FromPlan(plan);
  result.tensors_moved = model.Respond(xs, max_passes);
  PlacementPlan responded = model.ToPlan(xs, plan.mode);
  responded.produced_by = plan.produced_by;
  CostReport cost;
  EvaluateValidPlan(w, responded, cost);
  if (!cost.oom && cost.total_ns < result.cost.total_ns) {
    result.plan = std::move(responded);
    result.cost = std::move(cost);
  }
  return result;
}

PlanRelaxationResult PlanByRelaxation(const Workload& w, uint64_t dram_limit_bytes, double upper_bound_ns,
                                      const PlanRelaxationOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (!w.finalized()) throw std::logic_error("PlanByRelaxation: workload not finalized");
  PlanRelaxationResult result;
  const size_t K = w.num_kernels();
  if (K == 0) return result;
  ScheduleModel model(w, dram_limit_bytes);
  const std::vector<int64_t>& capacity = model.capacity();
  const double base_ns = MinCostNs(w);
  std::vector<double> price(K, 0), prefix(K + 1, 0), direction(K, 0);
  std::vector<Schedule> schedules(model.size()), best;
  double best_ns = kInf;
  double upper_ns = upper_bound_ns > 0 ? upper_bound_ns - base_ns : kInf;
  double step_scale = 1.0;
  int since_bound_improved = 0;
  for (; result.iterations < options.max_iterations; ++result.iterations) {
    // The first step always runs: its repair is a plan that fits.
    if (result.iterations > 0 && options.max_seconds > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() >= options.max_seconds)
      break;
    for (size_t k = 0; k < K; ++k) prefix[k + 1] = prefix[k] + price[k];
    double dual = model.Price(prefix, schedules);
    for (size_t k = 0; k < K; ++k) dual -= price[k] * static_cast<double>(capacity[k]);
    if (result.iterations == 0 || base_ns + dual > result.lower_bound_ns) {
      result.lower_bound_ns = base_ns + dual;
      since_bound_improved = 0;
    } else if (++since_bound_improved >= options.patience) {
      step_scale /= 2;
      since_bound_improved = 0;
    }
    // The prices' schedules, repaired to fit and then each tensor's best
    // response, are a plan; the repair takes longer than a step.
    if (result.iterations % std::max(options.repair_every, 1) == 0 || result.iterations + 1 == options.max_iterations) {
      std::vector<Schedule> fitted = schedules;
      if (model.Repair(fitted)) {
        model.Respond(fitted, options.response_passes);
        const double ns = model.CostOf(fitted);
        if (ns < best_ns) {
          best_ns = ns;
          best = std::move(fitted);
          upper_ns = std::min(upper_ns, ns);
        }
      }
    }
    model.SetUsage(schedules);
    const std::vector<int64_t>& usage = model.usage();
    // Steps along the subgradient deflected by the last direction
    // (Camerini, Fratta and Maffioli 1975): plain steps zigzag between
    // overfilling and emptying the same kernels. Polyak's size.
    double norm = 0;
    for (size_t k = 0; k < K; ++k) {
      double g = static_cast<double>(usage[k] - capacity[k]);
      if (g < 0 && price[k] <= 0) g = 0;
      direction[k] = g + options.deflection * direction[k];
      norm += direction[k] * direction[k];
    }
    if (norm == 0 || step_scale < 1e-6) break;
    const double cost = model.CostOf(schedules);
    const double gap = (std::isfinite(upper_ns) ? upper_ns : 2 * std::max(cost, 1.0)) - dual;
    const double step = step_scale * std::max(gap, 1e-3 * std::max(cost, 1.0)) / norm;
    for (size_t k = 0; k < K; ++k) price[k] = std::max(0.0, price[k] + step * direction[k]);
  }
  if (!best.empty()) {
    result.plan = model.ToPlan(best, MigrationMode::kSync);
    result.plan.produced_by = "relaxation";
    EvaluateValidPlan(w, result.plan, result.cost);
    result.found = !result.cost.oom;
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tensortier
