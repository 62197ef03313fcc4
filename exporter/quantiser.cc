#include "exporter/quantiser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "hostrt/lookup_format.h"

namespace tensortier {
namespace lf = lookup_format;
namespace {

constexpr int kMaxBits = static_cast<int>(lf::kMaxFeatureBits);
constexpr size_t kMaxEdges = (size_t{1} << kMaxBits) - 1;
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

int BitsFor(size_t edges) {
  int b = 0;
  while ((size_t{1} << b) < edges + 1) ++b;
  return b;
}

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
// cells' counts. Copied to try a move without making it.
struct GridState {
  std::vector<std::vector<uint32_t>> edges;  // per feature, ascending; fine >= edge lies above
  std::vector<std::vector<uint16_t>> bin;    // per feature, per sample
  std::vector<uint32_t> cell_of;             // per sample, dense cell ids
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
// splits every cell in the bin of that feature it falls in. Each round first
// uses the edges the key bits already pay for (a feature with b bits holds up
// to 2^b - 1 edges), then buys the bit worth most: for each feature, the
// edges one more bit there would allow are placed greedily and their gains
// summed. Stops when nothing helps or the key is full.
class EdgeAllocator {
 public:
  EdgeAllocator(const std::vector<LabelledObservation>& samples, const std::vector<FeatureData>& features,
                uint32_t max_key_bits)
      : samples_(samples), features_(features), max_key_bits_(max_key_bits) {
    uint64_t others = 0;
    for (const LabelledObservation& s : samples) others += s.exact ? 0 : 1;
    scorer_ = Scorer(others);
    state_.edges.resize(features.size());
    state_.bin.assign(features.size(), std::vector<uint16_t>(samples.size(), 0));
    state_.cell_of.assign(samples.size(), 0);
    state_.counts.assign(1, Counts{});
    for (size_t i = 0; i < samples.size(); ++i) state_.counts[0].k[Type(i)]++;
  }

  void Run() {
    for (;;) {
      // Edges already paid for.
      Move free_move;
      for (size_t f = 0; f < features_.size(); ++f) {
        const size_t slots = Slots(state_, f, Cap(state_, f, 0));
        if (slots > 0) BestMoveOn(state_, f, slots, &free_move);
      }
      if (free_move.feature >= 0) {
        Apply(state_, free_move);
        continue;
      }
      if (UsedBits(state_) >= max_key_bits_) return;
      // One more bit, where it buys the most.
      int64_t best_gain = 0;
      GridState best;
      for (size_t f = 0; f < features_.size(); ++f) {
        if (features_[f].constant || BitsFor(state_.edges[f].size()) >= kMaxBits) continue;
        const size_t cap = Cap(state_, f, 1);
        GridState trial = state_;
        int64_t gain = 0;
        for (;;) {
          const size_t slots = Slots(trial, f, cap);
          if (slots == 0) break;
          Move m;
          BestMoveOn(trial, f, slots, &m);
          if (m.feature < 0) break;
          gain += m.gain;
          Apply(trial, m);
        }
        if (gain > best_gain) {
          best_gain = gain;
          best = std::move(trial);
        }
      }
      if (best_gain == 0) return;
      state_ = std::move(best);
    }
  }

  const GridState& state() const { return state_; }

  static uint32_t UsedBits(const GridState& s) {
    uint32_t b = 0;
    for (const auto& e : s.edges) b += static_cast<uint32_t>(BitsFor(e.size()));
    return b;
  }

 private:
  int Type(size_t i) const { return (samples_[i].exact ? 0 : 2) + (samples_[i].action & 1); }

  // Edges feature f may hold with `extra_bits` more key bits than now.
  size_t Cap(const GridState& s, size_t f, int extra_bits) const {
    if (features_[f].constant) return 0;
    const int bits = std::min(kMaxBits, BitsFor(s.edges[f].size()) + extra_bits);
    return (size_t{1} << bits) - 1;
  }
  size_t Slots(const GridState& s, size_t f, size_t cap) const {
    return cap > s.edges[f].size() ? cap - s.edges[f].size() : 0;
  }

  // The best single edge on f, and (with two slots) the best pair fencing a
  // misanswered exact state off: one whose value lies between its
  // cell-mates' on every feature gains nothing from any single edge.
  void BestMoveOn(const GridState& s, size_t f, size_t slots, Move* best) {
    BestEdgeOn(s, f, best);
    if (slots >= 2 && !(best->gain >= scorer_.exact_weight())) BestPairOn(s, f, best);
  }

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
        if (mark_[c]) continue;
        mark_[c] = 1;
        touched_.push_back(c);
        baseline += scorer_(s.counts[c]);
      }
      int64_t current = baseline;
      for (size_t j = start; j + 1 < end; ++j) {
        const uint32_t i = f.order[j];
        const uint32_t c = s.cell_of[i];
        current -= scorer_.Split(left_[c], s.counts[c]);
        left_[c].k[Type(i)]++;
        current += scorer_.Split(left_[c], s.counts[c]);
        const uint32_t here = f.fine[i], next = f.fine[f.order[j + 1]];
        if (here != next) Consider(best, static_cast<int>(fi), (here + next + 1) / 2, 0, baseline - current);
      }
      for (uint32_t c : touched_) {
        mark_[c] = 0;
        left_[c] = Counts{};
      }
      start = end;
    }
  }

  void BestPairOn(const GridState& s, size_t fi, Move* best) {
    const FeatureData& f = features_[fi];
    const std::vector<uint16_t>& bin = s.bin[fi];
    std::vector<int> label(s.counts.size());
    for (size_t c = 0; c < s.counts.size(); ++c) {
      const uint32_t* k = s.counts[c].k;
      label[c] = k[0] + k[1] > 0 ? (k[1] > k[0]) : (k[3] > k[2]);
    }
    std::set<std::pair<uint32_t, uint32_t>> tried;
    size_t candidates = 0;
    const size_t n = f.order.size();
    for (size_t i = 0; i < samples_.size() && candidates < kMaxIsolationCandidates; ++i) {
      if (!samples_[i].exact || (samples_[i].action & 1) == label[s.cell_of[i]]) continue;
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
      ++candidates;
      // Gain over the cells of bin b: split three ways.
      size_t first = static_cast<size_t>(lo - f.order.begin()), last = static_cast<size_t>(hi - f.order.begin());
      while (first > 0 && bin[f.order[first - 1]] == b) --first;
      while (last < n && bin[f.order[last]] == b) ++last;
      parts_.clear();
      for (size_t j = first; j < last; ++j) {
        const uint32_t x = f.order[j];
        const int part = f.fine[x] < lower ? 0 : f.fine[x] < upper ? 1 : 2;
        parts_[std::make_pair(s.cell_of[x], part)].k[Type(x)]++;
      }
      int64_t gain = 0;
      for (const auto& kv : parts_) gain -= scorer_(kv.second);
      std::set<uint32_t> cells;
      for (const auto& kv : parts_)
        if (cells.insert(kv.first.first).second) gain += scorer_(s.counts[kv.first.first]);
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
  uint32_t max_key_bits_;
  Scorer scorer_;
  GridState state_;
  std::vector<Counts> left_;
  std::vector<uint8_t> mark_;
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
  if (samples.size() >= (size_t{1} << 24)) throw std::invalid_argument("BuildGeneralisedTable: too many samples");
  if (options.max_key_bits > lf::kMaxKeyBits || options.fine_bins < 2 || options.fine_bins > lf::kMaxFineBins)
    throw std::invalid_argument("BuildGeneralisedTable: key bits or fine bins out of range");
  QuantiserStats stats;
  const size_t n = samples.size();
  const uint32_t fine_bins = options.fine_bins;
  const float top = static_cast<float>(fine_bins - 1);

  for (const LabelledObservation& s : samples) (s.exact ? stats.exact_states : stats.coverage_states)++;

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
    f.fine.resize(n);
    for (size_t i = 0; i < n; ++i)
      f.fine[i] = lf::FineIndex(samples[i].observation[static_cast<size_t>(fi)], f.lo, f.scale, top);
    f.order.resize(n);
    std::iota(f.order.begin(), f.order.end(), 0u);
    std::stable_sort(f.order.begin(), f.order.end(), [&](uint32_t x, uint32_t y) { return f.fine[x] < f.fine[y]; });
  }

  // Permutation importance: the share of greedy actions that change when a
  // feature takes the value of another random sample. Reported only (inspect
  // shows it): it tells what the policy looks at, next to what the key kept.
  {
    std::mt19937_64 rng(options.seed);
    const size_t m = std::min<size_t>(n, options.importance_samples);
    std::vector<size_t> pick(n);
    std::iota(pick.begin(), pick.end(), 0);
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.resize(m);
    std::vector<Observation> probe(m);
    std::vector<uint8_t> actions(m);
    for (FeatureData& f : features) {
      if (f.constant) continue;
      std::uniform_int_distribution<size_t> other(0, n - 1);
      for (size_t i = 0; i < m; ++i) {
        probe[i] = samples[pick[i]].observation;
        probe[i][static_cast<size_t>(f.index)] = samples[other(rng)].observation[static_cast<size_t>(f.index)];
      }
      policy(probe.data(), m, actions.data());
      size_t flips = 0;
      for (size_t i = 0; i < m; ++i) flips += actions[i] != samples[pick[i]].action ? 1 : 0;
      f.importance = m ? static_cast<double>(flips) / static_cast<double>(m) : 0.0;
      stats.importance.emplace_back(f.index, f.importance);
    }
  }

  EdgeAllocator allocator(samples, features, options.max_key_bits);
  allocator.Run();
  const GridState& grid = allocator.state();
  const uint32_t used = EdgeAllocator::UsedBits(grid);

  // The table.
  GeneralisedTable g;
  g.observation_size = kObservationSize;
  g.fine_bins = fine_bins;
  g.key_bits = used;
  uint8_t shift = 0;
  for (size_t fi = 0; fi < features.size(); ++fi) {
    const FeatureData& f = features[fi];
    const std::vector<uint32_t>& edges = grid.edges[fi];
    const int bits = BitsFor(edges.size());
    if (bits == 0) continue;
    QuantisedFeature q;
    q.observation_index = static_cast<uint16_t>(f.index);
    q.bits = static_cast<uint8_t>(bits);
    q.shift = shift;
    q.lo = f.lo;
    q.scale = f.scale;
    q.remap.resize(fine_bins);
    for (uint32_t i = 0; i < fine_bins; ++i)
      q.remap[i] = static_cast<uint8_t>(std::upper_bound(edges.begin(), edges.end(), i) - edges.begin());
    shift = static_cast<uint8_t>(shift + bits);
    g.features.push_back(std::move(q));
    stats.bits_by_feature.emplace_back(f.index, bits);
  }
  const uint64_t cells = uint64_t{1} << used;
  g.bitmap.assign(used >= 6 ? cells / 64 : 1, 0);
  stats.cells = cells;

  // Majorities per cell.
  std::vector<uint32_t> counts(cells * 4, 0);  // exact 0, exact 1, coverage 0, coverage 1
  std::vector<uint32_t> cell_of(n);
  for (size_t i = 0; i < n; ++i) {
    cell_of[i] = g.CellOf(samples[i].observation.data());
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
      const size_t bins = size_t{1} << qf.bits;
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
        batch[i][qf.observation_index] = rep[q][(cell >> qf.shift) & ((1u << qf.bits) - 1)];
      }
    }
    policy(batch.data(), m, actions.data());
    for (size_t i = 0; i < m; ++i) g.SetAction(centre_cells[start + i], actions[i]);
  }
  stats.cells_from_centres = centre_cells.size();

  if (getenv("TT_QDEBUG"))
    for (size_t i = 0; i < n; ++i) {
      if (!samples[i].exact || g.ActionOfCell(cell_of[i]) == (samples[i].action & 1)) continue;
      for (size_t j = 0; j < n; ++j) {
        if (cell_of[j] != cell_of[i] || !samples[j].exact) continue;
        fprintf(stderr, "cell %u sample %zu action %d:", cell_of[i], j, samples[j].action);
        for (float v : samples[j].observation) fprintf(stderr, " %.6g", v);
        fprintf(stderr, "\n");
      }
    }
  for (size_t i = 0; i < n; ++i) {
    const bool wrong = g.ActionOfCell(cell_of[i]) != (samples[i].action & 1);
    (samples[i].exact ? stats.exact_disagreements : stats.coverage_disagreements) += wrong ? 1 : 0;
  }
  for (uint64_t w : g.bitmap) stats.slow_cells += static_cast<uint64_t>(__builtin_popcountll(w));
  if (stats_out) *stats_out = std::move(stats);
  return g;
}

}  // namespace tensortier
