#include "exporter/quantiser.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "hostrt/lookup_format.h"

namespace tensortier {
namespace lf = lookup_format;
namespace {

// Misanswered exact states tried per search for a pair of edges around one.
constexpr size_t kMaxIsolationCandidates = 64;

// One observation feature over the samples (fixed once computed).
struct FeatureData {
  int index = 0;
  bool constant = true;
  float lo = 0, scale = 1;
  std::vector<uint32_t> fine;   // per sample
  std::vector<uint32_t> order;  // samples by ascending fine bin
  double importance = 0;
};

// Per cell: exact states answering 0 and 1, other states answering 0 and 1.
struct Counts {
  uint32_t k[4] = {0, 0, 0, 0};
};

// A cell's disagreements when it answers the majority of its exact states,
// or of its other states when it has none, folded into one number in which
// one exact state outweighs all other states together.
class Scorer {
 public:
  explicit Scorer(uint64_t others = 0) : exact_weight_(static_cast<int64_t>(others) + 1) {}
  int64_t operator()(const Counts& c) const {
    const uint32_t* k = c.k;
    if (k[0] + k[1] > 0) {
      const bool slow = k[1] > k[0];
      return exact_weight_ * (slow ? k[0] : k[1]) + (slow ? k[2] : k[3]);
    }
    return std::min(k[2], k[3]);
  }
  int64_t Split(const Counts& left, const Counts& total) const {
    Counts right;
    for (int i = 0; i < 4; ++i) right.k[i] = total.k[i] - left.k[i];
    return (*this)(left) + (*this)(right);
  }
  int64_t exact_weight() const { return exact_weight_; }

 private:
  int64_t exact_weight_;
};

// The grid so far: edges per feature, every sample's bin and cell, and the
// cells' counts.
struct GridState {
  std::vector<std::vector<uint32_t>> edges;  // per feature, ascending; fine >= edge lies above
  std::vector<std::vector<uint16_t>> bin;    // per feature, per sample
  std::vector<uint32_t> cell_of;             // per sample, dense ids of the non-empty cells
  std::vector<Counts> counts;                // per cell
};

struct Move {
  int feature = -1;
  uint32_t edge = 0;
  uint32_t second_edge = 0;  // 0 = none (no value lies below fine bin 0)
  int64_t gain = 0;
};

// Places bin edges so that the grid's cells answer like the samples: exact
// states first, then the others. Cells form a grid, so an edge on a feature
// splits every cell in the bin of that feature it falls in, and multiplies
// the cell count by (bins + 1) / bins. Each step makes the move (one edge, or
// two fencing one exact state off) with the most gain per bit of cell count
// it uses, exact gains before others; it stops when nothing helps within
// max_cells.
class EdgeAllocator {
 public:
  EdgeAllocator(const std::vector<LabelledObservation>& samples, const std::vector<FeatureData>& features,
                uint64_t max_cells)
      : samples_(samples), features_(features), max_cells_(max_cells) {
    uint64_t others = 0;
    for (const LabelledObservation& s : samples) others += s.exact ? 0 : 1;
    scorer_ = Scorer(others);
    // Compact per-sample types: the sweeps touch them in feature order,
    // which is random order for the 64-byte observations.
    type_.resize(samples.size());
    for (size_t i = 0; i < samples.size(); ++i)
      type_[i] = static_cast<uint8_t>((samples[i].exact ? 0 : 2) + (samples[i].action & 1));
    state_.edges.resize(features.size());
    state_.bin.assign(features.size(), std::vector<uint16_t>(samples.size(), 0));
    state_.cell_of.assign(samples.size(), 0);
    state_.counts.assign(1, Counts{});
    for (size_t i = 0; i < samples.size(); ++i) state_.counts[0].k[Type(i)]++;
  }

  void Run() {
    for (;;) {
      const uint64_t cells = CellCount(state_);
      // A cell whose samples all give one action scores 0 however it is
      // split: the search skips its samples (after a few edges, most).
      impure_.resize(state_.counts.size());
      for (size_t c = 0; c < state_.counts.size(); ++c) impure_[c] = scorer_(state_.counts[c]) > 0;
      // Exact states their cell answers wrongly, for the pair search.
      misanswered_.clear();
      for (size_t i = 0; i < samples_.size() && misanswered_.size() < kMaxIsolationCandidates; ++i) {
        if (type_[i] >= 2) continue;
        const uint32_t* k = state_.counts[state_.cell_of[i]].k;
        if ((type_[i] & 1) != (k[1] > k[0] ? 1 : 0)) misanswered_.push_back(static_cast<uint32_t>(i));
      }
      Move best;
      double best_exact_rate = 0, best_rate = 0;
      for (size_t f = 0; f < features_.size(); ++f) {
        if (features_[f].constant) continue;
        const uint64_t bins = state_.edges[f].size() + 1;
        auto consider = [&](const Move& m, uint64_t added) {
          if (m.feature < 0) return;
          const double bits = std::log2(static_cast<double>(bins + added) / static_cast<double>(bins));
          const double exact_rate = static_cast<double>(m.gain / scorer_.exact_weight()) / bits;
          const double rate = static_cast<double>(m.gain) / bits;
          if (exact_rate > best_exact_rate || (exact_rate == best_exact_rate && rate > best_rate)) {
            best = m;
            best_exact_rate = exact_rate;
            best_rate = rate;
          }
        };
        auto fits = [&](uint64_t added) {
          return bins + added <= lf::kMaxBinsPerFeature && cells / bins * (bins + added) <= max_cells_;
        };
        if (!fits(1)) continue;
        Move single;
        BestEdgeOn(state_, f, &single);
        consider(single, 1);
        if (single.gain < scorer_.exact_weight() && fits(2)) {
          Move pair;
          BestPairOn(state_, f, &pair);
          consider(pair, 2);
        }
      }
      if (best.feature < 0) return;
      Apply(state_, best);
    }
  }

  const GridState& state() const { return state_; }

  static uint64_t CellCount(const GridState& s) {
    uint64_t cells = 1;
    for (const auto& e : s.edges) cells *= e.size() + 1;
    return cells;
  }

 private:
  int Type(size_t i) const { return type_[i]; }

  void Consider(Move* best, int feature, uint32_t edge, uint32_t second, int64_t gain) {
    if (gain > best->gain) {
      best->feature = feature;
      best->edge = edge;
      best->second_edge = second;
      best->gain = gain;
    }
  }

  void BestEdgeOn(const GridState& s, size_t fi, Move* best) {
    const FeatureData& f = features_[fi];
    const std::vector<uint16_t>& bin = s.bin[fi];
    left_.assign(s.counts.size(), Counts{});
    mark_.assign(s.counts.size(), 0);
    const size_t n = f.order.size();
    size_t start = 0;
    while (start < n) {
      // One bin of f: samples [start, end) of its order.
      const uint16_t b = bin[f.order[start]];
      size_t end = start;
      while (end < n && bin[f.order[end]] == b) ++end;
      int64_t baseline = 0;
      touched_.clear();
      for (size_t j = start; j < end; ++j) {
        const uint32_t c = s.cell_of[f.order[j]];
        if (!impure_[c] || mark_[c]) continue;
        mark_[c] = 1;
        touched_.push_back(c);
        baseline += scorer_(s.counts[c]);
      }
      // Sweep the bin upwards; an edge between two successive values splits
      // each cell into the samples below it (left_) and the rest.
      int64_t current = baseline;
      bool have_previous = false;
      uint32_t previous = 0;
      for (size_t j = start; j < end && !touched_.empty(); ++j) {
        const uint32_t i = f.order[j];
        const uint32_t c = s.cell_of[i];
        if (!impure_[c]) continue;
        const uint32_t value = f.fine[i];
        if (have_previous && value != previous)
          Consider(best, static_cast<int>(fi), (previous + value + 1) / 2, 0, baseline - current);
        current -= scorer_.Split(left_[c], s.counts[c]);
        left_[c].k[Type(i)]++;
        current += scorer_.Split(left_[c], s.counts[c]);
        previous = value;
        have_previous = true;
      }
      for (uint32_t c : touched_) {
        mark_[c] = 0;
        left_[c] = Counts{};
      }
      start = end;
    }
  }

  // A pair of edges on f fences off a misanswered exact state that lies
  // between its cell-mates' values on every feature, where no single edge
  // gains anything.
  void BestPairOn(const GridState& s, size_t fi, Move* best) {
    const FeatureData& f = features_[fi];
    const std::vector<uint16_t>& bin = s.bin[fi];
    std::set<std::pair<uint32_t, uint32_t>> tried;
    const size_t n = f.order.size();
    for (uint32_t i : misanswered_) {
      // The distinct values next to this one in its bin, below and above.
      const uint32_t v = f.fine[i];
      const uint16_t b = bin[i];
      auto lo = std::lower_bound(f.order.begin(), f.order.end(), v,
                                 [&](uint32_t x, uint32_t value) { return f.fine[x] < value; });
      auto hi = std::upper_bound(f.order.begin(), f.order.end(), v,
                                 [&](uint32_t value, uint32_t x) { return value < f.fine[x]; });
      if (lo == f.order.begin() || bin[*(lo - 1)] != b || hi == f.order.end() || bin[*hi] != b) continue;
      const uint32_t lower = (f.fine[*(lo - 1)] + v + 1) / 2, upper = (v + f.fine[*hi] + 1) / 2;
      if (!tried.insert({lower, upper}).second) continue;
      // Gain over the impure cells of bin b, split three ways.
      size_t first = static_cast<size_t>(lo - f.order.begin()), last = static_cast<size_t>(hi - f.order.begin());
      while (first > 0 && bin[f.order[first - 1]] == b) --first;
      while (last < n && bin[f.order[last]] == b) ++last;
      parts_.clear();
      for (size_t j = first; j < last; ++j) {
        const uint32_t x = f.order[j];
        const uint32_t c = s.cell_of[x];
        if (!impure_[c]) continue;
        const int part = f.fine[x] < lower ? 0 : f.fine[x] < upper ? 1 : 2;
        parts_[std::make_pair(c, part)].k[Type(x)]++;
      }
      int64_t gain = 0;
      uint32_t last_cell = UINT32_MAX;
      for (const auto& kv : parts_) {  // ordered by cell, then part
        gain -= scorer_(kv.second);
        if (kv.first.first != last_cell) gain += scorer_(s.counts[kv.first.first]);
        last_cell = kv.first.first;
      }
      Consider(best, static_cast<int>(fi), lower, upper, gain);
    }
  }

  void Apply(GridState& s, const Move& m) const {
    AddEdge(s, static_cast<size_t>(m.feature), m.edge);
    if (m.second_edge) AddEdge(s, static_cast<size_t>(m.feature), m.second_edge);
  }

  void AddEdge(GridState& s, size_t fi, uint32_t edge) const {
    const FeatureData& f = features_[fi];
    std::vector<uint32_t>& edges = s.edges[fi];
    auto at = std::upper_bound(edges.begin(), edges.end(), edge);
    const uint16_t split_bin = static_cast<uint16_t>(at - edges.begin());
    edges.insert(at, edge);
    // Samples at or above the edge move up a bin; those of the split bin
    // also move to a new cell (one per old cell).
    std::vector<int64_t> upper(s.counts.size(), -1);
    std::vector<uint16_t>& bin = s.bin[fi];
    for (size_t i = 0; i < samples_.size(); ++i) {
      if (f.fine[i] < edge) continue;
      const bool in_split = bin[i] == split_bin;
      bin[i]++;
      if (!in_split) continue;
      const uint32_t old = s.cell_of[i];
      if (upper[old] < 0) {
        upper[old] = static_cast<int64_t>(s.counts.size());
        s.counts.push_back(Counts{});
      }
      s.counts[old].k[Type(i)]--;
      s.cell_of[i] = static_cast<uint32_t>(upper[old]);
      s.counts[s.cell_of[i]].k[Type(i)]++;
    }
  }

  const std::vector<LabelledObservation>& samples_;
  const std::vector<FeatureData>& features_;
  uint64_t max_cells_;
  Scorer scorer_;
  GridState state_;
  std::vector<Counts> left_;
  std::vector<uint8_t> mark_;
  std::vector<uint8_t> impure_;  // per cell, for the current step
  std::vector<uint8_t> type_;    // per sample: Counts index
  std::vector<uint32_t> misanswered_;
  std::vector<uint32_t> touched_;
  std::map<std::pair<uint32_t, int>, Counts> parts_;
};

float Median(std::vector<float>& v) {
  if (v.empty()) return 0.0f;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

GeneralisedTable BuildGeneralisedTable(const std::vector<LabelledObservation>& samples,
                                       const BatchGreedyPolicy& policy, const QuantiserOptions& options,
                                       QuantiserStats* stats_out) {
  if (samples.empty()) throw std::invalid_argument("BuildGeneralisedTable: no samples");
  if (options.max_cells < 1 || options.max_cells > lf::kMaxCells || options.fine_bins < 2 ||
      options.fine_bins > lf::kMaxFineBins)
    throw std::invalid_argument("BuildGeneralisedTable: cell count or fine bins out of range");
  QuantiserStats stats;
  const size_t n = samples.size();
  const uint32_t fine_bins = options.fine_bins;
  const float top = static_cast<float>(fine_bins - 1);
  for (const LabelledObservation& s : samples) {
    (s.exact ? stats.exact_states : stats.coverage_states)++;
    if (s.dont_care) (s.exact ? stats.exact_dont_care : stats.coverage_dont_care)++;
  }

  // The edge search works on the states whose action matters, and costs
  // O(states) per edge: past max_*_samples it looks at a random subsample.
  // Ranges and the cells' contents use every state.
  const uint64_t exact_care = stats.exact_states - stats.exact_dont_care;
  const uint64_t other_care = stats.coverage_states - stats.coverage_dont_care;
  std::vector<LabelledObservation> subsample;
  const bool dont_care = stats.exact_dont_care + stats.coverage_dont_care > 0;
  if (dont_care || exact_care > options.max_exact_samples || other_care > options.max_other_samples) {
    std::mt19937_64 rng(options.seed ^ 0x5eed);
    std::uniform_real_distribution<double> u(0, 1);
    const double keep_exact =
        exact_care ? std::min(1.0, static_cast<double>(options.max_exact_samples) / exact_care) : 1.0;
    const double keep_other =
        other_care ? std::min(1.0, static_cast<double>(options.max_other_samples) / other_care) : 1.0;
    const bool sampling = keep_exact < 1.0 || keep_other < 1.0;
    for (const LabelledObservation& s : samples)
      if (!s.dont_care && (!sampling || u(rng) < (s.exact ? keep_exact : keep_other))) subsample.push_back(s);
  }
  const std::vector<LabelledObservation>& search = dont_care || !subsample.empty() ? subsample : samples;
  const size_t ns = search.size();
  if (ns >= (size_t{1} << 32) - 1) throw std::invalid_argument("BuildGeneralisedTable: too many samples");

  std::vector<FeatureData> features(kObservationSize);
  for (int fi = 0; fi < kObservationSize; ++fi) {
    FeatureData& f = features[static_cast<size_t>(fi)];
    f.index = fi;
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (const LabelledObservation& s : samples) {
      const float v = s.observation[static_cast<size_t>(fi)];
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    f.constant = !(hi - lo > 1e-6f);
    if (f.constant) {
      stats.dropped_features.push_back(fi);
      continue;
    }
    f.lo = lo;
    // hi lands on the top fine bin's upper edge (and is clamped into it).
    f.scale = static_cast<float>(fine_bins) / (hi - lo);
    f.fine.resize(ns);
    for (size_t i = 0; i < ns; ++i)
      f.fine[i] = lf::FineIndex(search[i].observation[static_cast<size_t>(fi)], f.lo, f.scale, top);
    f.order.resize(ns);
    std::iota(f.order.begin(), f.order.end(), 0u);
    std::stable_sort(f.order.begin(), f.order.end(), [&](uint32_t x, uint32_t y) { return f.fine[x] < f.fine[y]; });
  }

  // Permutation importance: the share of greedy actions that change when a
  // feature takes the value of another random sample. Reported only (inspect
  // shows it): it tells what the policy looks at, next to what the cells keep.
  {
    std::mt19937_64 rng(options.seed);
    const size_t m = ns ? std::min<size_t>(ns, options.importance_samples) : 0;
    std::vector<size_t> pick(ns);
    std::iota(pick.begin(), pick.end(), 0);
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.resize(m);
    std::vector<Observation> probe(m);
    std::vector<uint8_t> actions(m);
    for (FeatureData& f : features) {
      if (f.constant || m == 0) continue;
      std::uniform_int_distribution<size_t> other(0, ns - 1);
      for (size_t i = 0; i < m; ++i) {
        probe[i] = search[pick[i]].observation;
        probe[i][static_cast<size_t>(f.index)] = search[other(rng)].observation[static_cast<size_t>(f.index)];
      }
      policy(probe.data(), m, actions.data());
      size_t flips = 0;
      for (size_t i = 0; i < m; ++i) flips += actions[i] != search[pick[i]].action ? 1 : 0;
      f.importance = m ? static_cast<double>(flips) / static_cast<double>(m) : 0.0;
      stats.importance.emplace_back(f.index, f.importance);
    }
  }

  EdgeAllocator allocator(search, features, options.max_cells);
  allocator.Run();
  const GridState& grid = allocator.state();

  // The table.
  GeneralisedTable g;
  g.observation_size = kObservationSize;
  g.fine_bins = fine_bins;
  uint32_t stride = 1;
  for (size_t fi = 0; fi < features.size(); ++fi) {
    const FeatureData& f = features[fi];
    const std::vector<uint32_t>& edges = grid.edges[fi];
    if (edges.empty()) continue;
    QuantisedFeature q;
    q.observation_index = static_cast<uint16_t>(f.index);
    q.bins = static_cast<uint16_t>(edges.size() + 1);
    q.stride = stride;
    q.lo = f.lo;
    q.scale = f.scale;
    q.remap.resize(fine_bins);
    for (uint32_t i = 0; i < fine_bins; ++i)
      q.remap[i] = static_cast<uint8_t>(std::upper_bound(edges.begin(), edges.end(), i) - edges.begin());
    stride *= q.bins;
    stats.bins_by_feature.emplace_back(f.index, q.bins);
    g.features.push_back(std::move(q));
  }
  const uint64_t cells = stride;
  g.cell_count = stride;
  g.bitmap.assign((cells + 63) / 64, 0);
  stats.cells = cells;

  // Majorities per cell.
  std::vector<uint32_t> counts(cells * 4, 0);  // exact 0, exact 1, coverage 0, coverage 1
  std::vector<uint32_t> cell_of(n);
  for (size_t i = 0; i < n; ++i) {
    cell_of[i] = g.CellOf(samples[i].observation.data());
    if (samples[i].dont_care) continue;  // no vote
    counts[cell_of[i] * 4 + (samples[i].exact ? 0 : 2) + (samples[i].action & 1)]++;
  }
  std::vector<uint32_t> centre_cells;
  for (uint64_t c = 0; c < cells; ++c) {
    const uint32_t* k = &counts[c * 4];
    if (k[0] + k[1] > 0 && k[0] != k[1]) {
      g.SetAction(static_cast<uint32_t>(c), k[1] > k[0]);
      stats.cells_from_exact++;
    } else if (k[0] + k[1] == 0 && k[2] + k[3] > 0 && k[2] != k[3]) {
      g.SetAction(static_cast<uint32_t>(c), k[3] > k[2]);
      stats.cells_from_coverage++;
    } else {
      centre_cells.push_back(static_cast<uint32_t>(c));  // empty, or a tie to break
    }
  }

  // Cell centres: each feature at the median of the samples in its bin (at
  // the bin's middle when none), the features left out of the key at their
  // median over all samples.
  Observation base{};
  std::vector<std::vector<float>> rep(g.features.size());
  {
    std::vector<float> values(n);
    for (int fi = 0; fi < kObservationSize; ++fi) {
      for (size_t i = 0; i < n; ++i) values[i] = samples[i].observation[static_cast<size_t>(fi)];
      base[static_cast<size_t>(fi)] = Median(values);
    }
    for (size_t q = 0; q < g.features.size(); ++q) {
      const QuantisedFeature& qf = g.features[q];
      const size_t bins = qf.bins;
      std::vector<std::vector<float>> in_bin(bins);
      for (size_t i = 0; i < n; ++i) {
        const float v = samples[i].observation[qf.observation_index];
        in_bin[qf.remap[lf::FineIndex(v, qf.lo, qf.scale, top)]].push_back(v);
      }
      rep[q].resize(bins);
      for (size_t b = 0; b < bins; ++b) {
        if (!in_bin[b].empty()) {
          rep[q][b] = Median(in_bin[b]);
          continue;
        }
        uint32_t first = fine_bins, last = 0;
        for (uint32_t i = 0; i < fine_bins; ++i)
          if (qf.remap[i] == b) {
            first = std::min(first, i);
            last = i;
          }
        const double mid = first <= last ? 0.5 * (first + last + 1) : 0.5 * fine_bins;
        rep[q][b] = static_cast<float>(qf.lo + mid / qf.scale);
      }
    }
  }
  const size_t chunk = 8192;
  std::vector<Observation> batch;
  std::vector<uint8_t> actions;
  for (size_t start = 0; start < centre_cells.size(); start += chunk) {
    const size_t m = std::min(chunk, centre_cells.size() - start);
    batch.assign(m, base);
    actions.assign(m, 0);
    for (size_t i = 0; i < m; ++i) {
      const uint32_t cell = centre_cells[start + i];
      for (size_t q = 0; q < g.features.size(); ++q) {
        const QuantisedFeature& qf = g.features[q];
        batch[i][qf.observation_index] = rep[q][(cell / qf.stride) % qf.bins];
      }
    }
    policy(batch.data(), m, actions.data());
    for (size_t i = 0; i < m; ++i) g.SetAction(centre_cells[start + i], actions[i]);
  }
  stats.cells_from_centres = centre_cells.size();

  for (size_t i = 0; i < n; ++i) {
    const bool wrong = !samples[i].dont_care && g.ActionOfCell(cell_of[i]) != (samples[i].action & 1);
    (samples[i].exact ? stats.exact_disagreements : stats.coverage_disagreements) += wrong ? 1 : 0;
  }
  for (uint64_t w : g.bitmap) stats.slow_cells += static_cast<uint64_t>(__builtin_popcountll(w));
  if (stats_out) *stats_out = std::move(stats);
  return g;
}

}  // namespace tensortier
