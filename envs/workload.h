// The static graph of one training iteration: kernels in order, the tensors
// they allocate, touch and free, and what each kernel costs when the tensors
// it touches sit in the slow tier. Everything the cost model, the heats, the
// MDP and the baselines need, and nothing about how it was obtained.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tensortier {

enum class Tier : uint8_t { kDram = 0, kSlow = 1 };
const char* TierName(Tier tier);

enum class TensorKind : uint8_t {
  kParameter = 0,
  kActivation = 1,
  kTemporary = 2,
  kGradient = 3,
  kOptimizerState = 4,
  kInput = 5,
};
const char* TensorKindName(TensorKind kind);

struct Kernel {
  std::string name;
  double dram_time_ns = 0;  // every tensor it touches in DRAM
};

struct Tensor {
  std::string name;
  uint64_t size_bytes = 0;
  TensorKind kind = TensorKind::kTemporary;
  uint32_t alloc_kernel = 0;  // first kernel in which it is live
  uint32_t free_kernel = 0;   // last kernel in which it is live (inclusive)
  bool persistent = false;    // survives the iteration (parameters, optimizer state)
  // A persistent buffer the framework holds that the step never touches and
  // no executor can move: not a tensor's storage but bytes read through the
  // CPU allocator and kept (a TorchScript module's debug records). It stays
  // in DRAM whatever a plan says; plans keep it there and the cost model
  // charges it there (KeepPinnedInDram).
  bool pinned_dram = false;
};

// One kernel's use of one tensor. The kernel-time model is additive: a
// kernel takes dram_time_ns plus slow_penalty_ns for each of its tensors that
// is in the slow tier. It is AutoTM's n_{k,c} / DeepTM's c_e restricted to
// configurations that decompose per tensor, which keeps the ILP linear and
// lets a profiler measure one penalty per (kernel, tensor) instead of 2^n.
struct Access {
  uint32_t kernel = 0;
  uint32_t tensor = 0;
  uint32_t reads = 0;
  uint32_t writes = 0;
  double slow_penalty_ns = 0;
};

// Where the numbers for copies between tiers come from.
struct DeviceModel {
  std::string name = "synthetic";
  double dram_to_slow_bytes_per_second = 2.3e9;
  double slow_to_dram_bytes_per_second = 6.6e9;
  // Fixed cost of one copy on top of bytes / bandwidth (allocation, device
  // latency, bookkeeping), as the profiler measured the executor paying it.
  double dram_to_slow_copy_setup_ns = 0;
  double slow_to_dram_copy_setup_ns = 0;
  // The share of an asynchronous copy's time hidden under the kernel it
  // overlaps that the iteration pays all the same, from 0 (hidden
  // entirely: DeepTM eq. 5-6, a copy engine beside the computing cores) to
  // 1 (as if the copy blocked). A host whose copies take the memory
  // bandwidth, caches or CPU the kernels use sits in between. Measured by
  // the profiler on the executor (docs/emulation.md, "Copies that overlap
  // a kernel"); 0 in files written before it existed.
  double async_copy_exposure = 0;
  uint64_t slow_capacity_bytes = 0;  // 0 = unbounded
};

// The training job a workload was profiled from (models/ rebuilds it);
// empty `name` for synthetic workloads.
struct ModelSpec {
  std::string name;
  std::string torchscript_path;
  uint32_t batch_size = 0;
  uint32_t image_size = 0;
  uint32_t num_classes = 0;
  std::string optimizer;
  uint64_t seed = 0;
  bool empty() const { return name.empty(); }
};

// How a profiled workload's times were measured and how busy the host was,
// so that two profiles can be compared and one taken under load recognised.
// Empty for synthetic workloads and for files written before it existed.
struct ProfileMethod {
  std::string kernel_timing;  // "thread-cpu+emulated, median of 5 interleaved rounds", ...
  std::string copy_timing;    // "wall, lower quartile of 15 rounds"
  uint32_t timing_rounds = 0;
  uint32_t copy_rounds = 0;
  double load_average_start = 0;  // 1-minute load average (/proc/loadavg) when profiling began
  double load_average_end = 0;    // and when it ended
  uint32_t online_cpus = 0;
  // Medians of whole iterations by the wall clock, which move with the
  // host's load: beside the kernel sums they show how busy it was.
  double dram_iteration_wall_ns = 0;
  double slow_iteration_wall_ns = 0;
  bool empty() const { return kernel_timing.empty(); }
};

class Workload {
 public:
  static constexpr uint16_t kFormatVersion = 1;

  std::string name;
  std::string source;
  uint32_t batch_size = 0;
  std::vector<Kernel> kernels;
  std::vector<Tensor> tensors;
  std::vector<Access> accesses;
  DeviceModel device;
  ModelSpec model;
  ProfileMethod profile;

  // Checks the invariants every consumer relies on (indices in range,
  // alloc <= free, accesses inside lifetimes, positive sizes) and builds the
  // per-kernel indices. Throws std::invalid_argument naming the first problem.
  void Finalize();

  size_t num_kernels() const { return kernels.size(); }
  size_t num_tensors() const { return tensors.size(); }

  // Indices into `accesses` of the tensors kernel k touches, sorted by tensor.
  const std::vector<uint32_t>& accesses_of_kernel(size_t k) const { return kernel_accesses_[k]; }
  // Tensors live during kernel k (alloc <= k <= free), ascending.
  const std::vector<uint32_t>& live_at(size_t k) const { return live_[k]; }
  // Tensors allocated at kernel k.
  const std::vector<uint32_t>& allocated_at(size_t k) const { return allocated_[k]; }
  // Tensors whose last live kernel is k.
  const std::vector<uint32_t>& freed_at(size_t k) const { return freed_[k]; }
  // Kernels that access tensor t, ascending.
  const std::vector<uint32_t>& kernels_of_tensor(size_t t) const { return tensor_kernels_[t]; }

  // The reads and writes of tensor t (at least one per kernel) at
  // kernels_of_tensor(t)[use] and after; use up to its size (then 0). Heat's
  // future frequency, without a search per access.
  uint64_t future_accesses(size_t t, size_t use) const { return tensor_future_accesses_[t][use]; }

  // Kernel k's access to tensor t, or nullptr when k does not touch t.
  const Access* FindAccess(size_t k, uint32_t t) const;
  bool KernelWrites(size_t k, uint32_t t) const {
    const Access* a = FindAccess(k, t);
    return a && a->writes > 0;
  }

  uint64_t live_bytes_at(size_t k) const { return live_bytes_[k]; }
  uint64_t peak_live_bytes() const { return peak_live_bytes_; }
  // Bytes of the pinned_dram tensors: DRAM no plan can give to others.
  uint64_t pinned_dram_bytes() const { return pinned_dram_bytes_; }
  double total_dram_time_ns() const;
  // Sum over kernels of the time with every touched tensor in the slow tier.
  double total_slow_time_ns() const;
  // Stable 64-bit identity of the graph (names excluded): what plans and
  // caches are keyed by.
  uint64_t Signature() const;
  bool finalized() const { return finalized_; }

 private:
  bool finalized_ = false;
  std::vector<std::vector<uint32_t>> kernel_accesses_;
  std::vector<std::vector<uint32_t>> live_;
  std::vector<std::vector<uint32_t>> allocated_;
  std::vector<std::vector<uint32_t>> freed_;
  std::vector<std::vector<uint32_t>> tensor_kernels_;
  std::vector<std::vector<uint64_t>> tensor_future_accesses_;  // see future_accesses()
  std::vector<uint64_t> live_bytes_;
  uint64_t peak_live_bytes_ = 0;
  uint64_t pinned_dram_bytes_ = 0;
};

// What one access to a tensor of `bytes` in the slow tier adds to its
// kernel's time, up to a factor shared by the kernel's accesses: how
// AssignKernelTimes prices accesses.
using AccessWeight = std::function<double(uint64_t bytes, uint32_t reads, uint32_t writes)>;

// Sets each kernel's DRAM time and prices each of its accesses in the slow
// tier: the additive per-tensor penalties the cost model sums (AutoTM's
// n_{k,c} restricted to one tensor at a time). Without `kernel_charged_ns`,
// what the all-slow run added to a kernel is spread over its accesses in
// proportion to `weight` (by default the bytes each one moves; a device
// whose accesses pay a latency beside their bytes gives small tensors more).
//
// With `kernel_charged_ns` (an emulated device, which knows what it charged
// each kernel of the all-slow run; requires `weight`, its charge for one
// access stream), each access costs `weight` - what the device charges it
// on pages of its own - and what the kernel measured beyond the device's
// charge (timing noise, caches) is spread in proportion to it. Why: tensors
// smaller than a page that share one are charged one latency between them,
// which the all-slow run, where all of them are slow, has everywhere and a
// plan, with a few slow ones, hardly anywhere; the proportional split priced
// plans' slow tensors at 0.53-0.8 of what they were charged on models of
// many small tensors. The all-slow plan then costs what page sharing saved
// it more than it measures. Vectors: one entry per kernel; `w` must be
// finalized and is finalized again.
void AssignKernelTimes(Workload& w, const std::vector<double>& kernel_dram_ns,
                       const std::vector<double>& kernel_slow_ns, const AccessWeight& weight = nullptr,
                       const std::vector<double>& kernel_charged_ns = {});

}  // namespace tensortier
