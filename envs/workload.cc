#include "envs/workload.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/hash.h"

namespace tensortier {

const char* TierName(Tier tier) { return tier == Tier::kDram ? "dram" : "slow"; }

const char* TensorKindName(TensorKind kind) {
  switch (kind) {
    case TensorKind::kParameter: return "parameter";
    case TensorKind::kActivation: return "activation";
    case TensorKind::kTemporary: return "temporary";
    case TensorKind::kGradient: return "gradient";
    case TensorKind::kOptimizerState: return "optimizer_state";
    case TensorKind::kInput: return "input";
  }
  return "unknown";
}

namespace {
[[noreturn]] void Invalid(const std::string& what) {
  throw std::invalid_argument("invalid workload: " + what);
}
}  // namespace

void Workload::Finalize() {
  const size_t K = kernels.size();
  const size_t T = tensors.size();
  if (K == 0) Invalid("no kernels");
  if (K > (1u << 24) || T > (1u << 26)) Invalid("too many kernels or tensors");
  for (size_t k = 0; k < K; ++k)
    if (!(kernels[k].dram_time_ns >= 0)) Invalid("kernel " + std::to_string(k) + " has a negative or NaN time");
  for (size_t t = 0; t < T; ++t) {
    const Tensor& x = tensors[t];
    if (x.size_bytes == 0) Invalid("tensor " + std::to_string(t) + " has size 0");
    if (x.alloc_kernel > x.free_kernel)
      Invalid("tensor " + std::to_string(t) + " is freed (kernel " + std::to_string(x.free_kernel) +
              ") before it is allocated (kernel " + std::to_string(x.alloc_kernel) + ")");
    if (x.free_kernel >= K)
      Invalid("tensor " + std::to_string(t) + " is freed at kernel " + std::to_string(x.free_kernel) +
              " but there are " + std::to_string(K) + " kernels");
  }
  std::stable_sort(accesses.begin(), accesses.end(), [](const Access& a, const Access& b) {
    return a.kernel != b.kernel ? a.kernel < b.kernel : a.tensor < b.tensor;
  });
  for (size_t i = 0; i < accesses.size(); ++i) {
    const Access& a = accesses[i];
    if (a.kernel >= K) Invalid("access " + std::to_string(i) + " names kernel " + std::to_string(a.kernel));
    if (a.tensor >= T) Invalid("access " + std::to_string(i) + " names tensor " + std::to_string(a.tensor));
    const Tensor& x = tensors[a.tensor];
    if (a.kernel < x.alloc_kernel || a.kernel > x.free_kernel)
      Invalid("kernel " + std::to_string(a.kernel) + " accesses tensor " + std::to_string(a.tensor) +
              " outside its lifetime [" + std::to_string(x.alloc_kernel) + ", " +
              std::to_string(x.free_kernel) + "]");
    if (!(a.slow_penalty_ns >= 0)) Invalid("access " + std::to_string(i) + " has a negative or NaN penalty");
    if (i > 0 && accesses[i - 1].kernel == a.kernel && accesses[i - 1].tensor == a.tensor)
      Invalid("kernel " + std::to_string(a.kernel) + " lists tensor " + std::to_string(a.tensor) + " twice");
  }
  if (!(device.dram_to_slow_bytes_per_second > 0) || !(device.slow_to_dram_bytes_per_second > 0))
    Invalid("device copy bandwidths must be positive");
  if (!(device.dram_to_slow_copy_setup_ns >= 0) || !(device.slow_to_dram_copy_setup_ns >= 0) ||
      !std::isfinite(device.dram_to_slow_copy_setup_ns) || !std::isfinite(device.slow_to_dram_copy_setup_ns))
    Invalid("device copy setup times must be finite and not negative");
  if (!(device.async_copy_exposure >= 0 && device.async_copy_exposure <= 1))
    Invalid("device async copy exposure must be between 0 and 1");

  kernel_accesses_.assign(K, {});
  live_.assign(K, {});
  allocated_.assign(K, {});
  freed_.assign(K, {});
  tensor_kernels_.assign(T, {});
  live_bytes_.assign(K, 0);
  for (uint32_t i = 0; i < accesses.size(); ++i) {
    kernel_accesses_[accesses[i].kernel].push_back(i);
    tensor_kernels_[accesses[i].tensor].push_back(accesses[i].kernel);
  }
  // Suffix sums, in kernel order like tensor_kernels_ (accesses are sorted by kernel).
  tensor_future_accesses_.assign(T, {});
  for (uint32_t t = 0; t < T; ++t) tensor_future_accesses_[t].assign(tensor_kernels_[t].size() + 1, 0);
  {
    std::vector<uint32_t> left(T);
    for (uint32_t t = 0; t < T; ++t) left[t] = static_cast<uint32_t>(tensor_kernels_[t].size());
    for (size_t i = accesses.size(); i-- > 0;) {
      const Access& a = accesses[i];
      std::vector<uint64_t>& sums = tensor_future_accesses_[a.tensor];
      const uint32_t u = --left[a.tensor];
      sums[u] = sums[u + 1] + std::max<uint64_t>(1, uint64_t{a.reads} + a.writes);
    }
  }
  for (uint32_t t = 0; t < T; ++t) {
    allocated_[tensors[t].alloc_kernel].push_back(t);
    freed_[tensors[t].free_kernel].push_back(t);
    for (uint32_t k = tensors[t].alloc_kernel; k <= tensors[t].free_kernel; ++k) {
      live_[k].push_back(t);
      live_bytes_[k] += tensors[t].size_bytes;
    }
  }
  peak_live_bytes_ = *std::max_element(live_bytes_.begin(), live_bytes_.end());
  pinned_dram_bytes_ = 0;
  for (uint32_t t = 0; t < T; ++t) {
    const Tensor& x = tensors[t];
    if (!x.pinned_dram) continue;
    if (!x.persistent || !tensor_kernels_[t].empty())
      Invalid("tensor " + std::to_string(t) + " is pinned to DRAM but is not a persistent tensor the step never touches");
    pinned_dram_bytes_ += x.size_bytes;
  }
  finalized_ = true;
}

const Access* Workload::FindAccess(size_t k, uint32_t t) const {
  const auto& idx = kernel_accesses_[k];  // sorted by tensor
  auto it = std::lower_bound(idx.begin(), idx.end(), t,
                             [&](uint32_t i, uint32_t x) { return accesses[i].tensor < x; });
  return it != idx.end() && accesses[*it].tensor == t ? &accesses[*it] : nullptr;
}

double Workload::total_dram_time_ns() const {
  double sum = 0;
  for (const Kernel& k : kernels) sum += k.dram_time_ns;
  return sum;
}

double Workload::total_slow_time_ns() const {
  double sum = total_dram_time_ns();
  for (const Access& a : accesses) sum += a.slow_penalty_ns;
  return sum;
}

uint64_t Workload::Signature() const {
  Fnv1a h;
  h.Value<uint64_t>(kernels.size()).Value<uint64_t>(tensors.size()).Value<uint64_t>(accesses.size());
  for (const Tensor& t : tensors)
    h.Value(t.size_bytes).Value(static_cast<uint8_t>(t.kind)).Value(t.alloc_kernel).Value(t.free_kernel)
        .Value(static_cast<uint8_t>(t.persistent));
  // Pinned tensors change what a plan may do; workloads without them keep
  // the signatures they had before the flag existed.
  for (uint32_t t = 0; t < tensors.size(); ++t)
    if (tensors[t].pinned_dram) h.Value(t);
  for (const Access& a : accesses) h.Value(a.kernel).Value(a.tensor).Value(a.reads).Value(a.writes);
  return h.digest();
}

void AssignKernelTimes(Workload& w, const std::vector<double>& kernel_dram_ns,
                       const std::vector<double>& kernel_slow_ns, const AccessWeight& weight,
                       const std::vector<double>& kernel_charged_ns) {
  if (!w.finalized()) throw std::logic_error("AssignKernelTimes: workload not finalized");
  if (kernel_dram_ns.size() != w.num_kernels() || kernel_slow_ns.size() != w.num_kernels())
    throw std::invalid_argument("AssignKernelTimes: one DRAM and one slow time per kernel");
  const bool charged = !kernel_charged_ns.empty();
  if (charged && (!weight || kernel_charged_ns.size() != w.num_kernels()))
    throw std::invalid_argument("AssignKernelTimes: a device's charges need its weight and one charge per kernel");
  for (size_t k = 0; k < w.num_kernels(); ++k) {
    w.kernels[k].dram_time_ns = kernel_dram_ns[k];
    const double extra = std::max(0.0, kernel_slow_ns[k] - kernel_dram_ns[k]);
    auto share = [&](const Access& a) {
      const uint64_t bytes = w.tensors[a.tensor].size_bytes;
      return weight ? weight(bytes, a.reads, a.writes) : static_cast<double>(bytes) * (a.reads + a.writes);
    };
    double total = 0;
    for (uint32_t ai : w.accesses_of_kernel(k)) total += share(w.accesses[ai]);
    // Per unit of weight. Sharing only lowers a device's charge below the
    // sum of its accesses' own (charged <= total), so this is >= 0.
    const double per_weight =
        total <= 0 ? 0 : charged ? std::max(0.0, total + extra - kernel_charged_ns[k]) / total : extra / total;
    for (uint32_t ai : w.accesses_of_kernel(k)) w.accesses[ai].slow_penalty_ns = per_weight * share(w.accesses[ai]);
  }
  w.Finalize();
}

}  // namespace tensortier
