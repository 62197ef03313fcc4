#include "policies/sentinel.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "envs/cost_model.h"
#include "policies/plan_tools.h"

namespace tensortier {
namespace {

struct Interval {
  uint32_t first, last;
};

std::vector<Interval> Intervals(size_t num_kernels, int mil) {
  std::vector<Interval> v;
  for (size_t s = 0; s < num_kernels; s += mil)
    v.push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(std::min(num_kernels, s + mil) - 1)});
  return v;
}

// Last kernel of interval [first, last] that uses the unit, or -1.
int64_t LastUseIn(const SentinelUnit& u, Interval iv) {
  auto it = std::upper_bound(u.uses.begin(), u.uses.end(), iv.last);
  if (it == u.uses.begin() || *(it - 1) < iv.first) return -1;
  return *(it - 1);
}

bool UnitWritten(const Workload& w, const SentinelUnit& u, uint32_t k) {
  for (uint32_t t : u.tensors)
    if (KernelWrites(w, k, t)) return true;
  return false;
}

// Peak bytes of short-lived tensors at any kernel: the pool.
uint64_t ShortLivedPeak(const Workload& w) {
  uint64_t peak = 0;
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    uint64_t bytes = 0;
    for (uint32_t t : w.live_at(k))
      if (ClassifyForSentinel(w, t) == SentinelClass::kShortLived) bytes += w.tensors[t].size_bytes;
    peak = std::max(peak, bytes);
  }
  return peak;
}

}  // namespace

SentinelClass ClassifyForSentinel(const Workload& w, uint32_t t) {
  const Tensor& x = w.tensors[t];
  if (!x.persistent && x.free_kernel == x.alloc_kernel) return SentinelClass::kShortLived;
  if (x.size_bytes < kPageBytes) return SentinelClass::kSmallLongLived;
  return SentinelClass::kLongLived;
}

std::vector<SentinelUnit> SentinelUnits(const Workload& w) {
  std::vector<SentinelUnit> units;
  std::map<std::tuple<uint32_t, uint32_t, bool>, size_t> packed;  // same live kernels -> unit
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    const SentinelClass c = ClassifyForSentinel(w, t);
    if (c == SentinelClass::kShortLived) continue;
    const Tensor& x = w.tensors[t];
    size_t index = units.size();
    if (c == SentinelClass::kSmallLongLived) {
      auto key = std::make_tuple(x.alloc_kernel, x.free_kernel, x.persistent);
      auto it = packed.find(key);
      if (it != packed.end())
        index = it->second;
      else
        packed[key] = index;
    }
    if (index == units.size()) {
      units.emplace_back();
      units.back().alloc_kernel = x.alloc_kernel;
      units.back().free_kernel = x.free_kernel;
      units.back().persistent = x.persistent;
    }
    SentinelUnit& u = units[index];
    u.tensors.push_back(t);
    u.size_bytes += x.size_bytes;
    u.accesses += AccessCount(w, t);
    for (uint32_t k : w.kernels_of_tensor(t)) u.uses.push_back(k);
  }
  for (SentinelUnit& u : units) {
    std::sort(u.uses.begin(), u.uses.end());
    u.uses.erase(std::unique(u.uses.begin(), u.uses.end()), u.uses.end());
  }
  return units;
}

SentinelMilChoice ChooseSentinelMil(const Workload& w, uint64_t dram_limit_bytes, int max_mil) {
  const size_t K = w.num_kernels();
  const std::vector<SentinelUnit> units = SentinelUnits(w);
  const uint64_t limit = EffectiveLimit(dram_limit_bytes);
  const uint64_t pool = ShortLivedPeak(w);
  const int longest = max_mil > 0 ? std::min<int>(max_mil, K) : static_cast<int>(K);
  SentinelMilChoice choice;
  for (int mil = 1; mil <= longest; ++mil) {
    const std::vector<Interval> ivs = Intervals(K, mil);
    SentinelMilCandidate c;
    c.mil = mil;
    c.short_lived_bytes = pool;
    for (size_t i = 0; i < ivs.size(); ++i) {
      uint64_t working = 0, incoming = 0;
      for (const SentinelUnit& u : units) {
        if (LastUseIn(u, ivs[i]) >= 0) working += u.size_bytes;
        // Bytes that must come in for the next interval: used there, not
        // here, and already allocated.
        if (i + 1 < ivs.size() && LastUseIn(u, ivs[i + 1]) >= 0 && LastUseIn(u, ivs[i]) < 0 &&
            u.alloc_kernel < ivs[i + 1].first)
          incoming += u.size_bytes;
      }
      c.tensor_bytes = std::max(c.tensor_bytes, working + incoming);
      if (i + 1 < ivs.size()) {
        double interval_ns = 0;
        for (uint32_t k = ivs[i].first; k <= ivs[i].last; ++k) interval_ns += w.kernels[k].dram_time_ns;
        c.exposed_ns += std::max(0.0, CopyTimeNs(w, incoming, Tier::kDram) - interval_ns);
      }
    }
    c.feasible = pool < limit && c.tensor_bytes < limit - pool;
    choice.candidates.push_back(c);
  }
  auto violation = [&](const SentinelMilCandidate& c) {
    const uint64_t room = pool < limit ? limit - pool : 0;
    return c.tensor_bytes >= room ? c.tensor_bytes - room : 0;
  };
  const SentinelMilCandidate* best = nullptr;
  for (const SentinelMilCandidate& c : choice.candidates) choice.feasible = choice.feasible || c.feasible;
  for (const SentinelMilCandidate& c : choice.candidates) {
    if (choice.feasible && !c.feasible) continue;
    if (best == nullptr) {
      best = &c;
      continue;
    }
    if (!choice.feasible && violation(c) != violation(*best)) {
      if (violation(c) < violation(*best)) best = &c;
      continue;
    }
    if (c.exposed_ns <= best->exposed_ns) best = &c;  // ties: the longer interval
  }
  choice.mil = best->mil;
  return choice;
}

SentinelRun SimulateSentinel(const Workload& w, const std::vector<SentinelUnit>& units, int mil,
                             MigrationMode mode, uint64_t dram_limit_bytes,
                             const std::set<std::pair<uint32_t, int>>& left_in_slow, SentinelVariant variant) {
  const size_t K = w.num_kernels();
  const bool async = mode == MigrationMode::kAsync;
  const std::vector<Interval> ivs = Intervals(K, mil);
  const int n = static_cast<int>(ivs.size());
  SentinelRun run;
  run.late_prefetches.assign(n, {});
  PlacementPlan& plan = run.plan;
  plan = PlacementPlan::Uniform(w, Tier::kSlow, dram_limit_bytes);
  plan.mode = mode;
  DramLedger ledger(w, dram_limit_bytes);

  // The short-lived pool is reserved before any long-lived tensor is placed,
  // so nothing competes with it (Sentinel IV-C).
  for (uint32_t t = 0; t < w.num_tensors(); ++t) {
    if (ClassifyForSentinel(w, t) != SentinelClass::kShortLived) continue;
    const Tensor& x = w.tensors[t];
    if (!ledger.Fits(x.alloc_kernel, x.free_kernel, x.size_bytes)) continue;
    ledger.Add(x.alloc_kernel, x.free_kernel, x.size_bytes);
    plan.initial_tiers[t] = Tier::kDram;
  }

  const uint32_t none = UINT32_MAX;
  std::vector<Tier> initial(units.size(), Tier::kSlow);
  std::vector<uint32_t> resident_until(units.size(), none);  // last kernel it is planned in DRAM
  std::vector<uint32_t> reserved_until(units.size(), none);  // last kernel its DRAM is booked
  auto in_dram_at = [&](size_t u, uint32_t k) { return resident_until[u] != none && resident_until[u] >= k; };
  // A copy out after kernel b overlaps b+1 in async mode, holding DRAM.
  auto hold_until = [&](const SentinelUnit& u, uint32_t b) {
    return async && b + 1 <= u.free_kernel ? b + 1 : b;
  };
  auto migrate = [&](const SentinelUnit& u, int32_t after_kernel, Tier to) {
    for (uint32_t t : u.tensors) plan.migrations.push_back({after_kernel, t, to});
  };
  auto book = [&](size_t u, uint32_t from, uint32_t to) {
    if (from > to) return true;
    if (!ledger.Fits(from, to, units[u].size_bytes)) return false;
    ledger.Add(from, to, units[u].size_bytes);
    return true;
  };
  auto hotter = [&](uint32_t a, uint32_t b) {
    return units[a].accesses != units[b].accesses ? units[a].accesses > units[b].accesses
                                                  : units[a].size_bytes < units[b].size_bytes;
  };

  if (variant.pin_persistent && K > 0) {
    std::vector<uint32_t> persistent;
    for (uint32_t u = 0; u < units.size(); ++u)
      if (units[u].persistent && !units[u].uses.empty()) persistent.push_back(u);
    std::stable_sort(persistent.begin(), persistent.end(), hotter);
    const uint32_t last = static_cast<uint32_t>(K - 1);
    for (uint32_t u : persistent) {
      if (!book(u, 0, last)) continue;
      initial[u] = Tier::kDram;
      for (uint32_t t : units[u].tensors) plan.initial_tiers[t] = Tier::kDram;
      resident_until[u] = reserved_until[u] = last;
    }
  }

  for (int i = 0; i < n; ++i) {
    const Interval iv = ivs[i];
    const bool has_next = i + 1 < n;

    // 1. Long-lived tensors created in this interval go to DRAM if they fit
    //    until their last use here.
    std::vector<uint32_t> created;
    for (uint32_t u = 0; u < units.size(); ++u)
      if (units[u].alloc_kernel >= iv.first && units[u].alloc_kernel <= iv.last) created.push_back(u);
    std::stable_sort(created.begin(), created.end(), [&](uint32_t a, uint32_t b) {
      return units[a].alloc_kernel != units[b].alloc_kernel ? units[a].alloc_kernel < units[b].alloc_kernel
                                                            : hotter(a, b);
    });
    for (uint32_t u : created) {
      if (resident_until[u] != none) continue;  // pinned
      int64_t last = LastUseIn(units[u], iv);
      if (last < 0 && variant.wait_in_dram) {
        // Not used in the interval that creates it: with room to spare it
        // waits in DRAM for its first use rather than being prefetched.
        auto first = std::upper_bound(units[u].uses.begin(), units[u].uses.end(), iv.last);
        if (first != units[u].uses.end()) last = *first;
      }
      if (last < 0) continue;
      const uint32_t hold = hold_until(units[u], last);
      if (!book(u, units[u].alloc_kernel, hold)) continue;
      initial[u] = Tier::kDram;
      for (uint32_t t : units[u].tensors) plan.initial_tiers[t] = Tier::kDram;
      resident_until[u] = last;
      reserved_until[u] = hold;
    }

    // 2. Tensors in DRAM that the next interval uses stay (no copy at all);
    //    persistent ones the next iteration starts with in DRAM stay to the end.
    std::vector<uint32_t> resident;
    for (uint32_t u = 0; u < units.size(); ++u)
      if (resident_until[u] != none && resident_until[u] >= iv.first && resident_until[u] <= iv.last)
        resident.push_back(u);
    std::stable_sort(resident.begin(), resident.end(), hotter);
    for (uint32_t u : resident) {
      uint32_t target = none;
      if (has_next && LastUseIn(units[u], ivs[i + 1]) >= 0)
        target = static_cast<uint32_t>(LastUseIn(units[u], ivs[i + 1]));
      else if (!has_next && units[u].persistent && initial[u] == Tier::kDram)
        target = static_cast<uint32_t>(K - 1);
      if (target == none) continue;
      const uint32_t hold = hold_until(units[u], target);
      if (!book(u, reserved_until[u] + 1, hold)) continue;
      resident_until[u] = target;
      reserved_until[u] = std::max(reserved_until[u], hold);
    }

    // 3. Prefetch, hottest first, what the next interval needs (or, in the
    //    last interval, what the next iteration starts with in DRAM).
    std::vector<uint32_t> wanted;
    for (uint32_t u = 0; u < units.size(); ++u) {
      const SentinelUnit& x = units[u];
      // In DRAM now but not kept (no room): it leaves after its last use.
      if (resident_until[u] != none) continue;
      if (has_next) {
        if (LastUseIn(x, ivs[i + 1]) < 0 || x.alloc_kernel > iv.last || in_dram_at(u, ivs[i + 1].first)) continue;
        if (left_in_slow.count({u, i + 1})) continue;
      } else if (!(x.persistent && initial[u] == Tier::kDram && !in_dram_at(u, K - 1))) {
        continue;
      }
      wanted.push_back(u);
    }
    std::stable_sort(wanted.begin(), wanted.end(), hotter);
    // Sentinel's copy thread starts at the interval's beginning; each of our
    // async copies overlaps one kernel, so fill kernels in order with copies
    // that hide behind them (kernel time as profiled in DRAM).
    std::vector<double> budget_ns(iv.last - iv.first + 1);
    for (uint32_t k = iv.first; k <= iv.last; ++k) budget_ns[k - iv.first] = w.kernels[k].dram_time_ns;
    uint32_t cursor = iv.first;
    for (uint32_t u : wanted) {
      const SentinelUnit& x = units[u];
      const uint32_t target = has_next ? static_cast<uint32_t>(LastUseIn(x, ivs[i + 1])) : static_cast<uint32_t>(K - 1);
      const uint32_t hold = has_next ? hold_until(x, target) : target;
      if (!async) {
        // Blocking copy at the interval boundary: the DRAM is needed from the
        // next interval on. In the last interval the copy must land before
        // the last kernel (no migration follows it).
        const uint32_t after = has_next ? iv.last : static_cast<uint32_t>(K - 2);
        if (!has_next && (K < 2 || after < x.alloc_kernel)) continue;
        if (!book(u, after + 1, hold)) {
          ++run.no_space;
          continue;
        }
        migrate(x, static_cast<int32_t>(after), Tier::kDram);
        resident_until[u] = target;
        reserved_until[u] = hold;
        run.late_prefetches[i].push_back(u);
        continue;
      }
      const double copy_ns = CopyTimeNs(w, x.size_bytes, Tier::kDram);
      const uint32_t lowest = std::max(cursor, x.alloc_kernel + 1);
      int64_t chosen = -1;
      bool late = false;
      for (uint32_t j = lowest; j <= iv.last; ++j)
        if (!UnitWritten(w, x, j) && budget_ns[j - iv.first] >= copy_ns && ledger.Fits(j, hold, x.size_bytes)) {
          chosen = j;
          break;
        }
      if (chosen < 0) {
        // Case 3: no kernel hides the copy; it lands as late as it can
        // (test-and-trial may leave the tensor in slow memory instead).
        for (int64_t j = iv.last; j >= static_cast<int64_t>(lowest); --j)
          if (!UnitWritten(w, x, j) && ledger.Fits(j, hold, x.size_bytes)) {
            chosen = j;
            late = true;
            break;
          }
      }
      if (chosen < 0) {
        ++run.no_space;  // Case 2
        continue;
      }
      ledger.Add(chosen, hold, x.size_bytes);
      budget_ns[chosen - iv.first] -= copy_ns;
      if (!late) cursor = chosen;
      migrate(x, static_cast<int32_t>(chosen) - 1, Tier::kDram);
      resident_until[u] = target;
      reserved_until[u] = hold;
      if (late) run.late_prefetches[i].push_back(u);
    }

    // 4. Evict, right after their last use here, tensors no later interval
    //    keeps in DRAM. With lazy eviction a tensor that still fits until
    //    its next use (or its end) after this interval's prefetches were
    //    booked stays: a copy out and back costs time and frees room nobody
    //    takes.
    for (uint32_t u : resident) {
      if (resident_until[u] > iv.last || resident_until[u] >= units[u].free_kernel) continue;
      const SentinelUnit& x = units[u];
      auto next_use = std::upper_bound(x.uses.begin(), x.uses.end(), iv.last);
      uint32_t keep_until = none;
      if (next_use != x.uses.end())
        keep_until = *next_use;
      else if (x.persistent && initial[u] == Tier::kDram)
        keep_until = static_cast<uint32_t>(K - 1);
      else if (!x.persistent)
        keep_until = x.free_kernel;  // no use left: it dies where it is
      if (variant.lazy_eviction && keep_until != none && keep_until > resident_until[u]) {
        const uint32_t hold = hold_until(x, keep_until);
        if (book(u, reserved_until[u] + 1, hold)) {
          resident_until[u] = keep_until;
          reserved_until[u] = std::max(reserved_until[u], hold);
          continue;
        }
      }
      migrate(units[u], static_cast<int32_t>(resident_until[u]), Tier::kSlow);
      resident_until[u] = none;
      reserved_until[u] = none;
    }
    // Units created this interval and not kept are in `resident` too: they
    // were in DRAM from step 1 on.
  }
  plan.Normalize();
  return run;
}

PolicyResult DecideSentinel(const Workload& w, const PolicyContext& ctx) {
  PolicyResult result;
  const std::vector<SentinelUnit> units = SentinelUnits(w);
  const SentinelMilChoice choice = ChooseSentinelMil(w, ctx.dram_limit_bytes, ctx.sentinel_max_mil);
  int mil = choice.mil;
  if (!choice.feasible) {
    // Below Sentinel's lower bound on fast memory no length meets eq. 1 and
    // the paper gives no rule; estimate every length's step time with the
    // cost model (Sentinel's performance model, run to the end) instead.
    double best_ns = 0;
    for (const SentinelMilCandidate& c : choice.candidates) {
      const double ns = EvaluatePlan(w, SimulateSentinel(w, units, c.mil, ctx.mode, ctx.dram_limit_bytes).plan).total_ns;
      if (c.mil == choice.candidates.front().mil || ns < best_ns) {
        best_ns = ns;
        mil = c.mil;
      }
    }
  }

  // Test-and-trial: where migration for the next interval is late, one
  // "step" waits for it and one leaves those tensors in slow memory; keep
  // the faster. Our steps are cost-model evaluations. The same trial picks
  // the variant (SentinelVariant).
  struct Outcome {
    SentinelRun run;
    double ns = 0;
    int trials = 0, kept_in_slow = 0;
  };
  auto trial_and_error = [&](SentinelVariant variant) {
    Outcome o;
    std::set<std::pair<uint32_t, int>> left_in_slow;
    o.run = SimulateSentinel(w, units, mil, ctx.mode, ctx.dram_limit_bytes, left_in_slow, variant);
    o.ns = EvaluatePlan(w, o.run.plan).total_ns;
    for (size_t i = 0; i + 1 < o.run.late_prefetches.size() && o.trials < ctx.sentinel_max_trials; ++i) {
      if (o.run.late_prefetches[i].empty()) continue;
      std::set<std::pair<uint32_t, int>> trial = left_in_slow;
      for (uint32_t u : o.run.late_prefetches[i]) trial.insert({u, static_cast<int>(i) + 1});
      SentinelRun run = SimulateSentinel(w, units, mil, ctx.mode, ctx.dram_limit_bytes, trial, variant);
      const double ns = EvaluatePlan(w, run.plan).total_ns;
      ++o.trials;
      if (ns < o.ns) {
        o.ns = ns;
        o.run = std::move(run);
        left_in_slow = std::move(trial);
        ++o.kept_in_slow;
      }
    }
    return o;
  };
  Outcome best;
  int variant = -1, trials = 0;
  const SentinelVariant variants[] = {{false, false, false}, {true, false, false}, {true, true, false},
                                      {true, true, true}};
  for (int v = 0; v < (ctx.sentinel_as_published ? 1 : 4); ++v) {
    Outcome o = trial_and_error(variants[v]);
    trials += o.trials;
    if (variant < 0 || o.ns < best.ns) {
      best = std::move(o);
      variant = v;
    }
  }
  result.plan = std::move(best.run.plan);
  result.stats["repairs"] = RepairToLimit(w, &result.plan);
  result.stats["mil"] = mil;
  result.stats["mil_feasible"] = choice.feasible ? 1 : 0;
  for (const SentinelMilCandidate& c : choice.candidates)
    if (c.mil == mil) result.stats["mil_exposed_migration_ns"] = c.exposed_ns;
  result.stats["units"] = static_cast<double>(units.size());
  result.stats["trials"] = trials;
  result.stats["trials_left_in_slow"] = best.kept_in_slow;
  result.stats["no_space_prefetches"] = best.run.no_space;
  result.stats["lazy_eviction"] = variants[variant].lazy_eviction ? 1 : 0;
  result.stats["persistent_pinned"] = variants[variant].pin_persistent ? 1 : 0;
  result.stats["waits_in_dram"] = variants[variant].wait_in_dram ? 1 : 0;
  return result;
}

}  // namespace tensortier
