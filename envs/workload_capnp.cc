#include "envs/workload_capnp.h"

#include <stdexcept>
#include <string>

namespace tensortier {
namespace {

// Enums arrive as raw 16-bit values; a newer writer may send one this build
// does not know, and casting it into a domain enum would be a lie.
[[noreturn]] void UnknownEnum(const char* what, uint16_t value) {
  throw std::invalid_argument(std::string("unknown ") + what + " value " + std::to_string(value));
}

void CheckFormatVersion(uint16_t found, uint16_t supported) {
  if (found != supported)
    throw std::invalid_argument("format version " + std::to_string(found) +
                                ", this build reads " + std::to_string(supported));
}

schema::TensorKind TensorKindToCapnp(TensorKind kind) {
  switch (kind) {
    case TensorKind::kParameter: return schema::TensorKind::PARAMETER;
    case TensorKind::kActivation: return schema::TensorKind::ACTIVATION;
    case TensorKind::kTemporary: return schema::TensorKind::TEMPORARY;
    case TensorKind::kGradient: return schema::TensorKind::GRADIENT;
    case TensorKind::kOptimizerState: return schema::TensorKind::OPTIMIZER_STATE;
    case TensorKind::kInput: return schema::TensorKind::INPUT;
  }
  UnknownEnum("tensor kind", static_cast<uint16_t>(kind));
}

TensorKind TensorKindFromCapnp(schema::TensorKind kind) {
  switch (kind) {
    case schema::TensorKind::PARAMETER: return TensorKind::kParameter;
    case schema::TensorKind::ACTIVATION: return TensorKind::kActivation;
    case schema::TensorKind::TEMPORARY: return TensorKind::kTemporary;
    case schema::TensorKind::GRADIENT: return TensorKind::kGradient;
    case schema::TensorKind::OPTIMIZER_STATE: return TensorKind::kOptimizerState;
    case schema::TensorKind::INPUT: return TensorKind::kInput;
  }
  UnknownEnum("tensor kind", static_cast<uint16_t>(kind));
}

void DeviceToCapnp(const DeviceModel& device, schema::DeviceModel::Builder out) {
  out.setName(StringToText(device.name));
  out.setDramToSlowBytesPerSecond(device.dram_to_slow_bytes_per_second);
  out.setSlowToDramBytesPerSecond(device.slow_to_dram_bytes_per_second);
  out.setSlowCapacityBytes(device.slow_capacity_bytes);
  out.setDramToSlowCopySetupNs(device.dram_to_slow_copy_setup_ns);
  out.setSlowToDramCopySetupNs(device.slow_to_dram_copy_setup_ns);
  out.setAsyncCopyExposure(device.async_copy_exposure);
}

DeviceModel DeviceFromCapnp(schema::DeviceModel::Reader in) {
  DeviceModel device;
  device.name = TextToString(in.getName());
  device.dram_to_slow_bytes_per_second = in.getDramToSlowBytesPerSecond();
  device.slow_to_dram_bytes_per_second = in.getSlowToDramBytesPerSecond();
  device.slow_capacity_bytes = in.getSlowCapacityBytes();
  device.dram_to_slow_copy_setup_ns = in.getDramToSlowCopySetupNs();
  device.slow_to_dram_copy_setup_ns = in.getSlowToDramCopySetupNs();
  device.async_copy_exposure = in.getAsyncCopyExposure();
  return device;
}

void KernelsToCapnp(const std::vector<Kernel>& kernels,
                    capnp::List<schema::Kernel>::Builder out) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto k = out[i];
    k.setName(StringToText(kernels[i].name));
    k.setDramTimeNs(kernels[i].dram_time_ns);
  }
}

void TensorsToCapnp(const std::vector<Tensor>& tensors,
                    capnp::List<schema::Tensor>::Builder out) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    auto o = out[i];
    o.setName(StringToText(t.name));
    o.setSizeBytes(t.size_bytes);
    o.setKind(TensorKindToCapnp(t.kind));
    o.setAllocKernel(t.alloc_kernel);
    o.setFreeKernel(t.free_kernel);
    o.setPersistent(t.persistent);
    o.setPinnedDram(t.pinned_dram);
  }
}

void AccessesToCapnp(const std::vector<Access>& accesses,
                     capnp::List<schema::Access>::Builder out) {
  for (size_t i = 0; i < accesses.size(); ++i) {
    const Access& a = accesses[i];
    auto o = out[i];
    o.setKernel(a.kernel);
    o.setTensor(a.tensor);
    o.setReads(a.reads);
    o.setWrites(a.writes);
    o.setSlowPenaltyNs(a.slow_penalty_ns);
  }
}

std::vector<Kernel> KernelsFromCapnp(capnp::List<schema::Kernel>::Reader in) {
  std::vector<Kernel> kernels;
  kernels.reserve(in.size());
  for (auto k : in) kernels.push_back(Kernel{TextToString(k.getName()), k.getDramTimeNs()});
  return kernels;
}

std::vector<Tensor> TensorsFromCapnp(capnp::List<schema::Tensor>::Reader in) {
  std::vector<Tensor> tensors;
  tensors.reserve(in.size());
  for (auto t : in) {
    Tensor tensor;
    tensor.name = TextToString(t.getName());
    tensor.size_bytes = t.getSizeBytes();
    tensor.kind = TensorKindFromCapnp(t.getKind());
    tensor.alloc_kernel = t.getAllocKernel();
    tensor.free_kernel = t.getFreeKernel();
    tensor.persistent = t.getPersistent();
    tensor.pinned_dram = t.getPinnedDram();
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

std::vector<Access> AccessesFromCapnp(capnp::List<schema::Access>::Reader in) {
  std::vector<Access> accesses;
  accesses.reserve(in.size());
  for (auto a : in) {
    accesses.push_back(
        Access{a.getKernel(), a.getTensor(), a.getReads(), a.getWrites(), a.getSlowPenaltyNs()});
  }
  return accesses;
}

}  // namespace

schema::Tier TierToCapnp(Tier tier) {
  switch (tier) {
    case Tier::kDram: return schema::Tier::DRAM;
    case Tier::kSlow: return schema::Tier::SLOW;
  }
  UnknownEnum("tier", static_cast<uint16_t>(tier));
}

Tier TierFromCapnp(schema::Tier tier) {
  switch (tier) {
    case schema::Tier::DRAM: return Tier::kDram;
    case schema::Tier::SLOW: return Tier::kSlow;
  }
  UnknownEnum("tier", static_cast<uint16_t>(tier));
}

schema::MigrationMode MigrationModeToCapnp(MigrationMode mode) {
  switch (mode) {
    case MigrationMode::kSync: return schema::MigrationMode::SYNC;
    case MigrationMode::kAsync: return schema::MigrationMode::ASYNC;
  }
  UnknownEnum("migration mode", static_cast<uint16_t>(mode));
}

MigrationMode MigrationModeFromCapnp(schema::MigrationMode mode) {
  switch (mode) {
    case schema::MigrationMode::SYNC: return MigrationMode::kSync;
    case schema::MigrationMode::ASYNC: return MigrationMode::kAsync;
  }
  UnknownEnum("migration mode", static_cast<uint16_t>(mode));
}

void WorkloadToCapnp(const Workload& w, schema::Workload::Builder out) {
  out.setFormatVersion(Workload::kFormatVersion);
  out.setName(StringToText(w.name));
  out.setSource(StringToText(w.source));
  out.setBatchSize(w.batch_size);
  KernelsToCapnp(w.kernels, out.initKernels(w.kernels.size()));
  TensorsToCapnp(w.tensors, out.initTensors(w.tensors.size()));
  AccessesToCapnp(w.accesses, out.initAccesses(w.accesses.size()));
  DeviceToCapnp(w.device, out.initDevice());
  auto m = out.initModel();
  m.setName(StringToText(w.model.name));
  m.setTorchscriptPath(StringToText(w.model.torchscript_path));
  m.setBatchSize(w.model.batch_size);
  m.setImageSize(w.model.image_size);
  m.setNumClasses(w.model.num_classes);
  m.setOptimizer(StringToText(w.model.optimizer));
  m.setSeed(w.model.seed);
  if (!w.profile.empty()) {
    auto p = out.initProfile();
    p.setKernelTiming(StringToText(w.profile.kernel_timing));
    p.setCopyTiming(StringToText(w.profile.copy_timing));
    p.setTimingRounds(w.profile.timing_rounds);
    p.setCopyRounds(w.profile.copy_rounds);
    p.setLoadAverageStart(w.profile.load_average_start);
    p.setLoadAverageEnd(w.profile.load_average_end);
    p.setOnlineCpus(w.profile.online_cpus);
    p.setDramIterationWallNs(w.profile.dram_iteration_wall_ns);
    p.setSlowIterationWallNs(w.profile.slow_iteration_wall_ns);
  }
}

Workload WorkloadFromCapnp(schema::Workload::Reader in) {
  CheckFormatVersion(in.getFormatVersion(), Workload::kFormatVersion);
  Workload w;
  w.name = TextToString(in.getName());
  w.source = TextToString(in.getSource());
  w.batch_size = in.getBatchSize();
  w.kernels = KernelsFromCapnp(in.getKernels());
  w.tensors = TensorsFromCapnp(in.getTensors());
  w.accesses = AccessesFromCapnp(in.getAccesses());
  w.device = DeviceFromCapnp(in.getDevice());
  auto m = in.getModel();
  w.model.name = TextToString(m.getName());
  w.model.torchscript_path = TextToString(m.getTorchscriptPath());
  w.model.batch_size = m.getBatchSize();
  w.model.image_size = m.getImageSize();
  w.model.num_classes = m.getNumClasses();
  w.model.optimizer = TextToString(m.getOptimizer());
  w.model.seed = m.getSeed();
  if (in.hasProfile()) {
    auto p = in.getProfile();
    w.profile.kernel_timing = TextToString(p.getKernelTiming());
    w.profile.copy_timing = TextToString(p.getCopyTiming());
    w.profile.timing_rounds = p.getTimingRounds();
    w.profile.copy_rounds = p.getCopyRounds();
    w.profile.load_average_start = p.getLoadAverageStart();
    w.profile.load_average_end = p.getLoadAverageEnd();
    w.profile.online_cpus = p.getOnlineCpus();
    w.profile.dram_iteration_wall_ns = p.getDramIterationWallNs();
    w.profile.slow_iteration_wall_ns = p.getSlowIterationWallNs();
  }
  w.Finalize();
  return w;
}

void PlanToCapnp(const PlacementPlan& plan, schema::PlacementPlan::Builder out) {
  out.setFormatVersion(PlacementPlan::kFormatVersion);
  out.setWorkloadSignature(plan.workload_signature);
  out.setDramLimitBytes(plan.dram_limit_bytes);
  out.setMode(MigrationModeToCapnp(plan.mode));
  auto tiers = out.initInitialTiers(plan.initial_tiers.size());
  for (size_t i = 0; i < plan.initial_tiers.size(); ++i)
    tiers.set(i, TierToCapnp(plan.initial_tiers[i]));
  auto migrations = out.initMigrations(plan.migrations.size());
  for (size_t i = 0; i < plan.migrations.size(); ++i) {
    const Migration& m = plan.migrations[i];
    auto o = migrations[i];
    o.setAfterKernel(m.after_kernel);
    o.setTensor(m.tensor);
    o.setTo(TierToCapnp(m.to));
  }
  out.setProducedBy(StringToText(plan.produced_by));
}

PlacementPlan PlanFromCapnp(schema::PlacementPlan::Reader in) {
  CheckFormatVersion(in.getFormatVersion(), PlacementPlan::kFormatVersion);
  PlacementPlan plan;
  plan.workload_signature = in.getWorkloadSignature();
  plan.dram_limit_bytes = in.getDramLimitBytes();
  plan.mode = MigrationModeFromCapnp(in.getMode());
  auto tiers = in.getInitialTiers();
  plan.initial_tiers.reserve(tiers.size());
  for (auto tier : tiers) plan.initial_tiers.push_back(TierFromCapnp(tier));
  auto migrations = in.getMigrations();
  plan.migrations.reserve(migrations.size());
  for (auto m : migrations)
    plan.migrations.push_back(Migration{m.getAfterKernel(), m.getTensor(), TierFromCapnp(m.getTo())});
  plan.produced_by = TextToString(in.getProducedBy());
  return plan;
}

void EnvConfigToCapnp(const EnvConfig& config, schema::EnvSettings::Builder out) {
  out.setDramLimitBytes(config.dram_limit_bytes);
  out.setBeta(config.beta);
  out.setRewardFix(config.reward_fix);
  out.setOomPenalty(config.oom_penalty);
  out.setMode(MigrationModeToCapnp(config.mode));
  out.setDramPricePerGb(config.dram_price_per_gb);
  out.setSlowPricePerGb(config.slow_price_per_gb);
  out.setOomHandling(config.oom_handling == OomHandling::kTerminate ? schema::OomHandling::TERMINATE
                                                                    : schema::OomHandling::SPILL_TO_SLOW);
  out.setSpillPenalty(config.spill_penalty);
  out.setStepReward(config.step_reward == StepRewardKind::kDeepTm ? schema::StepRewardKind::DEEP_TM
                                                                   : schema::StepRewardKind::TIME_SAVED);
  switch (config.scope) {
    case DecisionScope::kAccessGaps: out.setDecisionScope(schema::DecisionScope::ACCESS_GAPS); break;
    case DecisionScope::kRelevant: out.setDecisionScope(schema::DecisionScope::RELEVANT); break;
    case DecisionScope::kAllLive: out.setDecisionScope(schema::DecisionScope::ALL_LIVE); break;
  }
}

EnvConfig EnvConfigFromCapnp(schema::EnvSettings::Reader in) {
  EnvConfig config;
  config.dram_limit_bytes = in.getDramLimitBytes();
  config.beta = in.getBeta();
  config.reward_fix = in.getRewardFix();
  config.oom_penalty = in.getOomPenalty();
  config.mode = MigrationModeFromCapnp(in.getMode());
  config.dram_price_per_gb = in.getDramPricePerGb();
  config.slow_price_per_gb = in.getSlowPricePerGb();
  switch (in.getOomHandling()) {
    case schema::OomHandling::SPILL_TO_SLOW: config.oom_handling = OomHandling::kSpillToSlow; break;
    case schema::OomHandling::TERMINATE: config.oom_handling = OomHandling::kTerminate; break;
    default: throw std::invalid_argument("unknown OOM handling " + std::to_string(static_cast<int>(in.getOomHandling())));
  }
  config.spill_penalty = in.getSpillPenalty();
  switch (in.getStepReward()) {
    case schema::StepRewardKind::TIME_SAVED: config.step_reward = StepRewardKind::kTimeSaved; break;
    case schema::StepRewardKind::DEEP_TM: config.step_reward = StepRewardKind::kDeepTm; break;
    default: throw std::invalid_argument("unknown step reward " + std::to_string(static_cast<int>(in.getStepReward())));
  }
  switch (in.getDecisionScope()) {
    case schema::DecisionScope::ACCESS_GAPS: config.scope = DecisionScope::kAccessGaps; break;
    case schema::DecisionScope::RELEVANT: config.scope = DecisionScope::kRelevant; break;
    case schema::DecisionScope::ALL_LIVE: config.scope = DecisionScope::kAllLive; break;
    default:
      throw std::invalid_argument("unknown decision scope " + std::to_string(static_cast<int>(in.getDecisionScope())));
  }
  return config;
}

}  // namespace tensortier
