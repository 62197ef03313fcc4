@0xfe4d131bd4064880;
# The learner's checkpoint (checkpoints/learner-N.ttckpt): one LearnerCheckpoint
# message, in Cap'n Proto's standard framing, inside the "TTCKPT02" file frame
# (learner/checkpoint_store.h, docs/file-formats.md). Each part of the learner
# saves and loads its own section; learner/payload.cc composes them.
# Field ordinals are append-only; a change of meaning needs a new frame version.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tensortier::schema");

using Protocol = import "/protocol/tensortier.capnp";

struct LearnerCheckpoint {
  agent @0 :AgentSection;
  run @1 :RunSection;
  counters @2 :Counters;
  fleet @3 :FleetSection;
  trainer @4 :TrainerSection;
  ingest @5 :IngestSection;
  scoreboard @6 :ScoreboardSection;
  measurements @7 :Protocol.MeasurementCache;  # the cache as workers receive it (learner/measurement_cache.h)
}

# What the run trains and on what: a resume refuses a checkpoint of another run.
struct AgentSection {
  agent @0 :Text;               # "dqn", "sac"
  configJson @1 :Text;          # the agent's settings, as DqnConfig / SacConfig write them
  state @2 :Data;               # PlacementAgent::SaveState: networks, optimisers, update count
  workloadSignature @3 :UInt64; # Workload::Signature of the workload trained on
  dramLimitBytes @4 :UInt64;
}

# The learner's own progress (LearnerResult).
struct RunSection {
  episodes @0 :UInt64;          # episode reports counted
  weightsVersion @1 :UInt64;    # the last published weights version (WeightsPublisher)
  evaluations @2 :UInt64;       # greedy evaluations booked
  elapsedSeconds @3 :Float64;   # the run's wall time over all its sessions
  workersSeen @4 :List(UInt32); # ids of every worker that reported
  records @5 :List(EpisodeRecord);  # the rows of metrics.csv, in arrival order
}

# One episode report as the learner booked it (learner.h EpisodeRecord).
struct EpisodeRecord {
  episode @0 :UInt64;           # order of arrival at the learner
  workerId @1 :UInt32;
  workerEpisode @2 :UInt64;
  policyVersion @3 :UInt64;
  steps @4 :UInt32;
  stepRewardSum @5 :Float64;
  episodicReward @6 :Float64;
  normalisedCost @7 :Float64;
  runtimeNs @8 :Float64;
  oom @9 :Bool;
  epsilon @10 :Float64;
  loss @11 :Float64;            # mean over the episode's updates
  meanQ @12 :Float64;
  bestRuntimeNs @13 :Float64;   # best non-OOM plan so far
  wallSeconds @14 :Float64;
  backend @15 :Text;
}

# The counters a resume carries on (learner.h CheckpointedCounters).
struct Counters {
  framesReceived @0 :UInt64;
  malformedFrames @1 :UInt64;
  oversizedFrames @2 :UInt64;
  wrongVersionFrames @3 :UInt64;
  unknownWorkerFrames @4 :UInt64;
  duplicateBatches @5 :UInt64;
  transitionsIngested @6 :UInt64;
  workersRegistered @7 :UInt64;      # Register messages accepted
  workersExpired @8 :UInt64;
  heartbeatsReceived @9 :UInt64;
  unexpectedMessages @10 :UInt64;
  workerErrors @11 :UInt64;          # Error frames from workers
  duplicateReports @12 :UInt64;      # reports of an episode already counted
  episodesAcked @13 :UInt64;         # acknowledgements sent, re-acks included
  checkpointsWritten @14 :UInt64;
  checkpointsRejected @15 :UInt64;   # corrupt or unreadable checkpoints skipped on resume
  measurementCacheHits @16 :UInt64;
  measurementCacheMisses @17 :UInt64;
  measurementCacheRedundant @18 :UInt64;
}

# Worker ids and Ape-X exploration indices (learner/fleet_registry.h): an
# incarnation that reconnects after a resume gets its old ones back.
struct FleetSection {
  nextWorkerId @0 :UInt32;
  nextExplorationIndex @1 :UInt32;
  slots @2 :List(WorkerSlot);
}

struct WorkerSlot {
  incarnation @0 :UInt64;       # the worker process's random id (RegisterMsg.incarnation)
  workerId @1 :UInt32;
  explorationIndex @2 :UInt32;
}

# Replay, its rate limiter and the sampling generator (learner/trainer.h).
struct TrainerSection {
  replay @0 :Replay;
  limiter @1 :RateLimiterState;  # absent: the run had no rate limiter
  samplingRng @2 :Text;          # std::mt19937_64 as operator<< writes it
}

enum ReplayKind {
  uniform @0;
  prioritized @1;
}

struct Replay {
  kind @0 :ReplayKind;
  transitions @1 :Transitions;  # in slot order
  priorities @2 :List(Float64); # prioritised replay: each transition's raw priority; uniform: empty
  nextSlot @3 :UInt64;          # where the ring writes next
  totalAdded @4 :UInt64;        # transitions ever added, overwritten ones included
}

# Transitions column by column: a replay of 100,000 is a few flat lists,
# not 100,000 structs and 200,000 lists.
struct Transitions {
  observations @0 :List(Float32);      # kObservationSize (envs/placement_env.h) floats per transition
  nextObservations @1 :List(Float32);  # the same
  actions @2 :List(UInt8);
  rewards @3 :List(Float32);
  done @4 :List(Bool);
}

# replay/rate_limiter.h
struct RateLimiterState {
  inserts @0 :UInt64;
  samples @1 :UInt64;
  deletes @2 :UInt64;
  blockedInserts @3 :UInt64;
  blockedSamples @4 :UInt64;
  credit @5 :Float64;            # samples the inserts so far have earned
  samplesPerInsert @6 :Float64;  # the ratio in force
  # The derived ratio's window: lengths of the last reported episodes, oldest first.
  recentEpisodeSteps @7 :List(UInt32);
}

# Which episodes are in replay and which reports were counted, so that a
# resent episode is acknowledged, not taken twice (learner/ingest.h).
struct IngestSection {
  episodesInReplay @0 :EpisodeLedger;
  reportsCounted @1 :EpisodeLedger;
  partlyInReplay @2 :List(PartialEpisode);
}

# Episode ids by worker incarnation (learner/episode_ledger.h).
struct EpisodeLedger {
  incarnations @0 :List(IncarnationEpisodes);
}

struct IncarnationEpisodes {
  incarnation @0 :UInt64;
  watermark @1 :UInt64;         # every episode id up to it is in
  above @2 :List(UInt64);       # the ids above the watermark that are in, ascending
}

# An episode of which replay holds the first rows only: a resend skips them.
struct PartialEpisode {
  incarnation @0 :UInt64;
  episode @1 :UInt64;
  rowsInReplay @2 :UInt64;
}

# The best plan and the greedy evaluations (learner/scoreboard.h).
struct ScoreboardSection {
  bestPlan @0 :Protocol.PlacementPlan;  # absent before any plan was ranked
  bestRuntimeNs @1 :Float64;            # the best plan's, on the cost model
  evaluations @2 :List(Evaluation);     # in the order they were booked
  bestEvaluationReward @3 :Float64;
}

struct Evaluation {
  reward @0 :Float64;
  updates @1 :UInt64;           # the agent's gradient steps when its weights were taken
}
