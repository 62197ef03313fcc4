// A four-tensor, three-kernel graph small enough to score by hand
// (tests/core/test_cost_model.cc derives every number from it).
#pragma once

#include <algorithm>
#include <string>

#include "envs/workload.h"

namespace tensortier::testing {

//   kernel   time   touches (slow penalty ns)
//   k0       100    A r (50), B w (30)
//   k1       200    B r (20), C w (40), D w (25)
//   k2       300    A r (60), C r (10)
//   A 1000 B [0,2]  B 500 B [0,1]  C 400 B [1,2]  D 200 B [0,2]
//   copies: to slow 1 byte/ns, to DRAM 2 bytes/ns
inline Workload HandGraph(bool a_persistent = false) {
  Workload w;
  w.name = "hand";
  w.kernels = {{"k0", 100}, {"k1", 200}, {"k2", 300}};
  w.tensors = {
      {"A", 1000, TensorKind::kActivation, 0, 2, a_persistent},
      {"B", 500, TensorKind::kActivation, 0, 1, false},
      {"C", 400, TensorKind::kActivation, 1, 2, false},
      {"D", 200, TensorKind::kTemporary, 0, 2, false},
  };
  w.accesses = {
      {0, 0, 1, 0, 50}, {0, 1, 0, 1, 30}, {1, 1, 1, 0, 20}, {1, 2, 0, 1, 40},
      {1, 3, 0, 1, 25}, {2, 0, 1, 0, 60}, {2, 2, 1, 0, 10},
  };
  w.device.dram_to_slow_bytes_per_second = 1e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}

enum HandTensor : uint32_t { kA = 0, kB = 1, kC = 2, kD = 3 };

// `w` with one more tensor: `bytes` the framework holds in DRAM, persistent
// and never touched (Tensor::pinned_dram), as the profiler finds a
// TorchScript module's debug records. Finalised; the new tensor is last.
inline Workload WithPinnedBuffer(Workload w, uint64_t bytes) {
  Tensor t;
  t.name = "untracked:4";
  t.size_bytes = bytes;
  t.kind = TensorKind::kTemporary;
  t.alloc_kernel = 0;
  t.free_kernel = static_cast<uint32_t>(w.kernels.size() - 1);
  t.persistent = true;
  t.pinned_dram = true;
  w.tensors.push_back(t);
  w.Finalize();
  return w;
}

// One tensor P (400 B, tensor 0) read at k0 and at k5 and idle between,
// and at each kernel ki a 700 B temporary Xi (tensor 1 + i) that ki writes:
// with a 1,000 B DRAM limit every kernel is a bottleneck, and P's access gap
// spans k1-k4. With `second`, a tensor Q (300 B, tensor 7) written at k1 and
// read at k5 idles over k2-k4 beside P. Kernels take 100 ns; P and Q cost
// 50 ns from the slow tier.
inline Workload LongGapGraph(bool second = false) {
  Workload w;
  w.name = "long-gap";
  for (int k = 0; k < 6; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors.push_back({"P", 400, TensorKind::kActivation, 0, 5, false});
  for (uint32_t k = 0; k < 6; ++k) w.tensors.push_back({"X" + std::to_string(k), 700, TensorKind::kTemporary, k, k, false});
  if (second) w.tensors.push_back({"Q", 300, TensorKind::kActivation, 1, 5, false});
  for (uint32_t k = 0; k < 6; ++k) {
    if (k == 0 || k == 5) w.accesses.push_back({k, 0, 1, 0, 50});
    if (second && k == 1) w.accesses.push_back({1, 7, 0, 1, 50});
    if (second && k == 5) w.accesses.push_back({5, 7, 1, 0, 50});
    w.accesses.push_back({k, 1 + k, 0, 1, 10});
  }
  w.device.dram_to_slow_bytes_per_second = 1e9;
  w.device.slow_to_dram_bytes_per_second = 2e9;
  w.Finalize();
  return w;
}
constexpr uint32_t kLongGapTensor = 0;

// Two 400 B tensors A and B (tensors 0 and 1) used at k0 and k9, a 300 B
// temporary X (2) at k2 and a 700 B temporary Y (3) at k5, over ten 100 ns
// kernels. With a 1,000 B DRAM limit, A and B kept through their gap leave
// Y 200 B: it needs both evicted. Y costs 300 ns from the slow tier, A and B
// 200 ns a use, X 10 ns; copies are cheap (10 and 20 bytes/ns), so the
// fastest plan evicts A and B over k2-k8 and gives Y DRAM.
inline Workload RoomGraph() {
  Workload w;
  w.name = "room";
  for (int k = 0; k < 10; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors = {
      {"A", 400, TensorKind::kActivation, 0, 9, false},
      {"B", 400, TensorKind::kActivation, 0, 9, false},
      {"X", 300, TensorKind::kTemporary, 2, 2, false},
      {"Y", 700, TensorKind::kTemporary, 5, 5, false},
  };
  w.accesses = {
      {0, 0, 0, 1, 200}, {0, 1, 0, 1, 200}, {2, 2, 0, 1, 10}, {5, 3, 0, 1, 300}, {9, 0, 1, 0, 200}, {9, 1, 1, 0, 200},
  };
  w.device.dram_to_slow_bytes_per_second = 10e9;
  w.device.slow_to_dram_bytes_per_second = 20e9;
  w.Finalize();
  return w;
}
enum RoomTensor : uint32_t { kRoomA = 0, kRoomB = 1, kRoomY = 3 };

constexpr uint32_t kLongGapSecond = 7;

// A recurrent layer's weights in small: W (400 B persistent, tensor 0) read
// at k1, k3 and k5 (the forward pass), at k10-k12 (the backward pass) and
// written at k14 (the update); a 650 B temporary Zk (tensor 1 + k) at each
// of k0-k9 and a 700 B one Yk (tensors 11-13) at each of k10-k12. With a
// 1,000 B DRAM limit every kernel is a bottleneck. W costs 200 ns a use
// from the slow tier, Y 500, Z 10; a copy of W 250 ns either way. So a
// fetch and an eviction around one use of W cost more than they save, W
// kept in DRAM over the backward pass costs the Ys 1,500 ns, and the
// fastest plan keeps W in DRAM over the forward pass, evicts it over the
// backward pass and fetches it for the update: the slow tier over k6-k13.
inline Workload WindowGraph() {
  Workload w;
  w.name = "window";
  for (int k = 0; k < 15; ++k) w.kernels.push_back({"k" + std::to_string(k), 100});
  w.tensors.push_back({"W", 400, TensorKind::kParameter, 0, 14, true});
  for (uint32_t k = 0; k < 10; ++k) w.tensors.push_back({"Z" + std::to_string(k), 650, TensorKind::kTemporary, k, k, false});
  for (uint32_t k = 10; k < 13; ++k) w.tensors.push_back({"Y" + std::to_string(k), 700, TensorKind::kTemporary, k, k, false});
  for (uint32_t k : {1, 3, 5, 10, 11, 12}) w.accesses.push_back({k, 0, 1, 0, 200});
  w.accesses.push_back({14, 0, 1, 1, 200});
  for (uint32_t k = 0; k < 10; ++k) w.accesses.push_back({k, 1 + k, 0, 1, 10});
  for (uint32_t k = 10; k < 13; ++k) w.accesses.push_back({k, 1 + k, 0, 1, 500});
  std::sort(w.accesses.begin(), w.accesses.end(), [](const Access& a, const Access& b) {
    return a.kernel != b.kernel ? a.kernel < b.kernel : a.tensor < b.tensor;
  });
  w.device.dram_to_slow_bytes_per_second = 1.6e9;
  w.device.slow_to_dram_bytes_per_second = 1.6e9;
  w.Finalize();
  return w;
}
constexpr uint32_t kWindowWeights = 0;

}  // namespace tensortier::testing
