#include "profiler/kernel_tracer.h"

#include <ATen/record_function.h>
#include <ATen/core/ivalue.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tensortier {

namespace {

thread_local KernelTracer* t_tracer = nullptr;

std::unique_ptr<at::ObserverContext> StartCb(const at::RecordFunction& fn) {
  if (t_tracer) t_tracer->Start(&fn);
  return nullptr;
}

void EndCb(const at::RecordFunction& fn, at::ObserverContext*) {
  if (t_tracer) t_tracer->End(&fn);
}

// In-place by name, but they change metadata only.
bool IsMetadataOnly(const char* name) {
  static const char* const kOps[] = {"aten::detach_", "aten::resize_", "aten::set_", "aten::as_strided_",
                                     "aten::squeeze_", "aten::unsqueeze_", "aten::transpose_", "aten::t_",
                                     "aten::requires_grad_", "aten::resize_as_", "aten::swapaxes_", "aten::swapdims_"};
  for (const char* op : kOps)
    if (std::strcmp(name, op) == 0) return true;
  return false;
}

// In place, and they overwrite `self` without reading it.
bool IsSelfWriteOnly(const char* name) {
  static const char* const kOps[] = {"aten::zero_", "aten::fill_", "aten::copy_", "aten::normal_",
                                     "aten::uniform_", "aten::bernoulli_", "aten::random_"};
  for (const char* op : kOps)
    if (std::strcmp(name, op) == 0) return true;
  return false;
}

bool Contains(const std::vector<KernelTracer::Seen>& v, const KernelTracer::Seen& r) {
  return std::find(v.begin(), v.end(), r) != v.end();
}

void AddUnique(std::vector<KernelTracer::Seen>* v, const KernelTracer::Seen& r) {
  if (!Contains(*v, r)) v->push_back(r);
}

}  // namespace

KernelTracer::KernelTracer(Listener* listener, Options options) : listener_(listener), options_(options) {
  if (t_tracer != nullptr) throw std::logic_error("KernelTracer: one tracer per thread");
  if (options_.count_accesses) options_.observe_storages = true;
  t_tracer = this;
  at::RecordFunctionCallback cb(&StartCb, &EndCb);
  cb.needsInputs(options_.observe_storages)
      .needsOutputs(options_.observe_storages)
      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  handle_ = at::addThreadLocalCallback(cb);
  stack_.reserve(64);
}

KernelTracer::~KernelTracer() {
  at::removeCallback(handle_);
  t_tracer = nullptr;
}

void KernelTracer::Collect(const void* p, bool outputs, std::vector<Seen>* out) {
  auto visit = [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const c10::Storage& s = t.storage();
    AllocationRecord* r = TieredAllocator::RecordOf(s);
    if (r == nullptr) return;
    listener_->OnStorage(kernels_ - 1, s, r);
    if (out) AddUnique(out, Seen{r->sequence, r->tensor_id});
  };
  auto visit_value = [&](const c10::IValue& v) {
    if (v.isTensor()) {
      visit(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) visit(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor()) visit(e.toTensor());
    }
  };
  const auto& fn = *static_cast<const at::RecordFunction*>(p);
  if (outputs) {
    for (const c10::IValue& v : fn.outputs()) visit_value(v);
  } else {
    for (const c10::IValue& v : fn.inputs()) visit_value(v);
  }
}

void KernelTracer::Start(const void* p) {
  const auto& fn = *static_cast<const at::RecordFunction*>(p);
  if (depth_ == 0) {
    listener_->OnKernelStart(kernels_, fn.name());
    ++kernels_;
  }
  ++depth_;
  if (!options_.observe_storages) return;
  stack_.emplace_back();
  Frame& f = stack_.back();
  Collect(p, /*outputs=*/false, options_.count_accesses ? &f.inputs : nullptr);
  if (options_.count_accesses) {
    const char* name = fn.name();
    const size_t n = std::strlen(name);
    f.metadata_only = IsMetadataOnly(name);
    f.in_place = !f.metadata_only && n > 0 && name[n - 1] == '_';
    f.self_write_only = f.in_place && IsSelfWriteOnly(name);
    if (!f.in_place) {
      auto op = fn.operator_name();
      f.in_place = op && (op->overload_name == "out" || op->overload_name.rfind("out", 0) == 0);
    }
  }
}

void KernelTracer::End(const void* p) {
  if (depth_ == 0) return;  // started before the tracer
  const uint32_t k = kernels_ - 1;
  if (options_.observe_storages && !stack_.empty()) {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    std::vector<Seen> outs;
    Collect(p, /*outputs=*/true, options_.count_accesses ? &outs : nullptr);
    if (options_.count_accesses) {
      bool view = f.metadata_only || (!f.in_place && !outs.empty());
      for (const Seen& r : outs) view = view && Contains(f.inputs, r);
      if (!view) {
        for (const Seen& r : f.inputs) {
          bool delegated = false;
          for (const Frame& a : stack_) delegated = delegated || Contains(a.inputs, r);
          const bool writes = Contains(outs, r) && !Contains(f.written, r);
          const bool reads = !delegated && !(f.self_write_only && r == f.inputs.front());
          if (reads || writes) listener_->OnAccess(k, r.tensor_id, reads ? 1 : 0, writes ? 1 : 0);
          if (writes) f.written.push_back(r);
        }
        for (const Seen& r : outs) {
          if (Contains(f.inputs, r) || Contains(f.written, r)) continue;
          listener_->OnAccess(k, r.tensor_id, 0, 1);
          f.written.push_back(r);
        }
      }
      if (!stack_.empty())
        for (const Seen& r : f.written) AddUnique(&stack_.back().written, r);
    }
  }
  --depth_;
  if (depth_ == 0) listener_->OnKernelEnd(k);
}

}  // namespace tensortier
