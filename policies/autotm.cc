#include "policies/autotm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/log.h"
#include "common/named_enum.h"
#include "envs/cost_model.h"
#include "envs/first_touch.h"
#include "policies/plan_tools.h"

namespace tensortier {
namespace {

// Memory rows are in KiB so that byte-sized coefficients of GB-sized tensors
// stay in a range the LP solver handles well (sizes / 1024 are exact doubles).
constexpr double kBytesPerUnit = 1024.0;

// One tensor's flow graph, compressed: a segment is a run of kernels during
// which the tensor cannot change tier, with one binary location variable
// (1 = DRAM). A boundary joins consecutive segments; the tensor moves there
// through a synchronous copy after the last kernel of the first segment, or
// an asynchronous copy overlapping that kernel.
struct Segment {
  int32_t first = 0, last = 0;  // kernels; first > last for the end-of-iteration node
  int x = -1;
};

struct Boundary {
  int32_t last_kernel = 0;        // j: the last kernel of the segment before
  int sync_up = -1, sync_down = -1;
  int async_up = -1, async_down = -1;
};

struct TensorGraph {
  std::vector<Segment> segments;
  std::vector<Boundary> boundaries;  // boundaries[i] joins segments[i] and [i+1]
  std::vector<int> segment_of;       // [k - alloc] -> segment index
};

std::vector<Segment> MakeSegments(const Workload& w, uint32_t t, const AutoTmIlpOptions& o) {
  const Tensor& x = w.tensors[t];
  const int32_t a = x.alloc_kernel, f = x.free_kernel;
  // Tensors under a page stay where they are created: a copy of one costs a
  // page-granular operation for almost nothing, and they are a large share
  // of the tensors (batch-norm parameters), so this keeps the ILP small.
  if (o.formulation == AutoTmFormulation::kStatic || x.size_bytes < o.min_moved_bytes) return {{a, f}};
  const auto& uses = w.kernels_of_tensor(t);
  // Sync mode: AutoTM's components (each use alone, idle runs between them
  // as one location). Async mode: every kernel near a use alone as well, so
  // the solver can pick which kernel a copy overlaps.
  const int window = o.mode == MigrationMode::kSync ? 0 : std::max(0, o.async_window);
  std::vector<char> fine(f - a + 1, 0);
  for (uint32_t u : uses)
    for (int32_t k = std::max<int32_t>(a, u - window); k <= std::min<int32_t>(f, u + window); ++k) fine[k - a] = 1;
  std::vector<Segment> segs;
  for (int32_t k = a; k <= f; ++k) {
    if (fine[k - a] || segs.empty() || fine[k - 1 - a])
      segs.push_back({k, k});
    else
      segs.back().last = k;
  }
  // In async mode a persistent tensor may also be copied during the last
  // kernel, so that the next iteration finds it where it starts.
  if (o.mode == MigrationMode::kAsync && x.persistent) segs.push_back({f + 1, f});
  return segs;
}

}  // namespace

const char* MemoryRowsName(MemoryRows m) {
  static constexpr EnumName<MemoryRows> kNames[] = {
      {MemoryRows::kPerKernel, "per-kernel"}, {MemoryRows::kRunningSum, "running-sum"}, {MemoryRows::kAuto, "auto"}};
  return NameOfEnumOr(kNames, m, "unknown");
}

const char* AutoTmFormulationName(AutoTmFormulation f) {
  static constexpr EnumName<AutoTmFormulation> kNames[] = {{AutoTmFormulation::kStatic, "static"},
                                                           {AutoTmFormulation::kSynchronous, "synchronous"},
                                                           {AutoTmFormulation::kAsynchronous, "asynchronous"}};
  return NameOfEnumOr(kNames, f, "unknown");
}

AutoTmIlpResult SolveAutoTmIlp(const Workload& w, const AutoTmIlpOptions& o) {
  const size_t K = w.num_kernels(), T = w.num_tensors();
  const bool async_mode = o.mode == MigrationMode::kAsync;
  const bool overlap_objective = o.formulation == AutoTmFormulation::kAsynchronous && async_mode;
  std::vector<uint64_t> limits = o.kernel_limits;
  if (limits.empty()) limits.assign(K, o.dram_limit_bytes);
  if (limits.size() != K) throw std::invalid_argument("SolveAutoTmIlp: one limit per kernel");

  MipModel mip;
  std::vector<TensorGraph> graphs(T);
  // Per kernel: time terms of rho_k (constant, and -penalty * x), and the
  // async copies that overlap it.
  std::vector<double> rho_constant(K);
  std::vector<std::vector<std::pair<int, double>>> rho_terms(K), overlap_terms(K);
  for (size_t k = 0; k < K; ++k) rho_constant[k] = w.kernels[k].dram_time_ns;

  for (uint32_t t = 0; t < T; ++t) {
    const Tensor& x = w.tensors[t];
    TensorGraph& g = graphs[t];
    g.segments = MakeSegments(w, t, o);
    g.segment_of.assign(x.free_kernel - x.alloc_kernel + 1, -1);
    for (size_t s = 0; s < g.segments.size(); ++s) {
      g.segments[s].x = mip.AddBinary(0);
      if (o.fixed_tier)
        if (std::optional<Tier> tier = o.fixed_tier(t, g.segments[s].first, g.segments[s].last))
          mip.Fix(g.segments[s].x, *tier == Tier::kDram ? 1.0 : 0.0);
      for (int32_t k = g.segments[s].first; k <= g.segments[s].last; ++k) g.segment_of[k - x.alloc_kernel] = s;
    }
    const double up_ns = CopyTimeNs(w, x.size_bytes, Tier::kDram);
    const double down_ns = CopyTimeNs(w, x.size_bytes, Tier::kSlow);
    for (size_t s = 0; s + 1 < g.segments.size(); ++s) {
      Boundary b;
      b.last_kernel = g.segments[s].last;
      const int32_t j = b.last_kernel;
      const bool next_is_kernel = j + 1 < static_cast<int32_t>(K) && j + 1 <= static_cast<int32_t>(x.free_kernel);
      // Sync mode: every copy blocks. Async mode (EvaluatePlan): a copy
      // issued after j blocks only if kernel j+1 writes the tensor; one
      // issued after j-1 overlaps kernel j unless j writes it.
      const bool sync_ok = next_is_kernel && (!async_mode || KernelWrites(w, j + 1, t));
      const bool async_ok = async_mode && j - 1 >= static_cast<int32_t>(x.alloc_kernel) && !KernelWrites(w, j, t);
      const double async_cost = overlap_objective ? 0.0 : 1.0;  // sync formulation: every copy is exposed
      if (sync_ok) {
        b.sync_up = mip.AddVariable(0, 1, up_ns, false);
        b.sync_down = mip.AddVariable(0, 1, down_ns, false);
      }
      if (async_ok) {
        b.async_up = mip.AddBinary(async_cost * up_ns);
        b.async_down = mip.AddBinary(async_cost * down_ns);
        if (overlap_objective) {
          overlap_terms[j].push_back({b.async_up, up_ns});
          overlap_terms[j].push_back({b.async_down, down_ns});
        }
        mip.AddRow({{b.async_up, 1}, {b.async_down, 1}}, 'L', 1);
      }
      // Flow conservation: x_next - x_prev = copies in - copies out.
      std::vector<std::pair<int, double>> flow = {{g.segments[s + 1].x, 1}, {g.segments[s].x, -1}};
      if (sync_ok) {
        flow.push_back({b.sync_up, -1});
        flow.push_back({b.sync_down, 1});
      }
      if (async_ok) {
        flow.push_back({b.async_up, -1});
        flow.push_back({b.async_down, 1});
      }
      mip.AddRow(flow, 'E', 0);
      g.boundaries.push_back(b);
    }
    // A persistent tensor that ends the iteration elsewhere than it starts is
    // copied back, blocking, after the last kernel (EvaluatePlan does this).
    if (x.persistent && g.segments.size() > 1) {
      const int first = g.segments.front().x, last = g.segments.back().x;
      int back_up = mip.AddVariable(0, 1, up_ns, false);
      int back_down = mip.AddVariable(0, 1, down_ns, false);
      mip.AddRow({{back_up, 1}, {first, -1}, {last, 1}}, 'G', 0);
      mip.AddRow({{back_down, 1}, {last, -1}, {first, 1}}, 'G', 0);
    }
    for (uint32_t k : w.kernels_of_tensor(t)) {
      double pen = 0;
      for (uint32_t i : w.accesses_of_kernel(k))
        if (w.accesses[i].tensor == t) pen = w.accesses[i].slow_penalty_ns;
      if (pen == 0) continue;
      rho_constant[k] += pen;
      rho_terms[k].push_back({g.segments[g.segment_of[k - x.alloc_kernel]].x, -pen});
    }
  }

  // Objective: sum_k rho_k, or sum_k max(rho_k, overlapped copies) through
  // z_k >= rho_k, z_k >= copies_k (AutoTM eq. 7). Where the host hides only
  // part of a copy (share e of it is paid, DeviceModel::async_copy_exposure),
  // the cost model's max + e * min is (1 - e) * max + e * (rho_k + copies_k).
  const double exposure = w.device.async_copy_exposure;
  for (size_t k = 0; k < K; ++k) {
    if (overlap_objective && !overlap_terms[k].empty()) {
      int z = mip.AddVariable(0, std::numeric_limits<double>::infinity(), 1 - exposure, false);
      if (exposure > 0) {
        mip.AddObjectiveConstant(exposure * rho_constant[k]);
        for (const auto& [col, coef] : rho_terms[k]) mip.AddToObjective(col, exposure * coef);
        for (const auto& [col, ns] : overlap_terms[k]) mip.AddToObjective(col, exposure * ns);
      }
      std::vector<std::pair<int, double>> row = {{z, 1}};
      for (const auto& [col, coef] : rho_terms[k]) row.push_back({col, -coef});
      mip.AddRow(row, 'G', rho_constant[k]);
      std::vector<std::pair<int, double>> copies = {{z, 1}};
      for (const auto& [col, ns] : overlap_terms[k]) copies.push_back({col, -ns});
      mip.AddRow(copies, 'G', 0);
    } else {
      mip.AddObjectiveConstant(rho_constant[k]);
      for (const auto& [col, coef] : rho_terms[k]) mip.AddToObjective(col, coef);
    }
  }

  // DRAM per kernel (AutoTM eq. 5): every live tensor in DRAM during k, plus
  // those being copied into DRAM during k (both copies are held, DeepTM eq. 7).
  const uint64_t slow_cap = w.device.slow_capacity_bytes;
  auto limited = [&](size_t k) { return limits[k] > 0 && w.live_bytes_at(k) > limits[k]; };
  // Async copies into DRAM during k hold their bytes at k alone.
  std::vector<std::vector<std::pair<int, double>>> copying_in(K);
  for (uint32_t t = 0; t < T; ++t) {
    const double size = static_cast<double>(w.tensors[t].size_bytes) / kBytesPerUnit;
    for (const Boundary& b : graphs[t].boundaries)
      if (b.async_up >= 0) copying_in[b.last_kernel].push_back({b.async_up, size});
  }
  MemoryRows memory_rows = o.memory_rows;
  if (memory_rows == MemoryRows::kAuto) {
    int64_t per_kernel_nonzeros = 0;
    for (size_t k = 0; k < K; ++k)
      if (limited(k)) per_kernel_nonzeros += static_cast<int64_t>(w.live_at(k).size() + copying_in[k].size());
    memory_rows = per_kernel_nonzeros <= kPerKernelNonzeroLimit ? MemoryRows::kPerKernel : MemoryRows::kRunningSum;
  }
  if (memory_rows == MemoryRows::kRunningSum) {
    // D_k - D_{k-1} - (segments beginning at k) + (segments ending at k-1) = 0,
    // D_k (+ copies in) <= L_k. Segments that cover no kernel (async mode's
    // end-of-iteration location) hold nothing.
    std::vector<std::vector<std::pair<int, double>>> change(K + 1);
    for (uint32_t t = 0; t < T; ++t) {
      const double size = static_cast<double>(w.tensors[t].size_bytes) / kBytesPerUnit;
      for (const Segment& s : graphs[t].segments) {
        if (s.first > s.last) continue;
        change[s.first].push_back({s.x, -size});
        change[s.last + 1].push_back({s.x, size});
      }
    }
    const double inf = std::numeric_limits<double>::infinity();
    int previous = -1;
    for (size_t k = 0; k < K; ++k) {
      const bool bound_here = limited(k) && copying_in[k].empty();
      const int d = mip.AddVariable(0, bound_here ? static_cast<double>(limits[k]) / kBytesPerUnit : inf, 0, false);
      std::vector<std::pair<int, double>> row = std::move(change[k]);
      row.push_back({d, 1});
      if (previous >= 0) row.push_back({previous, -1});
      mip.AddRow(row, 'E', 0);
      if (limited(k) && !copying_in[k].empty()) {
        std::vector<std::pair<int, double>> cap = copying_in[k];
        cap.push_back({d, 1});
        mip.AddRow(cap, 'L', static_cast<double>(limits[k]) / kBytesPerUnit);
      }
      previous = d;
    }
  }
  for (size_t k = 0; k < K; ++k) {
    const bool dram_row = memory_rows == MemoryRows::kPerKernel && limited(k);
    const bool slow_limited = slow_cap > 0 && w.live_bytes_at(k) > slow_cap;
    if (!dram_row && !slow_limited) continue;
    std::vector<std::pair<int, double>> dram, slow;
    double slow_rhs = static_cast<double>(slow_cap) / kBytesPerUnit;
    for (uint32_t t : w.live_at(k)) {
      const Tensor& x = w.tensors[t];
      const TensorGraph& g = graphs[t];
      const int s = g.segment_of[k - x.alloc_kernel];
      const double size = static_cast<double>(x.size_bytes) / kBytesPerUnit;
      dram.push_back({g.segments[s].x, size});
      slow.push_back({g.segments[s].x, -size});
      slow_rhs -= size;
      if (static_cast<size_t>(s) < g.boundaries.size() && g.boundaries[s].last_kernel == static_cast<int32_t>(k) &&
          g.boundaries[s].async_down >= 0)
        slow.push_back({g.boundaries[s].async_down, size});
    }
    if (dram_row) {
      dram.insert(dram.end(), copying_in[k].begin(), copying_in[k].end());
      mip.AddRow(dram, 'L', static_cast<double>(limits[k]) / kBytesPerUnit);
    }
    if (slow_limited) mip.AddRow(slow, 'L', slow_rhs);
  }

  // MIP start: first-touch under the tightest L_k never moves anything and
  // fits every kernel, so even a solve stopped at once has a plan. The
  // asynchronous model's relaxation is weak, so it starts instead from the
  // synchronous model's solution (same variables, every copy charged in
  // full), which it can only improve on.
  MipOptions options;
  options.time_limit_seconds = o.time_limit_seconds;
  options.relative_gap = o.mip_gap;
  options.preprocess = o.preprocess;
  uint64_t tightest = 0;
  for (uint64_t l : limits)
    if (l > 0) tightest = tightest == 0 ? l : std::min(tightest, l);
  double warm_seconds = 0;
  std::optional<AutoTmIlpResult> warm;  // the asynchronous formulation's synchronous start
  bool first_touch_start = false;       // options.start is first-touch's static placement
  if (!o.start_values.empty()) {
    if (o.start_values.size() != static_cast<size_t>(mip.num_variables()))
      throw std::invalid_argument("SolveAutoTmIlp: start_values of another program (" +
                                  std::to_string(o.start_values.size()) + " values for " +
                                  std::to_string(mip.num_variables()) + " variables)");
    for (int col = 0; col < mip.num_variables(); ++col)
      if (mip.is_integer(col)) options.start.push_back({col, std::round(o.start_values[col])});
  } else if (o.start_tier) {
    for (uint32_t t = 0; t < T; ++t)
      for (const Segment& s : graphs[t].segments)
        if (std::optional<Tier> tier = o.start_tier(t, s.first, s.last))
          options.start.push_back({s.x, *tier == Tier::kDram ? 1.0 : 0.0});
  } else if (o.dram_limit_bytes > 0) {
    if (overlap_objective) {
      AutoTmIlpOptions sync = o;
      sync.formulation = AutoTmFormulation::kSynchronous;
      sync.kernel_limits = limits;
      sync.time_limit_seconds = o.time_limit_seconds / 4;
      const auto warm_begin = std::chrono::steady_clock::now();
      try {
        warm = SolveAutoTmIlp(w, sync);
        for (int col = 0; col < static_cast<int>(warm->mip.values.size()) && col < mip.num_variables(); ++col)
          if (mip.is_integer(col)) options.start.push_back({col, std::round(warm->mip.values[col])});
      } catch (const std::runtime_error& e) {
        // The synchronous solve found nothing in its quarter of the time (a
        // paper-scale ResNet-152 under load): the first-touch start instead.
        LogWarn("autotm_warm_start_failed").kv("detail", e.what());
      }
      warm_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_begin).count();
      options.time_limit_seconds = std::max(0.1, o.time_limit_seconds - warm_seconds);
    }
    if (!warm) {
      const PlacementPlan start = FirstTouchPlan(w, tightest);
      for (uint32_t t = 0; t < T; ++t)
        for (const Segment& s : graphs[t].segments)
          options.start.push_back({s.x, start.initial_tiers[t] == Tier::kDram ? 1.0 : 0.0});
      first_touch_start = true;
    }
  }

  AutoTmIlpResult r;
  r.variables = mip.num_variables();
  r.integer_variables = mip.num_integer();
  r.constraints = mip.num_rows();
  r.nonzeros = mip.num_nonzeros();
  r.memory_rows = memory_rows;
  r.mip = mip.Solve(options);
  r.mip.seconds += warm_seconds;
  // CBC can end worse than the MIP start it was given: its preprocessing
  // loses the start on some programs (a ResNet-152's asynchronous program
  // ended at 1.096e9 from a start of 1.023e9). The synchronous start's plan
  // is valid here, and the cost model (which this formulation models
  // exactly) says which is faster.
  std::optional<double> warm_ns;
  if (warm) warm_ns = EvaluatePlan(w, warm->plan).total_ns;
  if (warm_ns && (!r.mip.has_solution || *warm_ns < r.mip.objective)) {
    r.mip.has_solution = true;
    r.mip.objective = *warm_ns;
    // CBC's gap was its own incumbent's; the bound holds for the start too.
    r.mip.gap = RelativeGap(r.mip.objective, r.mip.bound);
    r.mip.values.assign(mip.num_variables(), 0.0);
    for (int col = 0; col < mip.num_variables() && col < static_cast<int>(warm->mip.values.size()); ++col)
      if (mip.is_integer(col)) r.mip.values[col] = std::round(warm->mip.values[col]);
    r.start_kept = true;
  }
  // First-touch's placement fits every kernel's limit, so a solve that ends
  // (a time limit under load, a crash) without even that start still has a
  // plan: the start, with no moves. Its objective is the cost model's.
  bool first_touch_kept = false;
  if (!r.mip.has_solution && first_touch_start) {
    r.mip.values.assign(mip.num_variables(), 0.0);
    for (const auto& [col, value] : options.start) r.mip.values[col] = value;
    r.mip.has_solution = true;
    r.start_kept = true;
    first_touch_kept = true;
    LogWarn("autotm_first_touch_kept").kv("status", r.mip.status).kv("formulation", AutoTmFormulationName(o.formulation));
  }
  if (!r.mip.has_solution)
    throw std::runtime_error(std::string("AutoTM ") + AutoTmFormulationName(o.formulation) +
                             " ILP: CBC found no solution (" + r.mip.status + ")");
  r.predicted_ns = r.mip.objective;

  // Read the plan off the flow graphs.
  auto on = [&](int col) { return col >= 0 && r.mip.values[col] > 0.5; };
  PlacementPlan& plan = r.plan;
  plan = PlacementPlan::Uniform(w, Tier::kSlow, o.dram_limit_bytes);
  plan.mode = o.mode;
  for (uint32_t t = 0; t < T; ++t) {
    const TensorGraph& g = graphs[t];
    const Tensor& x = w.tensors[t];
    plan.initial_tiers[t] = on(g.segments.front().x) ? Tier::kDram : Tier::kSlow;
    for (size_t s = 0; s < g.boundaries.size(); ++s) {
      const bool before = on(g.segments[s].x), after = on(g.segments[s + 1].x);
      if (before == after) continue;
      const Boundary& b = g.boundaries[s];
      const bool async_taken = on(b.async_up) || on(b.async_down);
      const bool use_async = b.async_up >= 0 && (async_taken || b.sync_up < 0);
      int32_t after_kernel = use_async ? b.last_kernel - 1 : b.last_kernel;
      if (after_kernel < static_cast<int32_t>(x.alloc_kernel) || after_kernel + 1 > static_cast<int32_t>(x.free_kernel))
        throw std::logic_error("AutoTM ILP: a move outside the tensor's lifetime");
      plan.migrations.push_back({after_kernel, t, after ? Tier::kDram : Tier::kSlow});
    }
  }
  plan.Normalize();
  if (first_touch_kept) {
    r.predicted_ns = r.mip.objective = EvaluatePlan(w, plan).total_ns;
    r.mip.gap = RelativeGap(r.mip.objective, r.mip.bound);
  }
  return r;
}

std::string AutoTmPolicy::name() const {
  static constexpr EnumName<AutoTmFormulation> kNames[] = {{AutoTmFormulation::kStatic, "autotm-static"},
                                                           {AutoTmFormulation::kSynchronous, "autotm-sync"},
                                                           {AutoTmFormulation::kAsynchronous, "autotm-async"}};
  return NameOfEnumOr(kNames, formulation_, "autotm");
}

PolicyResult AutoTmPolicy::DecideImpl(const Workload& w, const PolicyContext& ctx) const {
  AutoTmIlpOptions o;
  o.formulation = formulation_;
  o.mode = ctx.mode;
  o.dram_limit_bytes = ctx.dram_limit_bytes;
  o.kernel_limits.assign(w.num_kernels(), ctx.dram_limit_bytes);
  o.time_limit_seconds = ctx.solver_time_limit_seconds;
  o.mip_gap = ctx.mip_gap;

  PolicyResult result;
  SolverStats stats;
  AutoTmIlpResult solve;
  bool fits = false;
  const int max_solves = std::max(1, ctx.max_solves);
  while (stats.solves < max_solves) {
    solve = SolveAutoTmIlp(w, o);
    ++stats.solves;
    stats.nodes += solve.mip.nodes;
    stats.solve_seconds += solve.mip.seconds;
    stats.peak_added_bytes = std::max(stats.peak_added_bytes, solve.mip.peak_added_bytes);
    // The ILP's DRAM model is the cost model's, so a plan over the limit
    // means something the ILP does not see (rounding today; fragmentation on
    // a real allocator). AutoTM 4.2: shrink L_k where it happened, re-solve.
    const std::vector<uint64_t> dram =
        allocator_model_ ? allocator_model_(w, solve.plan) : ReplayPlan(w, solve.plan).dram_bytes;
    fits = true;
    for (size_t k = 0; k < w.num_kernels(); ++k)
      if (ctx.dram_limit_bytes > 0 && dram.at(k) > ctx.dram_limit_bytes) {
        o.kernel_limits[k] = static_cast<uint64_t>(static_cast<double>(o.kernel_limits[k]) * 0.98);
        fits = false;
      }
    if (fits) break;
  }
  result.plan = solve.plan;
  // Out of solves: fall back to repairing the plan under the cost model.
  result.stats["repairs"] = fits ? 0 : RepairToLimit(w, &result.plan);
  result.stats["fits_after_solves"] = fits ? 1 : 0;
  stats.status = solve.mip.status;
  stats.objective_ns = solve.predicted_ns;
  stats.bound_ns = solve.mip.bound;
  stats.mip_gap = solve.mip.gap;
  stats.variables = solve.variables;
  stats.integer_variables = solve.integer_variables;
  stats.constraints = solve.constraints;
  stats.nonzeros = solve.nonzeros;
  // Not for the synchronous formulation in async mode, which charges every
  // copy as exposed; not after the fragmentation loop shrank a kernel's limit.
  stats.bound_caps_cost_model =
      stats.solves == 1 && !(formulation_ == AutoTmFormulation::kSynchronous && ctx.mode == MigrationMode::kAsync);
  result.solver = stats;
  result.stats["solves"] = stats.solves;
  return result;
}

}  // namespace tensortier
