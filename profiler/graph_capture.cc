#include "profiler/graph_capture.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "profiler/kernel_tracer.h"

namespace tensortier {

namespace {

TensorKind KindOf(PersistentRole role) {
  switch (role) {
    case PersistentRole::kParameter: return TensorKind::kParameter;
    case PersistentRole::kBuffer: return TensorKind::kParameter;
    case PersistentRole::kGradient: return TensorKind::kGradient;
    case PersistentRole::kOptimizerState: return TensorKind::kOptimizerState;
    case PersistentRole::kInput: return TensorKind::kInput;
    case PersistentRole::kTarget: return TensorKind::kInput;
  }
  return TensorKind::kTemporary;
}

double NowNs() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

bool IsBackwardName(const std::string& n) {
  return n.find("Backward") != std::string::npos || n.rfind("autograd::", 0) == 0;
}

class Capturer : public KernelTracer::Listener, public AllocationObserver {
 public:
  explicit Capturer(uint32_t num_persistent) : P(num_persistent) {}

  void OnKernelStart(uint32_t k, const char* name) override {
    names.emplace_back(name);
    starts.push_back(NowNs());
    ends.push_back(0);
    current = static_cast<int64_t>(k);
  }
  void OnKernelEnd(uint32_t k) override {
    ends[k] = NowNs();
    current = -1;
  }
  void OnAccess(uint32_t k, int64_t tensor_id, uint32_t reads, uint32_t writes) override {
    if (tensor_id < 0) return;
    auto& a = access[{k, static_cast<uint32_t>(tensor_id)}];
    a.first += reads;
    a.second += writes;
  }
  void OnAllocate(const AllocationRecord& r) override {
    if (r.tensor_id < static_cast<int64_t>(P)) return;
    const size_t i = static_cast<size_t>(r.tensor_id) - P;
    if (i >= dyn.size()) dyn.resize(i + 1);
    dyn[i].size = r.bytes;
    dyn[i].alloc = current >= 0 ? current : static_cast<int64_t>(names.size());  // between kernels: the next
    dyn[i].seen = true;
  }
  void OnFree(const AllocationRecord& r) override {
    if (r.tensor_id < static_cast<int64_t>(P)) return;
    const size_t i = static_cast<size_t>(r.tensor_id) - P;
    if (i >= dyn.size()) return;
    dyn[i].free = current >= 0 ? current : static_cast<int64_t>(names.size()) - 1;  // between kernels: the last
    dyn[i].freed = true;
  }

  struct Dyn {
    uint64_t size = 0;
    int64_t alloc = 0, free = -1;
    bool seen = false, freed = false;
  };
  const uint32_t P;
  int64_t current = -1;
  std::vector<std::string> names;
  std::vector<double> starts, ends;
  std::vector<Dyn> dyn;
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> access;
};

}  // namespace

std::string WorkloadNameFor(const ModelOptions& o) {
  if (o.name != "torchscript" || o.torchscript_path.empty()) return o.name;
  const std::string stem = std::filesystem::path(o.torchscript_path).stem().string();
  return stem.empty() ? o.name : stem;
}

std::vector<AllocationRecord*> NumberPersistentTensors(TrainingTask& task, TieredAllocator& alloc,
                                                       std::vector<Tensor>* descriptions) {
  std::vector<AllocationRecord*> records;
  std::unordered_map<AllocationRecord*, size_t> index;
  for (const PersistentTensor& p : task.PersistentTensors()) {
    if (!p.tensor.defined() || !p.tensor.has_storage() || p.tensor.storage().nbytes() == 0) continue;
    AllocationRecord* r = TieredAllocator::BindStorage(p.tensor.storage());
    if (r == nullptr)
      throw std::runtime_error("persistent tensor '" + p.name +
                               "' was not allocated by the TieredAllocator (install it before building the task)");
    if (index.count(r)) continue;  // shares a storage with an earlier one
    index[r] = records.size();
    records.push_back(r);
    if (descriptions) {
      Tensor t;
      t.name = p.name;
      t.size_bytes = r->bytes;
      t.kind = KindOf(p.role);
      t.persistent = true;
      descriptions->push_back(t);
    }
  }
  for (AllocationRecord* r : alloc.LiveRecords()) {
    if (index.count(r)) continue;
    index[r] = records.size();
    records.push_back(r);
    if (descriptions) {
      Tensor t;
      t.name = "untracked:" + std::to_string(r->sequence);
      t.size_bytes = r->bytes;
      t.kind = TensorKind::kTemporary;
      t.persistent = true;
      descriptions->push_back(t);
    }
  }
  for (size_t i = 0; i < records.size(); ++i) records[i]->tensor_id = static_cast<int64_t>(i);
  return records;
}

CapturedIteration CaptureIteration(TrainingTask& task, TieredAllocator& alloc) {
  std::vector<Tensor> persistent;
  const size_t named = task.PersistentTensors().size();
  std::vector<AllocationRecord*> precs = NumberPersistentTensors(task, alloc, &persistent);
  const uint32_t P = static_cast<uint32_t>(precs.size());
  CapturedIteration out;
  out.num_persistent = P;
  for (const Tensor& t : persistent) out.untracked_persistent += t.name.rfind("untracked:", 0) == 0;
  (void)named;

  Capturer cap(P);
  IterationRouting routing;
  routing.first_tensor_id = P;
  routing.open_ended = true;
  alloc.set_observer(&cap);
  alloc.BeginIteration(routing);
  try {
    KernelTracer::Options topts;
    topts.count_accesses = true;
    KernelTracer tracer(&cap, topts);
    out.loss = task.Step();
  } catch (...) {
    alloc.EndIteration();
    alloc.set_observer(nullptr);
    for (AllocationRecord* r : precs) r->tensor_id = -1;
    throw;
  }
  alloc.EndIteration();
  alloc.set_observer(nullptr);

  const uint32_t K = static_cast<uint32_t>(cap.names.size());
  if (K == 0) throw std::runtime_error("CaptureIteration: the step ran no operators");
  Workload& w = out.workload;
  w.name = WorkloadNameFor(task.options());
  w.source = "libtorch";
  w.batch_size = static_cast<uint32_t>(task.options().batch_size);
  uint32_t first_backward = K;
  for (uint32_t k = 0; k < K; ++k) {
    Kernel kern;
    kern.name = cap.names[k];
    kern.dram_time_ns = std::max(0.0, cap.ends[k] - cap.starts[k]);
    w.kernels.push_back(kern);
    if (first_backward == K && IsBackwardName(kern.name)) first_backward = k;
  }
  for (Tensor& t : persistent) {
    t.alloc_kernel = 0;
    t.free_kernel = K - 1;
    w.tensors.push_back(t);
  }
  for (size_t i = 0; i < cap.dyn.size(); ++i) {
    const Capturer::Dyn& d = cap.dyn[i];
    Tensor t;
    t.size_bytes = d.size;
    t.alloc_kernel = static_cast<uint32_t>(std::min<int64_t>(d.alloc, K - 1));
    int64_t f = d.freed ? d.free : static_cast<int64_t>(K) - 1;
    if (!d.freed) ++out.alive_at_end;
    t.free_kernel = static_cast<uint32_t>(std::max<int64_t>(std::min<int64_t>(f, K - 1), t.alloc_kernel));
    if (t.free_kernel > t.alloc_kernel)
      t.kind = t.alloc_kernel < first_backward ? TensorKind::kActivation : TensorKind::kGradient;
    else
      t.kind = TensorKind::kTemporary;
    t.name = w.kernels[t.alloc_kernel].name + "#" + std::to_string(t.alloc_kernel) + "/" + std::to_string(P + i);
    w.tensors.push_back(t);
    out.dynamic_sizes.push_back(d.size);
  }
  // Accesses, plus a write by each dynamic tensor's allocating kernel.
  for (size_t i = 0; i < cap.dyn.size(); ++i) {
    auto& a = cap.access[{w.tensors[P + i].alloc_kernel, static_cast<uint32_t>(P + i)}];
    if (a.second == 0) a.second = 1;
  }
  for (const auto& kv : cap.access) {
    const uint32_t k = kv.first.first, t = kv.first.second;
    if (t >= w.tensors.size() || k < w.tensors[t].alloc_kernel || k > w.tensors[t].free_kernel) {
      ++out.dropped_accesses;
      continue;
    }
    Access a;
    a.kernel = k;
    a.tensor = t;
    a.reads = kv.second.first;
    a.writes = kv.second.second;
    w.accesses.push_back(a);
  }
  // An untracked allocation the step never touches is no tensor's storage
  // that the executor could ever bind and move (a TorchScript module keeps
  // its debug records this way): it stays where it is, in DRAM.
  std::vector<uint8_t> touched(P, 0);
  for (const Access& a : w.accesses)
    if (a.tensor < P) touched[a.tensor] = 1;
  for (uint32_t t = 0; t < P; ++t)
    if (!touched[t] && w.tensors[t].name.rfind("untracked:", 0) == 0) {
      w.tensors[t].pinned_dram = true;
      ++out.pinned_persistent;
    }
  for (AllocationRecord* r : precs) r->tensor_id = -1;
  w.Finalize();
  return out;
}

std::string CompareGraphs(const CapturedIteration& a, const CapturedIteration& b) {
  const Workload &x = a.workload, &y = b.workload;
  if (a.num_persistent != b.num_persistent)
    return "persistent tensors: " + std::to_string(a.num_persistent) + " vs " + std::to_string(b.num_persistent);
  if (x.kernels.size() != y.kernels.size())
    return "kernels: " + std::to_string(x.kernels.size()) + " vs " + std::to_string(y.kernels.size());
  for (size_t k = 0; k < x.kernels.size(); ++k)
    if (x.kernels[k].name != y.kernels[k].name)
      return "kernel " + std::to_string(k) + ": " + x.kernels[k].name + " vs " + y.kernels[k].name;
  if (x.tensors.size() != y.tensors.size())
    return "tensors: " + std::to_string(x.tensors.size()) + " vs " + std::to_string(y.tensors.size());
  for (size_t t = 0; t < x.tensors.size(); ++t) {
    const Tensor &p = x.tensors[t], &q = y.tensors[t];
    if (p.size_bytes != q.size_bytes || p.alloc_kernel != q.alloc_kernel || p.free_kernel != q.free_kernel)
      return "tensor " + std::to_string(t) + " (" + p.name + "): size/alloc/free " + std::to_string(p.size_bytes) +
             "/" + std::to_string(p.alloc_kernel) + "/" + std::to_string(p.free_kernel) + " vs " +
             std::to_string(q.size_bytes) + "/" + std::to_string(q.alloc_kernel) + "/" + std::to_string(q.free_kernel);
  }
  if (x.accesses.size() != y.accesses.size())
    return "accesses: " + std::to_string(x.accesses.size()) + " vs " + std::to_string(y.accesses.size());
  for (size_t i = 0; i < x.accesses.size(); ++i) {
    const Access &p = x.accesses[i], &q = y.accesses[i];
    if (p.kernel != q.kernel || p.tensor != q.tensor || p.reads != q.reads || p.writes != q.writes)
      return "access " + std::to_string(i) + " (kernel " + std::to_string(p.kernel) + ", tensor " +
             std::to_string(p.tensor) + ") differs";
  }
  return "";
}

}  // namespace tensortier
