// TensorTier for LibTorch hosts: applies an exported lookup file
// (docs/lookup-format.md) to a RUNNING training job on the CPU, by routing
// the job's tensor allocations between DRAM and a slow tier and migrating
// tensors at kernel boundaries. docs/host-runtime.md describes it in full.
//
//   tensortier::host::TieredTraining tiering("policy.ttlookup");  // BEFORE the model is built
//   MyJob job;                                  // a tensortier::host::TrainingJob
//   for (...) loss = tiering.Step(job);         // one training iteration per call
//
// What happens over the first calls (each runs exactly one iteration of the
// job, so the host's loop is unchanged):
//   1. a plain step (gradients and optimizer state come to exist);
//   2. the job's graph is profiled from its ATen operators and allocations,
//      until two consecutive iterations agree (at most 4 captures);
//   3. the model signature of that graph (the same Workload::Signature the
//      exporter keys plan tables with) selects the file's plan table for the
//      job's batch size; for a model without one, two more steps measure
//      every kernel with all tensors in DRAM and all in the slow tier, and
//      the generalised lookup is rolled out over the graph into a plan;
//   4. every later step runs under that plan.
// Whenever that is impossible (a refused file, no plan and no generalised
// lookup, a graph that changes between iterations, an unavailable slow
// tier, ...) the job carries on with the default CPU allocator, everything
// in DRAM, and the reason is logged and kept in status().reason. Nothing
// here throws for a bad file or an unsuitable model; exceptions of the job's
// own Step() propagate.
//
// Only one TieredTraining may be alive per process (it owns the CPU
// allocator, c10::SetCPUAllocator), and Step() must be called from one
// thread. Build the model, the optimizer and the batch tensors after
// constructing it: tensors that outlive an iteration must come from its
// allocator to be placed.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tensortier {
namespace host {

// What a tensor that survives an iteration is to the job.
enum class TensorRole { kParameter, kBuffer, kGradient, kOptimizerState, kInput, kTarget };

struct JobTensor {
  std::string name;
  TensorRole role;
  at::Tensor tensor;
};

// The training job, as the integration needs to see it.
class TrainingJob {
 public:
  virtual ~TrainingJob() = default;
  // One training iteration (zero_grad, forward, loss, backward, optimizer
  // step); returns the loss. The sequence of operators and allocations must
  // be the same every iteration for a plan to apply.
  virtual double Step() = 0;
  // The tensors that outlive an iteration, in a stable order: parameters,
  // buffers, gradients, optimizer state, input, target (the order and roles
  // are part of the model signature; JobTensorsOf gives the usual one).
  virtual std::vector<JobTensor> PersistentTensors() = 0;
  // Part of the plan tables' key.
  virtual uint32_t batch_size() const = 0;
  virtual std::string name() const { return "host"; }
};

// The persistent tensors of a module trained by an optimizer (SGD's momentum
// buffers; Adam's moments) on one batch, in the order and with the roles the
// TensorTier model zoo uses.
std::vector<JobTensor> JobTensorsOf(const torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                                    const at::Tensor& input, const at::Tensor& target);

// A model of TensorTier's zoo ("resnet18", "vgg16", ...; `tensortier
// profile --help`) on a synthetic batch: the same job `tensortier train`
// profiles, so the model signature matches a policy trained on it.
// Throws std::invalid_argument for an unknown model or bad sizes.
std::unique_ptr<TrainingJob> MakeZooJob(const std::string& model, int64_t batch_size, int64_t image_size,
                                        uint64_t seed = 1);

// A TorchScript module whose forward(x) maps a [B, 3, S, S] batch to logits,
// trained as `tensortier profile --torchscript PATH` trains it (the same
// code: cross-entropy on a synthetic batch of 10 classes, SGD with momentum,
// every parameter trained), so a policy trained on that profile finds its
// plan table here. Throws std::invalid_argument for a file that cannot be
// loaded or bad sizes.
std::unique_ptr<TrainingJob> MakeTorchScriptJob(const std::string& path, int64_t batch_size, int64_t image_size,
                                                uint64_t seed = 1);

// Where tensors go once the job is profiled. kLookup is the point of it all;
// the uniform ones are for comparisons in the same process.
enum class Placement { kLookup, kAllDram, kAllSlow };

struct TieredTrainingOptions {
  // The slow tier: "auto", "dax-kmem", "pmem:DIR", "emulated:optane-dcpmm",
  // "emulated:cxl" (tensortier --help). On an emulated tier the memory is
  // DRAM and each kernel is delayed by the device model's extra time for its
  // slow-tier accesses (docs/emulation.md).
  std::string slow_tier = "auto";
  uint64_t slow_capacity_bytes = 0;  // 0 = unbounded
  // The DRAM budget. 0: the budget of the file's plan for this model and
  // batch when it has one, else dram_fraction_of_peak x the job's peak live
  // bytes. A non-zero budget selects a plan table only when the file has one
  // for exactly this budget; otherwise the generalised lookup plans for it.
  uint64_t dram_budget_bytes = 0;
  double dram_fraction_of_peak = 0.2;
  Placement placement = Placement::kLookup;
  bool emulate_slow_timing = true;  // emulated tiers only
  // Where messages go (one line each, logfmt); default: stderr.
  std::function<void(const std::string&)> log;
};

enum class TieringState {
  kDefault,    // the default allocator places everything (status().reason says why)
  kProfiling,  // the first iterations: profiling the job
  kApplied,    // iterations run under the plan
};

struct TieringStatus {
  TieringState state = TieringState::kDefault;
  std::string reason;       // why kDefault; what was applied otherwise
  std::string plan_source;  // "plan-table", "generalised", "all-dram", "all-slow"; "" before a plan
  std::string backend;      // the slow tier, e.g. "emulated:optane-dcpmm"
  uint64_t model_signature = 0;  // of the profiled graph; 0 before
  uint32_t batch_size = 0;
  uint64_t dram_budget_bytes = 0;
  uint64_t peak_live_bytes = 0;  // of the profiled graph
  uint32_t kernels = 0, tensors = 0;
  uint32_t slow_tensors = 0;     // allocated in the slow tier by the plan
  uint32_t migrations = 0;       // per iteration, by the plan
  uint32_t lookup_decisions = 0; // generalised lookups made to build the plan
  uint64_t plan_hash = 0;
  int64_t steps = 0;             // Step() calls so far
  // The last step: wall time of the whole Step() call, and under a plan the
  // executor's own measure of the iteration (emulated delays included,
  // placing persistent tensors at their initial tiers excluded).
  double last_step_ns = 0;
  double last_iteration_ns = 0;
  uint64_t last_dram_peak_bytes = 0, last_slow_peak_bytes = 0;
  uint64_t last_oom_events = 0;  // DRAM requests beyond the budget, spilled to the slow tier
};

class TieredTraining {
 public:
  // Opens and validates the lookup file and installs the tiered allocator.
  // Never throws for a bad file or tier: status() then says kDefault and why.
  explicit TieredTraining(const std::string& lookup_path, TieredTrainingOptions options = {});
  ~TieredTraining();  // restores the previous CPU allocator
  TieredTraining(const TieredTraining&) = delete;
  TieredTraining& operator=(const TieredTraining&) = delete;

  // Runs one iteration of `job` (always exactly one job.Step()).
  double Step(TrainingJob& job);

  // Switches the placement for the next steps (re-plans from the profile,
  // no new profiling). Ignored in kDefault.
  void SetPlacement(Placement placement);

  const TieringStatus& status() const;
  bool applied() const { return status().state == TieringState::kApplied; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace host
}  // namespace tensortier
