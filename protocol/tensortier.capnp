@0xce880e1af6fb449a;
# TensorTier wire and file formats. Everything that crosses a process boundary
# (learner <-> worker frames, workload files, plan files) is one of these
# structs. Field ordinals are append-only; bump kProtocolVersion (protocol/version.h)
# when the meaning of an existing field changes.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tensortier::schema");

enum Tier {
  dram @0;
  slow @1;
}

enum MigrationMode {
  sync @0;
  async @1;
}

enum TensorKind {
  parameter @0;
  activation @1;
  temporary @2;
  gradient @3;
  optimizerState @4;
  input @5;
}

# ---------------------------------------------------------------- workload

struct Kernel {
  name @0 :Text;
  dramTimeNs @1 :Float64;    # measured/modelled time with every tensor it touches in DRAM
}

struct Tensor {
  name @0 :Text;
  sizeBytes @1 :UInt64;
  kind @2 :TensorKind;
  allocKernel @3 :UInt32;    # first kernel in which the tensor is live
  freeKernel @4 :UInt32;     # last kernel in which the tensor is live (inclusive)
  persistent @5 :Bool;       # lives across iterations (parameters, optimizer state)
  pinnedDram @6 :Bool;       # a framework buffer the step never touches: stays in DRAM whatever the plan
}

struct Access {
  kernel @0 :UInt32;
  tensor @1 :UInt32;
  reads @2 :UInt32;
  writes @3 :UInt32;
  slowPenaltyNs @4 :Float64; # extra kernel time when this tensor is in the slow tier
}

struct DeviceModel {
  name @0 :Text;                       # e.g. "optane-dcpmm", "cxl", "synthetic"
  dramToSlowBytesPerSecond @1 :Float64;
  slowToDramBytesPerSecond @2 :Float64;
  slowCapacityBytes @3 :UInt64;        # 0 = unbounded
  dramToSlowCopySetupNs @4 :Float64;   # fixed cost per copy (0 in files written before it existed)
  slowToDramCopySetupNs @5 :Float64;
  asyncCopyExposure @6 :Float64;       # share of an overlapped async copy's time still paid, 0-1 (0 in files written before it existed)
}

# How to rebuild the training job a workload was profiled from, so that a
# worker can run real iterations of it. Empty name: a synthetic workload.
struct ModelSpec {
  name @0 :Text;             # zoo name ("resnet18", ...) or "torchscript"
  torchscriptPath @1 :Text;
  batchSize @2 :UInt32;
  imageSize @3 :UInt32;
  numClasses @4 :UInt32;
  optimizer @5 :Text;        # "sgd" or "adam"
  seed @6 :UInt64;
}

# How a profile's times were measured and how busy the host was. Added after
# format version 1 without changing it: files without it read as empty.
struct ProfileMethod {
  kernelTiming @0 :Text;        # "thread-cpu+emulated, median of 5 interleaved rounds"; "" = unknown
  copyTiming @1 :Text;          # "wall, lower quartile of 15 rounds"
  timingRounds @2 :UInt32;
  copyRounds @3 :UInt32;
  loadAverageStart @4 :Float64; # 1-minute load average (/proc/loadavg)
  loadAverageEnd @5 :Float64;
  onlineCpus @6 :UInt32;
  dramIterationWallNs @7 :Float64;  # median wall time of an all-DRAM iteration
  slowIterationWallNs @8 :Float64;
}

struct Workload {
  formatVersion @0 :UInt16;
  name @1 :Text;
  source @2 :Text;          # "synthetic:resnet-like seed=1", "profile:resnet18 backend=emulated:optane-dcpmm"
  batchSize @3 :UInt32;
  kernels @4 :List(Kernel);
  tensors @5 :List(Tensor);
  accesses @6 :List(Access);
  device @7 :DeviceModel;
  model @8 :ModelSpec;
  profile @9 :ProfileMethod;
}

# ---------------------------------------------------------------- plans

struct Migration {
  afterKernel @0 :Int32;    # the copy starts when this kernel ends; -1 = before kernel 0
  tensor @1 :UInt32;
  to @2 :Tier;
}

struct PlacementPlan {
  formatVersion @0 :UInt16;
  workloadSignature @1 :UInt64;
  dramLimitBytes @2 :UInt64;
  mode @3 :MigrationMode;
  initialTiers @4 :List(Tier);     # one per tensor, by tensor index
  migrations @5 :List(Migration);  # ordered by afterKernel
  producedBy @6 :Text;             # "dqn v42", "first-touch", ...
}

# ---------------------------------------------------------------- fleet messages

struct TierCapacity {
  tier @0 :Tier;
  capacityBytes @1 :UInt64;
}

struct Register {
  host @0 :Text;
  pid @1 :UInt32;
  workerName @2 :Text;
  tiers @3 :List(TierCapacity);
  slowTierBackend @4 :Text;   # "cost-model", "emulated:optane-dcpmm", "dax-kmem", "pmem:/mnt/pmem0"
  incarnation @5 :UInt64;     # random per worker process, kept across reconnects; 0 = unknown (old worker)
}

struct RegisterAck {
  workerId @0 :UInt32;
  heartbeatIntervalMs @1 :UInt32;
  heartbeatLiveness @2 :UInt32;
}

struct Heartbeat {
  workerId @0 :UInt32;
  episodesDone @1 :UInt64;
  # From the learner: the episode ids of this worker ingested since the last
  # acknowledgement (transitions and report both in), so that a worker can
  # forget them; it resends anything unacknowledged.
  ackedEpisodes @2 :List(UInt64);
}

struct ExplorationSettings {
  epsilon @0 :Float64;        # fixed epsilon for this worker when scheduleEpisodes == 0
  epsilonStart @1 :Float64;
  epsilonEnd @2 :Float64;
  scheduleEpisodes @3 :UInt32;
  seed @4 :UInt64;
}

struct EnvSettings {
  dramLimitBytes @0 :UInt64;
  beta @1 :Float64;
  rewardFix @2 :Float64;
  oomPenalty @3 :Float64;
  mode @4 :MigrationMode;
  dramPricePerGb @5 :Float64;
  slowPricePerGb @6 :Float64;
  oomHandling @7 :OomHandling;
  spillPenalty @8 :Float64;
  stepReward @9 :StepRewardKind;
  # Which live tensors get a decision (docs/mdp.md). A frame without it
  # gets accessGaps, the default since 2026-11-24.
  decisionScope @10 :DecisionScope;
}

enum DecisionScope {
  accessGaps @0;
  relevant @1;
  allLive @2;
}

enum StepRewardKind {
  timeSaved @0;
  deepTm @1;
}

enum OomHandling {
  spillToSlow @0;
  terminate @1;
}

struct Task {
  taskId @0 :UInt64;
  workload @1 :Workload;
  env @2 :EnvSettings;
  exploration @3 :ExplorationSettings;
  agent @4 :Text;             # "dqn"
  agentConfigJson @5 :Text;   # network sizes etc., so the worker builds the same network
}

struct PolicyWeights {
  version @0 :UInt64;
  agent @1 :Text;
  blob @2 :Data;              # torch::save of the policy network's parameters
}

struct Transition {
  observation @0 :List(Float32);
  action @1 :UInt8;
  reward @2 :Float32;
  nextObservation @3 :List(Float32);
  done @4 :Bool;
}

struct TransitionBatch {
  workerId @0 :UInt32;
  taskId @1 :UInt64;
  episodeId @2 :UInt64;
  policyVersion @3 :UInt64;
  transitions @4 :List(Transition);
  priorities @5 :List(Float32);   # optional initial replay priority per transition (Ape-X); empty = none
  # An episode too long for one frame comes as chunkCount batches with the
  # same episodeId, chunkIndex 0 .. chunkCount - 1, in any order; the learner
  # takes the episode in once all are there. 0 (old senders) = 1.
  chunkIndex @6 :UInt32;
  chunkCount @7 :UInt32;
}

struct MemoryCounters {
  dramPeakBytes @0 :UInt64;
  slowPeakBytes @1 :UInt64;
  bytesToSlow @2 :UInt64;
  bytesToDram @3 :UInt64;
  migrationsToSlow @4 :UInt32;
  migrationsToDram @5 :UInt32;
  oomEvents @6 :UInt32;
  # Measured on real iterations only (zero from the cost model).
  measured @7 :Bool;
  runtimeSpread @8 :Float64;        # (max - min) / median over the repeats
  repeats @9 :UInt32;
  minorFaults @10 :Int64;
  majorFaults @11 :Int64;
  exposedMigrationNs @12 :Float64;
  emulatedDelayNs @13 :Float64;
  hardwareCounters @14 :Bool;       # false: cycles/instructions/llcMisses unavailable on this host
  cycles @15 :UInt64;
  instructions @16 :UInt64;
  llcMisses @17 :UInt64;
}

struct EpisodeReport {
  workerId @0 :UInt32;
  taskId @1 :UInt64;
  episodeId @2 :UInt64;
  policyVersion @3 :UInt64;
  steps @4 :UInt32;
  stepRewardSum @5 :Float64;
  episodicReward @6 :Float64;
  runtimeNs @7 :Float64;      # cost-model prediction or measured median
  normalisedCost @8 :Float64; # (C - C_min) / (C_max - C_min)
  oom @9 :Bool;
  epsilon @10 :Float64;
  counters @11 :MemoryCounters;
  backend @12 :Text;
  plan @13 :PlacementPlan;
  greedy @14 :Bool;
  measurementCached @15 :Bool;  # runtime and counters came from the learner's measurement cache
  minRuntimeNs @16 :Float64;    # the all-DRAM and all-slow runtimes the reward was normalised with
  maxRuntimeNs @17 :Float64;
}

struct Error {
  code @0 :UInt16;
  reason @1 :Text;
}

struct Shutdown {
  reason @0 :Text;
}

# A real measurement the learner already has: a worker of the same backend
# takes it instead of executing the same plan again.
struct CachedMeasurement {
  planHash @0 :UInt64;
  backend @1 :Text;
  runtimeNs @2 :Float64;
  minRuntimeNs @3 :Float64;
  maxRuntimeNs @4 :Float64;
  oom @5 :Bool;
  counters @6 :MemoryCounters;
}

struct MeasurementCache {
  workloadSignature @0 :UInt64;
  dramLimitBytes @1 :UInt64;
  entries @2 :List(CachedMeasurement);   # new entries (or all, after registering)
}

struct Envelope {
  protocolVersion @0 :UInt16;
  body :union {
    register @1 :Register;
    registerAck @2 :RegisterAck;
    heartbeat @3 :Heartbeat;
    task @4 :Task;
    weights @5 :PolicyWeights;
    transitions @6 :TransitionBatch;
    episodeReport @7 :EpisodeReport;
    error @8 :Error;
    shutdown @9 :Shutdown;
    measurements @10 :MeasurementCache;
  }
}
