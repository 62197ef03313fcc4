#include "protocol/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "envs/workload_capnp.h"
#include "tensortier.capnp.h"

namespace tensortier {
namespace {

using Body = schema::Envelope::Body;

capnp::Data::Reader BytesToData(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

std::string DataToBytes(capnp::Data::Reader data) {
  return std::string(reinterpret_cast<const char*>(data.begin()), data.size());
}

void FloatsToCapnp(const std::vector<float>& values, capnp::List<float>::Builder out) {
  for (size_t i = 0; i < values.size(); ++i) out.set(i, values[i]);
}

std::vector<float> FloatsFromCapnp(capnp::List<float>::Reader in) {
  std::vector<float> values;
  values.reserve(in.size());
  for (float v : in) values.push_back(v);
  return values;
}

// ------------------------------------------------------------------ encode

void EncodeBody(const RegisterMsg& m, Body::Builder body) {
  auto out = body.initRegister();
  out.setHost(StringToText(m.host));
  out.setPid(m.pid);
  out.setWorkerName(StringToText(m.worker_name));
  auto tiers = out.initTiers(m.tiers.size());
  for (size_t i = 0; i < m.tiers.size(); ++i) {
    tiers[i].setTier(TierToCapnp(m.tiers[i].tier));
    tiers[i].setCapacityBytes(m.tiers[i].capacity_bytes);
  }
  out.setSlowTierBackend(StringToText(m.slow_tier_backend));
}

void EncodeBody(const RegisterAckMsg& m, Body::Builder body) {
  auto out = body.initRegisterAck();
  out.setWorkerId(m.worker_id);
  out.setHeartbeatIntervalMs(m.heartbeat_interval_ms);
  out.setHeartbeatLiveness(m.heartbeat_liveness);
}

void EncodeBody(const HeartbeatMsg& m, Body::Builder body) {
  auto out = body.initHeartbeat();
  out.setWorkerId(m.worker_id);
  out.setEpisodesDone(m.episodes_done);
}

void ExplorationToCapnp(const ExplorationSettings& e, schema::ExplorationSettings::Builder out) {
  out.setEpsilon(e.epsilon);
  out.setEpsilonStart(e.epsilon_start);
  out.setEpsilonEnd(e.epsilon_end);
  out.setScheduleEpisodes(e.schedule_episodes);
  out.setSeed(e.seed);
}

void EncodeBody(const TaskMsg& m, Body::Builder body) {
  auto out = body.initTask();
  out.setTaskId(m.task_id);
  WorkloadToCapnp(m.workload, out.initWorkload());
  EnvConfigToCapnp(m.env, out.initEnv());
  ExplorationToCapnp(m.exploration, out.initExploration());
  out.setAgent(StringToText(m.agent));
  out.setAgentConfigJson(StringToText(m.agent_config_json));
}

void EncodeBody(const WeightsMsg& m, Body::Builder body) {
  auto out = body.initWeights();
  out.setVersion(m.version);
  out.setAgent(StringToText(m.agent));
  out.setBlob(BytesToData(m.blob));
}

void EncodeBody(const TransitionBatchMsg& m, Body::Builder body) {
  auto out = body.initTransitions();
  out.setWorkerId(m.worker_id);
  out.setTaskId(m.task_id);
  out.setEpisodeId(m.episode_id);
  out.setPolicyVersion(m.policy_version);
  auto transitions = out.initTransitions(m.transitions.size());
  for (size_t i = 0; i < m.transitions.size(); ++i) {
    const Transition& t = m.transitions[i];
    auto o = transitions[i];
    FloatsToCapnp(t.observation, o.initObservation(t.observation.size()));
    o.setAction(t.action);
    o.setReward(t.reward);
    FloatsToCapnp(t.next_observation, o.initNextObservation(t.next_observation.size()));
    o.setDone(t.done);
  }
}

void CountersToCapnp(const MemoryCounters& c, schema::MemoryCounters::Builder out) {
  out.setDramPeakBytes(c.dram_peak_bytes);
  out.setSlowPeakBytes(c.slow_peak_bytes);
  out.setBytesToSlow(c.bytes_to_slow);
  out.setBytesToDram(c.bytes_to_dram);
  out.setMigrationsToSlow(c.migrations_to_slow);
  out.setMigrationsToDram(c.migrations_to_dram);
  out.setOomEvents(c.oom_events);
  out.setMeasured(c.measured);
  out.setRuntimeSpread(c.runtime_spread);
  out.setRepeats(c.repeats);
  out.setMinorFaults(c.minor_faults);
  out.setMajorFaults(c.major_faults);
  out.setExposedMigrationNs(c.exposed_migration_ns);
  out.setEmulatedDelayNs(c.emulated_delay_ns);
  out.setHardwareCounters(c.hardware_counters);
  out.setCycles(c.cycles);
  out.setInstructions(c.instructions);
  out.setLlcMisses(c.llc_misses);
}

void EncodeBody(const EpisodeReportMsg& m, Body::Builder body) {
  auto out = body.initEpisodeReport();
  out.setWorkerId(m.worker_id);
  out.setTaskId(m.task_id);
  out.setEpisodeId(m.episode_id);
  out.setPolicyVersion(m.policy_version);
  out.setSteps(m.steps);
  out.setStepRewardSum(m.step_reward_sum);
  out.setEpisodicReward(m.episodic_reward);
  out.setRuntimeNs(m.runtime_ns);
  out.setNormalisedCost(m.normalised_cost);
  out.setOom(m.oom);
  out.setEpsilon(m.epsilon);
  CountersToCapnp(m.counters, out.initCounters());
  out.setBackend(StringToText(m.backend));
  PlanToCapnp(m.plan, out.initPlan());
  out.setGreedy(m.greedy);
}

void EncodeBody(const ErrorMsg& m, Body::Builder body) {
  auto out = body.initError();
  out.setCode(static_cast<uint16_t>(m.code));
  out.setReason(StringToText(m.reason));
}

void EncodeBody(const ShutdownMsg& m, Body::Builder body) {
  body.initShutdown().setReason(StringToText(m.reason));
}

// ------------------------------------------------------------------ decode

RegisterMsg RegisterFromCapnp(schema::Register::Reader in) {
  RegisterMsg m;
  m.host = TextToString(in.getHost());
  m.pid = in.getPid();
  m.worker_name = TextToString(in.getWorkerName());
  for (auto tier : in.getTiers())
    m.tiers.push_back(TierCapacity{TierFromCapnp(tier.getTier()), tier.getCapacityBytes()});
  m.slow_tier_backend = TextToString(in.getSlowTierBackend());
  return m;
}

RegisterAckMsg RegisterAckFromCapnp(schema::RegisterAck::Reader in) {
  return RegisterAckMsg{in.getWorkerId(), in.getHeartbeatIntervalMs(), in.getHeartbeatLiveness()};
}

HeartbeatMsg HeartbeatFromCapnp(schema::Heartbeat::Reader in) {
  return HeartbeatMsg{in.getWorkerId(), in.getEpisodesDone()};
}

ExplorationSettings ExplorationFromCapnp(schema::ExplorationSettings::Reader in) {
  return ExplorationSettings{in.getEpsilon(), in.getEpsilonStart(), in.getEpsilonEnd(),
                             in.getScheduleEpisodes(), in.getSeed()};
}

TaskMsg TaskFromCapnp(schema::Task::Reader in) {
  TaskMsg m;
  m.task_id = in.getTaskId();
  try {
    m.workload = WorkloadFromCapnp(in.getWorkload());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("task workload: ") + e.what());
  }
  m.env = EnvConfigFromCapnp(in.getEnv());
  m.exploration = ExplorationFromCapnp(in.getExploration());
  m.agent = TextToString(in.getAgent());
  m.agent_config_json = TextToString(in.getAgentConfigJson());
  return m;
}

WeightsMsg WeightsFromCapnp(schema::PolicyWeights::Reader in) {
  return WeightsMsg{in.getVersion(), TextToString(in.getAgent()), DataToBytes(in.getBlob())};
}

TransitionBatchMsg TransitionsFromCapnp(schema::TransitionBatch::Reader in) {
  TransitionBatchMsg m;
  m.worker_id = in.getWorkerId();
  m.task_id = in.getTaskId();
  m.episode_id = in.getEpisodeId();
  m.policy_version = in.getPolicyVersion();
  auto transitions = in.getTransitions();
  m.transitions.reserve(transitions.size());
  for (auto t : transitions) {
    m.transitions.push_back(Transition{FloatsFromCapnp(t.getObservation()), t.getAction(),
                                       t.getReward(), FloatsFromCapnp(t.getNextObservation()),
                                       t.getDone()});
  }
  return m;
}

MemoryCounters CountersFromCapnp(schema::MemoryCounters::Reader in) {
  MemoryCounters c;
  c.dram_peak_bytes = in.getDramPeakBytes();
  c.slow_peak_bytes = in.getSlowPeakBytes();
  c.bytes_to_slow = in.getBytesToSlow();
  c.bytes_to_dram = in.getBytesToDram();
  c.migrations_to_slow = in.getMigrationsToSlow();
  c.migrations_to_dram = in.getMigrationsToDram();
  c.oom_events = in.getOomEvents();
  c.measured = in.getMeasured();
  c.runtime_spread = in.getRuntimeSpread();
  c.repeats = in.getRepeats();
  c.minor_faults = in.getMinorFaults();
  c.major_faults = in.getMajorFaults();
  c.exposed_migration_ns = in.getExposedMigrationNs();
  c.emulated_delay_ns = in.getEmulatedDelayNs();
  c.hardware_counters = in.getHardwareCounters();
  c.cycles = in.getCycles();
  c.instructions = in.getInstructions();
  c.llc_misses = in.getLlcMisses();
  return c;
}

EpisodeReportMsg EpisodeReportFromCapnp(schema::EpisodeReport::Reader in) {
  EpisodeReportMsg m;
  m.worker_id = in.getWorkerId();
  m.task_id = in.getTaskId();
  m.episode_id = in.getEpisodeId();
  m.policy_version = in.getPolicyVersion();
  m.steps = in.getSteps();
  m.step_reward_sum = in.getStepRewardSum();
  m.episodic_reward = in.getEpisodicReward();
  m.runtime_ns = in.getRuntimeNs();
  m.normalised_cost = in.getNormalisedCost();
  m.oom = in.getOom();
  m.epsilon = in.getEpsilon();
  m.counters = CountersFromCapnp(in.getCounters());
  m.backend = TextToString(in.getBackend());
  try {
    m.plan = PlanFromCapnp(in.getPlan());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("episode report plan: ") + e.what());
  }
  m.greedy = in.getGreedy();
  return m;
}

// Unknown codes are kept: a newer peer may send codes this build lacks, and
// the reason text still says what went wrong.
ErrorMsg ErrorFromCapnp(schema::Error::Reader in) {
  return ErrorMsg{static_cast<ErrorCode>(in.getCode()), TextToString(in.getReason())};
}

Message DecodeBody(Body::Reader body) {
  switch (body.which()) {
    case Body::REGISTER: return RegisterFromCapnp(body.getRegister());
    case Body::REGISTER_ACK: return RegisterAckFromCapnp(body.getRegisterAck());
    case Body::HEARTBEAT: return HeartbeatFromCapnp(body.getHeartbeat());
    case Body::TASK: return TaskFromCapnp(body.getTask());
    case Body::WEIGHTS: return WeightsFromCapnp(body.getWeights());
    case Body::TRANSITIONS: return TransitionsFromCapnp(body.getTransitions());
    case Body::EPISODE_REPORT: return EpisodeReportFromCapnp(body.getEpisodeReport());
    case Body::ERROR: return ErrorFromCapnp(body.getError());
    case Body::SHUTDOWN: return ShutdownMsg{TextToString(body.getShutdown().getReason())};
  }
  throw std::runtime_error("unknown message body " +
                           std::to_string(static_cast<uint16_t>(body.which())));
}

DecodeError Failure(DecodeErrorReason reason, std::string detail) {
  return DecodeError{reason, std::move(detail)};
}

// The checks that need only the frame's size, done before anything is copied.
std::optional<DecodeError> CheckFrameSize(size_t size, const CodecLimits& limits) {
  if (size == 0) return Failure(DecodeErrorReason::kEmpty, "empty frame");
  if (size > limits.max_frame_bytes)
    return Failure(DecodeErrorReason::kOversized,
                   "frame of " + std::to_string(size) + " bytes, the limit is " +
                       std::to_string(limits.max_frame_bytes));
  if (size % sizeof(capnp::word) != 0)
    return Failure(DecodeErrorReason::kMalformed,
                   "frame of " + std::to_string(size) + " bytes is not a whole number of words");
  return std::nullopt;
}

DecodeResult DecodeWords(kj::ArrayPtr<const capnp::word> words, const CodecLimits& limits) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversal_limit_words;
  options.nestingLimit = limits.nesting_limit;
  capnp::FlatArrayMessageReader reader(words, options);
  if (reader.getEnd() != words.end())
    return Failure(DecodeErrorReason::kMalformed, "unexpected bytes after the message");
  auto envelope = reader.getRoot<schema::Envelope>();
  uint16_t version = envelope.getProtocolVersion();
  if (version != kProtocolVersion)
    return Failure(DecodeErrorReason::kWrongVersion,
                   "protocol version " + std::to_string(version) + ", this build speaks " +
                       std::to_string(kProtocolVersion));
  return DecodeBody(envelope.getBody());
}

}  // namespace

const char* DecodeErrorReasonName(DecodeErrorReason r) {
  switch (r) {
    case DecodeErrorReason::kOversized: return "oversized";
    case DecodeErrorReason::kMalformed: return "malformed";
    case DecodeErrorReason::kWrongVersion: return "wrong_version";
    case DecodeErrorReason::kEmpty: return "empty";
  }
  return "unknown";
}

std::string EncodeMessageWithVersion(const Message& m, uint16_t version) {
  try {
    capnp::MallocMessageBuilder message;
    auto envelope = message.initRoot<schema::Envelope>();
    envelope.setProtocolVersion(version);
    std::visit([&](const auto& body) { EncodeBody(body, envelope.getBody()); }, m);
    // The flat array owns the bytes; copy them out before it goes away.
    kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
    kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
    return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  } catch (const kj::Exception& e) {
    throw std::runtime_error(std::string("cannot encode ") + MessageName(m) + ": " +
                             e.getDescription().cStr());
  }
}

std::string EncodeMessage(const Message& m) { return EncodeMessageWithVersion(m, kProtocolVersion); }

DecodeResult DecodeMessage(const void* data, size_t size, const CodecLimits& limits) {
  if (auto error = CheckFrameSize(size, limits)) return *std::move(error);
  try {
    // Frames come from sockets at any alignment; capnp reads words in place.
    auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
    std::memcpy(words.begin(), data, size);
    return DecodeWords(words, limits);
  } catch (const kj::Exception& e) {
    return Failure(DecodeErrorReason::kMalformed, e.getDescription().cStr());
  } catch (const std::exception& e) {
    return Failure(DecodeErrorReason::kMalformed, e.what());
  }
}

}  // namespace tensortier
