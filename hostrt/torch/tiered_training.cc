#include "hostrt/torch/tensortier_torch.h"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "envs/placement_plan.h"
#include "envs/workload.h"
#include "executor/plan_executor.h"
#include "allocator/tiered_allocator.h"
#include "hostrt/apply/plan_from_lookup.h"
#include "hostrt/tensortier_lookup.h"
#include "models/optimizer_state.h"
#include "models/training_task.h"
#include "profiler/graph_capture.h"
#include "tiers/memory_tier.h"

namespace tensortier {
namespace host {
namespace {

// TorchScript and some modules settle their graph only after a few runs.
constexpr int kMaxCaptures = 4;

PersistentRole ToZooRole(TensorRole r) {
  switch (r) {
    case TensorRole::kParameter: return PersistentRole::kParameter;
    case TensorRole::kBuffer: return PersistentRole::kBuffer;
    case TensorRole::kGradient: return PersistentRole::kGradient;
    case TensorRole::kOptimizerState: return PersistentRole::kOptimizerState;
    case TensorRole::kInput: return PersistentRole::kInput;
    case TensorRole::kTarget: return PersistentRole::kTarget;
  }
  return PersistentRole::kBuffer;
}

TensorRole FromZooRole(PersistentRole r) {
  switch (r) {
    case PersistentRole::kParameter: return TensorRole::kParameter;
    case PersistentRole::kBuffer: return TensorRole::kBuffer;
    case PersistentRole::kGradient: return TensorRole::kGradient;
    case PersistentRole::kOptimizerState: return TensorRole::kOptimizerState;
    case PersistentRole::kInput: return TensorRole::kInput;
    case PersistentRole::kTarget: return TensorRole::kTarget;
  }
  return TensorRole::kBuffer;
}

// The host's job as the profiler and the executor see a training task.
class JobTask final : public TrainingTask {
 public:
  explicit JobTask(TrainingJob& job) : job_(job) {
    options_.name = job.name();
    options_.batch_size = job.batch_size();
  }
  double Step() override { return job_.Step(); }
  std::vector<PersistentTensor> PersistentTensors() override {
    std::vector<PersistentTensor> out;
    for (JobTensor& t : job_.PersistentTensors()) out.push_back({t.name, ToZooRole(t.role), t.tensor});
    return out;
  }
  std::vector<at::Tensor> Parameters() override {
    std::vector<at::Tensor> out;
    for (JobTensor& t : job_.PersistentTensors())
      if (t.role == TensorRole::kParameter) out.push_back(t.tensor);
    return out;
  }
  const ModelOptions& options() const override { return options_; }
  int64_t steps_done() const override { return 0; }

 private:
  TrainingJob& job_;
  ModelOptions options_;
};

class ZooJob final : public TrainingJob {
 public:
  explicit ZooJob(std::unique_ptr<TrainingTask> task) : task_(std::move(task)) {}
  double Step() override { return task_->Step(); }
  std::vector<JobTensor> PersistentTensors() override {
    std::vector<JobTensor> out;
    for (PersistentTensor& t : task_->PersistentTensors()) out.push_back({t.name, FromZooRole(t.role), t.tensor});
    return out;
  }
  uint32_t batch_size() const override { return static_cast<uint32_t>(task_->options().batch_size); }
  std::string name() const override { return task_->options().name; }

 private:
  std::unique_ptr<TrainingTask> task_;
};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

double NowNs() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

const char* PlacementName(Placement p) {
  switch (p) {
    case Placement::kLookup: return "lookup";
    case Placement::kAllDram: return "all-dram";
    case Placement::kAllSlow: return "all-slow";
  }
  return "?";
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? '\'' : c;
  return out + "\"";
}

}  // namespace

std::vector<JobTensor> JobTensorsOf(const torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                                    const at::Tensor& input, const at::Tensor& target) {
  std::vector<JobTensor> v;
  std::vector<std::pair<std::string, at::Tensor>> params;
  for (const auto& p : module.named_parameters(true))
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  for (const auto& p : params) v.push_back({"param:" + p.first, TensorRole::kParameter, p.second});
  for (const auto& b : module.named_buffers(true)) v.push_back({"buffer:" + b.key(), TensorRole::kBuffer, b.value()});
  for (const auto& p : params)
    if (p.second.grad().defined()) v.push_back({"grad:" + p.first, TensorRole::kGradient, p.second.grad()});
  auto& state = optimizer.state();
  for (const auto& p : params) {
    auto it = FindOptimizerState(state, p.second);
    if (it == state.end()) continue;
    if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      if (s->momentum_buffer().defined())
        v.push_back({"sgd.momentum:" + p.first, TensorRole::kOptimizerState, s->momentum_buffer()});
    } else if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
      if (a->exp_avg().defined()) v.push_back({"adam.exp_avg:" + p.first, TensorRole::kOptimizerState, a->exp_avg()});
      if (a->exp_avg_sq().defined())
        v.push_back({"adam.exp_avg_sq:" + p.first, TensorRole::kOptimizerState, a->exp_avg_sq()});
      if (a->max_exp_avg_sq().defined())
        v.push_back({"adam.max_exp_avg_sq:" + p.first, TensorRole::kOptimizerState, a->max_exp_avg_sq()});
    }
  }
  v.push_back({"input", TensorRole::kInput, input});
  v.push_back({"target", TensorRole::kTarget, target});
  return v;
}

std::unique_ptr<TrainingJob> MakeZooJob(const std::string& model, int64_t batch_size, int64_t image_size,
                                        uint64_t seed) {
  ModelOptions o;
  o.name = model;
  o.batch_size = batch_size;
  o.image_size = image_size;
  o.seed = seed;
  return std::make_unique<ZooJob>(MakeTrainingTask(o));
}

std::unique_ptr<TrainingJob> MakeTorchScriptJob(const std::string& path, int64_t batch_size, int64_t image_size,
                                                uint64_t seed) {
  ModelOptions o;
  o.name = "torchscript";
  o.torchscript_path = path;
  o.batch_size = batch_size;
  o.image_size = image_size;
  o.seed = seed;
  return std::make_unique<ZooJob>(MakeTrainingTask(o));
}

struct TieredTraining::Impl {
  TieredTrainingOptions o;
  TieringStatus st;
  tt_lookup* lookup = nullptr;
  std::shared_ptr<MemoryTier> dram, slow;
  std::unique_ptr<TieredAllocator> alloc;

  // Profiling.
  int captures = 0;
  std::optional<CapturedIteration> previous;
  bool have_graph = false;
  Workload w;
  uint32_t P = 0;
  bool need_timing = false;
  std::vector<double> kernel_dram_ns;

  // Plans: the one from the lookup (when there is one) and the one applied.
  std::optional<AppliedPlan> lookup_plan;
  std::string lookup_unavailable;  // why lookup_plan is empty
  PlacementPlan plan;
  std::unique_ptr<PlanExecutor> exec;

  void Log(const char* level, const std::string& event, const std::string& detail) const {
    const std::string line = std::string("level=") + level + " component=tensortier_host event=" + event +
                             (detail.empty() ? "" : " detail=" + Quoted(detail));
    if (o.log)
      o.log(line);
    else
      std::cerr << line << std::endl;
  }

  explicit Impl(const std::string& path, TieredTrainingOptions options) : o(std::move(options)) {
    char err[512] = "";
    if (tt_lookup_open(path.c_str(), &lookup, err, sizeof err) != TT_LOOKUP_OK) {
      Keep(std::string("lookup refused: ") + err);
      return;
    }
    try {
      dram = MakeDramTier();
      slow = MakeSlowTier(o.slow_tier, o.slow_capacity_bytes);
      st.backend = slow->backend();
      alloc = std::make_unique<TieredAllocator>(dram, slow);
      alloc->Install();
    } catch (const std::exception& e) {
      alloc.reset();
      Keep(std::string("cannot set up the tiers: ") + e.what());
      return;
    }
    st.state = TieringState::kProfiling;
    st.reason = "profiling the first iterations";
    Log("info", "lookup_opened",
        path + ": model " + Hex(tt_lookup_primary_signature(lookup)) + ", " +
            std::to_string(tt_lookup_plan_count(lookup)) + " plan(s), generalised lookup " +
            (tt_lookup_has_generalised(lookup) ? "present" : "absent") + "; slow tier " + st.backend);
  }

  ~Impl() {
    exec.reset();
    if (alloc) alloc->set_dram_limit(0);
    alloc.reset();  // uninstalls; live storages keep the tiers alive
    tt_lookup_close(lookup);
  }

  // The default allocator from now on: `why` is logged and kept.
  void Keep(const std::string& why) {
    st.state = TieringState::kDefault;
    st.reason = why;
    Log("warn", "default_allocator", why + "; keeping the default allocator");
  }

  // Leaves the plan: tensors the plan put in the slow tier come back to DRAM
  // (persistent ones would otherwise stay there for the rest of the job),
  // then the previous allocator takes over.
  void GiveUp(const std::string& why) {
    exec.reset();
    if (alloc) {
      alloc->set_dram_limit(0);
      for (AllocationRecord* r : alloc->LiveRecords()) {
        if (r->tier != Tier::kSlow) continue;
        TieredAllocator::MoveTicket ticket;
        if (alloc->BeginMove(r, Tier::kDram, &ticket) != TieredAllocator::MoveStart::kStarted) continue;
        if (TieredAllocator::ClaimCopy(ticket)) {
          std::memcpy(ticket.dst, ticket.src, ticket.bytes);
          TieredAllocator::MarkCopied(ticket);
        }
        alloc->CompleteMove(ticket);
      }
      alloc->Uninstall();
    }
    Keep(why);
  }

  double Step(TrainingJob& job) {
    const double t0 = NowNs();
    ++st.steps;
    double loss = 0;
    switch (st.state) {
      case TieringState::kDefault: loss = job.Step(); break;
      case TieringState::kProfiling: loss = ProfileStep(job); break;
      case TieringState::kApplied: loss = AppliedStep(job); break;
    }
    st.last_step_ns = NowNs() - t0;
    return loss;
  }

  double ProfileStep(TrainingJob& job) {
    JobTask task(job);
    // The first step creates gradients and optimizer state: the persistent
    // set is complete only after it.
    if (st.steps == 1) return task.Step();
    if (!have_graph) return CaptureStep(task);
    return TimingStep(task);
  }

  double CaptureStep(JobTask& task) {
    try {
      NumberPersistentTensors(task, *alloc);  // refuses tensors that are not ours, before the step runs
      for (AllocationRecord* r : alloc->LiveRecords()) r->tensor_id = -1;
    } catch (const std::exception& e) {
      GiveUp(std::string("cannot profile the job: ") + e.what() +
             " (construct TieredTraining before the model, optimizer and batch)");
      return task.Step();
    }
    CapturedIteration c;
    try {
      c = CaptureIteration(task, *alloc);
    } catch (...) {
      GiveUp("the job's step failed while profiling");
      throw;
    }
    ++captures;
    const double loss = c.loss;
    std::string difference = "only one capture";
    if (previous) difference = CompareGraphs(*previous, c);
    if (difference.empty()) {
      have_graph = true;
      P = c.num_persistent;
      w = std::move(c.workload);
      previous.reset();
      OnGraph();
    } else if (captures >= kMaxCaptures) {
      GiveUp("the job's graph changes between iterations (" + difference + ")");
    } else {
      previous = std::move(c);
    }
    return loss;
  }

  // The profiled graph is known: find the plan, or measure kernels first
  // when the generalised lookup will need the slow tier's penalties.
  void OnGraph() {
    w.device.name = slow->backend();
    w.device.slow_capacity_bytes = o.slow_capacity_bytes;
    if (const DeviceProfile* dev = slow->emulation()) {
      w.device.dram_to_slow_bytes_per_second = dev->write_bytes_per_second;
      w.device.slow_to_dram_bytes_per_second = dev->read_bytes_per_second;
    }
    st.model_signature = w.Signature();
    st.batch_size = w.batch_size;
    st.kernels = static_cast<uint32_t>(w.num_kernels());
    st.tensors = static_cast<uint32_t>(w.num_tensors());
    st.peak_live_bytes = w.peak_live_bytes();
    Log("info", "profiled",
        "model " + Hex(st.model_signature) + ", batch " + std::to_string(st.batch_size) + ", " +
            std::to_string(st.kernels) + " kernels, " + std::to_string(st.tensors) + " tensors, peak " +
            std::to_string(st.peak_live_bytes) + " bytes, " + std::to_string(captures) + " captures");

    // A plan table for this model and batch (and budget, when one is given).
    std::string others;
    for (uint32_t i = 0; i < tt_lookup_plan_count(lookup); ++i) {
      tt_lookup_plan_info info;
      if (tt_lookup_plan_info_at(lookup, static_cast<int32_t>(i), &info) != TT_LOOKUP_OK) continue;
      others += (others.empty() ? "" : ", ") + Hex(info.model_signature) + " batch " +
                std::to_string(info.batch_size) + " budget " + std::to_string(info.dram_budget_bytes);
      if (info.model_signature != st.model_signature || info.batch_size != st.batch_size) continue;
      if (o.dram_budget_bytes != 0 && info.dram_budget_bytes != o.dram_budget_bytes) continue;
      MakeLookupPlan(info.dram_budget_bytes);
      Decide();
      return;
    }
    if (!tt_lookup_has_generalised(lookup)) {
      lookup_unavailable = "the file has no plan for model " + Hex(st.model_signature) + " batch " +
                           std::to_string(st.batch_size) + " (it has: " + (others.empty() ? "none" : others) +
                           ") and no generalised lookup";
      Decide();
      return;
    }
    need_timing = true;
    Log("info", "no_plan_table",
        "no plan for this model and batch (file has: " + (others.empty() ? "none" : others) +
            "); measuring kernels for the generalised lookup");
  }

  // Two steps: every kernel with all tensors in DRAM, then all in the slow
  // tier. Each access is priced as the runner's profile prices it
  // (SlowTierAccessWeight, AssignKernelTimes), which is what the generalised
  // lookup's observations are built from.
  double TimingStep(JobTask& task) {
    const bool dram_pass = kernel_dram_ns.empty();
    const PlacementPlan uniform = PlacementPlan::Uniform(w, dram_pass ? Tier::kDram : Tier::kSlow, 0);
    PlanExecutor::Config cfg;
    cfg.emulate_timing = o.emulate_slow_timing;
    cfg.record_kernel_times = true;
    double loss = 0;
    IterationCounters c;
    try {
      PlanExecutor ex(*alloc, w, P, uniform, cfg);
      c = ex.RunIteration(task, &loss);
      if (c.graph_matches) {
        if (dram_pass) {
          kernel_dram_ns = ex.kernel_times_ns();
          return loss;
        }
        const std::vector<double>& kernel_slow_ns = ex.kernel_times_ns();
        const AccessWeight weight = SlowTierAccessWeight(*slow, o.emulate_slow_timing);
        AssignKernelTimes(w, kernel_dram_ns, kernel_slow_ns, weight,
                          weight ? ex.kernel_emulated_ns() : std::vector<double>{});
      }
    } catch (...) {
      GiveUp("the job's step failed while measuring kernels");
      throw;
    }
    if (!c.graph_matches) {
      GiveUp("the job's graph changed while measuring kernels (" + c.graph_difference + ")");
      return loss;
    }
    const uint64_t budget = o.dram_budget_bytes != 0
                                ? o.dram_budget_bytes
                                : std::max<uint64_t>(1, static_cast<uint64_t>(o.dram_fraction_of_peak *
                                                                              static_cast<double>(w.peak_live_bytes())));
    MakeLookupPlan(budget);
    Decide();
    return loss;
  }

  void MakeLookupPlan(uint64_t budget) {
    try {
      lookup_plan = PlanFromLookup(lookup, w, budget);
    } catch (const std::exception& e) {
      lookup_unavailable = e.what();
    }
  }

  // Applies the plan for the chosen placement, or falls back.
  void Decide() {
    PlacementPlan next;
    if (o.placement == Placement::kLookup) {
      if (!lookup_plan) return GiveUp("no plan for this job: " + lookup_unavailable);
      next = lookup_plan->plan;
      st.plan_source = lookup_plan->from_plan_table ? "plan-table" : "generalised";
      st.lookup_decisions = lookup_plan->decisions;
    } else {
      next = PlacementPlan::Uniform(w, o.placement == Placement::kAllSlow ? Tier::kSlow : Tier::kDram, 0);
      st.plan_source = PlacementName(o.placement);
    }
    exec.reset();  // it refers to `plan`
    plan = std::move(next);
    PlanExecutor::Config cfg;
    cfg.emulate_timing = o.emulate_slow_timing;
    try {
      exec = std::make_unique<PlanExecutor>(*alloc, w, P, plan, cfg);
    } catch (const std::exception& e) {
      return GiveUp(std::string("the plan does not fit the job: ") + e.what());
    }
    alloc->set_dram_limit(plan.dram_limit_bytes);
    alloc->set_overflow_policy(DramOverflowPolicy::kSpillToSlow);
    st.state = TieringState::kApplied;
    st.dram_budget_bytes = plan.dram_limit_bytes;
    st.slow_tensors = static_cast<uint32_t>(std::count(plan.initial_tiers.begin(), plan.initial_tiers.end(), Tier::kSlow));
    st.migrations = static_cast<uint32_t>(plan.migrations.size());
    st.plan_hash = plan.Hash();
    st.reason = "applying the " + st.plan_source + " plan for model " + Hex(st.model_signature) + ", batch " +
                std::to_string(st.batch_size) + ", DRAM budget " + std::to_string(st.dram_budget_bytes) + " bytes";
    Log("info", "plan_applied",
        st.reason + ": " + std::to_string(st.slow_tensors) + " of " + std::to_string(st.tensors) +
            " tensors in the slow tier, " + std::to_string(st.migrations) + " migrations per iteration" +
            (st.plan_source == "generalised" ? ", " + std::to_string(st.lookup_decisions) + " lookups" : ""));
  }

  double AppliedStep(TrainingJob& job) {
    JobTask task(job);
    double loss = 0;
    IterationCounters c;
    try {
      c = exec->RunIteration(task, &loss);
    } catch (...) {
      GiveUp("the job's step failed under the plan");
      throw;
    }
    st.last_iteration_ns = c.iteration_ns;
    st.last_dram_peak_bytes = c.dram_peak_bytes;
    st.last_slow_peak_bytes = c.slow_peak_bytes;
    st.last_oom_events = c.oom_events;
    if (!c.graph_matches) GiveUp("the job's graph changed at step " + std::to_string(st.steps) + " (" +
                                 c.graph_difference + ")");
    return loss;
  }

  void SetPlacement(Placement p) {
    if (p == Placement::kLookup && st.state == TieringState::kApplied && !lookup_plan) {
      Log("warn", "placement_kept", "no lookup plan for this job: " + lookup_unavailable);
      return;
    }
    o.placement = p;
    if (st.state == TieringState::kApplied) Decide();
  }
};

TieredTraining::TieredTraining(const std::string& lookup_path, TieredTrainingOptions options)
    : impl_(std::make_unique<Impl>(lookup_path, std::move(options))) {}
TieredTraining::~TieredTraining() = default;
double TieredTraining::Step(TrainingJob& job) { return impl_->Step(job); }
void TieredTraining::SetPlacement(Placement placement) { impl_->SetPlacement(placement); }
const TieringStatus& TieredTraining::status() const { return impl_->st; }

}  // namespace host
}  // namespace tensortier
