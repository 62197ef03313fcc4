#include "protocol/codec.h"

#include <algorithm>

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "envs/workload_capnp.h"
#include "protocol/messages_capnp.h"
#include "tensortier.capnp.h"

namespace tensortier {
namespace {

using Body = schema::Envelope::Body;

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
  out.setIncarnation(m.incarnation);
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
  if (!m.acked_episodes.empty()) {
    auto acked = out.initAckedEpisodes(m.acked_episodes.size());
    for (size_t i = 0; i < m.acked_episodes.size(); ++i) acked.set(i, m.acked_episodes[i]);
  }
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
  if (!m.priorities.empty()) FloatsToCapnp(m.priorities, out.initPriorities(m.priorities.size()));
  out.setChunkIndex(m.chunk_index);
  out.setChunkCount(m.chunk_count);
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
  out.setMeasurementCached(m.measurement_cached);
  out.setMinRuntimeNs(m.min_runtime_ns);
  out.setMaxRuntimeNs(m.max_runtime_ns);
}

void EncodeBody(const MeasurementCacheMsg& m, Body::Builder body) { MeasurementsToCapnp(m, body.initMeasurements()); }

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
  m.incarnation = in.getIncarnation();
  return m;
}

RegisterAckMsg RegisterAckFromCapnp(schema::RegisterAck::Reader in) {
  return RegisterAckMsg{in.getWorkerId(), in.getHeartbeatIntervalMs(), in.getHeartbeatLiveness()};
}

HeartbeatMsg HeartbeatFromCapnp(schema::Heartbeat::Reader in) {
  HeartbeatMsg m{in.getWorkerId(), in.getEpisodesDone(), {}};
  auto acked = in.getAckedEpisodes();
  m.acked_episodes.reserve(acked.size());
  for (uint64_t e : acked) m.acked_episodes.push_back(e);
  return m;
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
  m.priorities = FloatsFromCapnp(in.getPriorities());
  m.chunk_index = in.getChunkIndex();
  m.chunk_count = std::max<uint32_t>(1, in.getChunkCount());
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
  m.measurement_cached = in.getMeasurementCached();
  m.min_runtime_ns = in.getMinRuntimeNs();
  m.max_runtime_ns = in.getMaxRuntimeNs();
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
    case Body::MEASUREMENTS: return MeasurementsFromCapnp(body.getMeasurements());
  }
  throw std::runtime_error("unknown message body " +
                           std::to_string(static_cast<uint16_t>(body.which())));
}

DecodeError Failure(DecodeErrorReason reason, std::string detail) {
  return DecodeError{reason, std::move(detail)};
}

// The name of the first non-finite measurement, or null. Rewards, costs and
// runtimes feed the learner's records, its best plan and the measurement
// cache that every worker rescales its rewards with.
const char* NonFiniteField(const MemoryCounters& c) {
  if (!std::isfinite(c.runtime_spread)) return "runtime_spread";
  if (!std::isfinite(c.exposed_migration_ns)) return "exposed_migration_ns";
  if (!std::isfinite(c.emulated_delay_ns)) return "emulated_delay_ns";
  return nullptr;
}

const char* NonFiniteField(const Message& m) {
  if (auto* r = std::get_if<EpisodeReportMsg>(&m)) {
    const std::pair<const char*, double> fields[] = {
        {"step_reward_sum", r->step_reward_sum}, {"episodic_reward", r->episodic_reward},
        {"runtime_ns", r->runtime_ns},           {"normalised_cost", r->normalised_cost},
        {"epsilon", r->epsilon},                 {"min_runtime_ns", r->min_runtime_ns},
        {"max_runtime_ns", r->max_runtime_ns}};
    for (const auto& [name, value] : fields)
      if (!std::isfinite(value)) return name;
    return NonFiniteField(r->counters);
  }
  if (auto* c = std::get_if<MeasurementCacheMsg>(&m)) {
    for (const CachedMeasurement& e : c->entries) {
      if (!std::isfinite(e.runtime_ns)) return "runtime_ns";
      if (!std::isfinite(e.min_runtime_ns)) return "min_runtime_ns";
      if (!std::isfinite(e.max_runtime_ns)) return "max_runtime_ns";
      if (const char* name = NonFiniteField(e.counters)) return name;
    }
  }
  return nullptr;
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
  // Reads in proportion to the frame, as envs/workload_io.cc does for files:
  // with the flat 128 MiB limit alone, a 160-byte frame whose list claims
  // millions of elements made the decoder build vectors of hundreds of MB
  // and spend seconds on it (found by fuzz/fuzz_protocol; its corpus keeps
  // regression-amplified-list).
  options.traversalLimitInWords =
      std::min<uint64_t>(limits.traversal_limit_words, 1024 + 8 * static_cast<uint64_t>(words.size()));
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
  Message message = DecodeBody(envelope.getBody());
  if (const char* field = NonFiniteField(message))
    return Failure(DecodeErrorReason::kNonFinite, std::string(MessageName(message)) + " " + field + " is not finite");
  return message;
}

}  // namespace

void MeasurementsToCapnp(const MeasurementCacheMsg& m, schema::MeasurementCache::Builder out) {
  out.setWorkloadSignature(m.workload_signature);
  out.setDramLimitBytes(m.dram_limit_bytes);
  auto entries = out.initEntries(m.entries.size());
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const CachedMeasurement& e = m.entries[i];
    auto o = entries[i];
    o.setPlanHash(e.plan_hash);
    o.setBackend(StringToText(e.backend));
    o.setRuntimeNs(e.runtime_ns);
    o.setMinRuntimeNs(e.min_runtime_ns);
    o.setMaxRuntimeNs(e.max_runtime_ns);
    o.setOom(e.oom);
    CountersToCapnp(e.counters, o.initCounters());
  }
}

MeasurementCacheMsg MeasurementsFromCapnp(schema::MeasurementCache::Reader in) {
  MeasurementCacheMsg m;
  m.workload_signature = in.getWorkloadSignature();
  m.dram_limit_bytes = in.getDramLimitBytes();
  auto entries = in.getEntries();
  m.entries.reserve(entries.size());
  for (auto e : entries)
    m.entries.push_back(CachedMeasurement{e.getPlanHash(), TextToString(e.getBackend()), e.getRuntimeNs(),
                                          e.getMinRuntimeNs(), e.getMaxRuntimeNs(), e.getOom(),
                                          CountersFromCapnp(e.getCounters())});
  return m;
}

const char* NonFiniteFieldOf(const Message& m) { return NonFiniteField(m); }

const char* DecodeErrorReasonName(DecodeErrorReason r) {
  switch (r) {
    case DecodeErrorReason::kOversized: return "oversized";
    case DecodeErrorReason::kMalformed: return "malformed";
    case DecodeErrorReason::kWrongVersion: return "wrong_version";
    case DecodeErrorReason::kEmpty: return "empty";
    case DecodeErrorReason::kAmplified: return "amplified";
    case DecodeErrorReason::kNonFinite: return "non_finite";
  }
  return "unknown";
}

namespace {

// Words to reserve for the first segment: room for the whole message, so
// that it is one segment. Past the default first segment (1024 words) the
// builder starts new ones, and a reader then follows a far pointer, with a
// locked segment lookup, for nearly every list of a TransitionBatch (the
// learner's ingest profile: most of its decode time).
unsigned FirstSegmentWords(const Message& m) {
  constexpr size_t kDefaultWords = 1024, kMaxWords = 1u << 26;
  auto words_of_floats = [](size_t n) { return (n + 1) / 2; };
  size_t words = kDefaultWords;
  if (auto* t = std::get_if<TransitionBatchMsg>(&m)) {
    words = 64 + words_of_floats(t->priorities.size());
    for (const Transition& row : t->transitions)
      words += 4 + words_of_floats(row.observation.size()) + words_of_floats(row.next_observation.size());
  } else if (auto* w = std::get_if<WeightsMsg>(&m)) {
    words = 64 + (w->agent.size() + w->blob.size()) / sizeof(capnp::word);
  }
  return static_cast<unsigned>(std::min(std::max(words, kDefaultWords), kMaxWords));
}

}  // namespace

std::string EncodeMessageWithVersion(const Message& m, uint16_t version) {
  try {
    capnp::MallocMessageBuilder message(FirstSegmentWords(m));
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

namespace tensortier {

constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

namespace {

// Appends a List(Float32) to `out`: refused unless its elements are the
// 4-byte floats themselves (a struct list may stand in for it on the wire,
// and costs its structs' words on every read) and finite.
std::optional<DecodeError> AppendFloats(capnp::List<float>::Reader in, const char* what, std::vector<float>& out) {
  if (in.size() == 0) return std::nullopt;
  capnp::AnyList::Reader any(in);
  if (any.getElementSize() != capnp::ElementSize::FOUR_BYTES)
    return Failure(DecodeErrorReason::kAmplified,
                   std::string(what) + ": a list of " +
                       (any.getElementSize() == capnp::ElementSize::INLINE_COMPOSITE ? "structs" : "other elements") +
                       " where 4-byte floats are expected");
  const size_t begin = out.size();
  out.resize(begin + in.size());
  const kj::ArrayPtr<const kj::byte> bytes = any.getRawBytes();
  if (kLittleEndian && bytes.size() == in.size() * sizeof(float)) {
    std::memcpy(out.data() + begin, bytes.begin(), bytes.size());
  } else {
    for (unsigned j = 0; j < in.size(); ++j) out[begin + j] = in[j];
  }
  // NaN and infinities are the floats whose exponent bits are all set; or-ing
  // the test over the list keeps the loop branch-free (vectorised).
  bool non_finite = false;
  for (size_t j = begin; j < out.size(); ++j) {
    uint32_t bits;
    std::memcpy(&bits, &out[j], sizeof bits);
    non_finite |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  if (non_finite) return Failure(DecodeErrorReason::kNonFinite, std::string(what) + " not finite");
  return std::nullopt;
}

}  // namespace

TransitionBatchFrame::~TransitionBatchFrame() = default;

std::unique_ptr<TransitionBatchFrame> TransitionBatchFrame::Open(const void* data, size_t size,
                                                                 const CodecLimits& limits, DecodeError* refused) {
  auto refuse = [&](DecodeError error) -> std::unique_ptr<TransitionBatchFrame> {
    if (refused) *refused = std::move(error);
    return nullptr;
  };
  if (CheckFrameSize(size, limits)) return nullptr;
  bool is_batch = false;
  try {
    auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
    std::memcpy(words.begin(), data, size);
    capnp::ReaderOptions options;
    // Every pointer below is followed exactly once, so an honest frame reads
    // at most its own words (less its segment table); a frame whose lists
    // share words or stand in with bigger elements reads more and is refused.
    options.traversalLimitInWords = std::min<uint64_t>(limits.traversal_limit_words, words.size());
    options.nestingLimit = limits.nesting_limit;
    capnp::FlatArrayMessageReader message(words.asPtr(), options);
    if (message.getEnd() != words.end()) return nullptr;
    auto envelope = message.getRoot<schema::Envelope>();
    if (envelope.getProtocolVersion() != kProtocolVersion) return nullptr;
    auto body = envelope.getBody();
    if (body.which() != Body::TRANSITIONS) return nullptr;
    is_batch = true;
    auto batch = body.getTransitions();
    std::unique_ptr<TransitionBatchFrame> frame(new TransitionBatchFrame);
    frame->worker_id_ = batch.getWorkerId();
    frame->task_id_ = batch.getTaskId();
    frame->episode_id_ = batch.getEpisodeId();
    frame->policy_version_ = batch.getPolicyVersion();
    frame->chunk_index_ = batch.getChunkIndex();
    frame->chunk_count_ = std::max<uint32_t>(1, batch.getChunkCount());
    auto rows = batch.getTransitions();
    if (rows.size() > 0 && capnp::AnyList::Reader(rows).getElementSize() != capnp::ElementSize::INLINE_COMPOSITE)
      return refuse(Failure(DecodeErrorReason::kAmplified, "transitions are not a list of structs"));
    const size_t n = rows.size();
    frame->floats_.reserve(std::min<size_t>(2 * words.size(), 2 * n * kObservationSize));
    frame->list_begin_.reserve(2 * n + 1);
    frame->list_begin_.push_back(0);
    frame->actions_.reserve(n);
    frame->rewards_.reserve(n);
    frame->done_.reserve(n);
    size_t floats = 0;
    bool same_shape = true;
    for (size_t i = 0; i < n; ++i) {
      auto row = rows[static_cast<unsigned>(i)];
      if (auto error = AppendFloats(row.getObservation(), "an observation", frame->floats_)) return refuse(*error);
      frame->list_begin_.push_back(frame->floats_.size());
      if (auto error = AppendFloats(row.getNextObservation(), "a next observation", frame->floats_))
        return refuse(*error);
      frame->list_begin_.push_back(frame->floats_.size());
      const size_t observation = frame->list_begin_[2 * i + 1] - frame->list_begin_[2 * i];
      const size_t next = frame->list_begin_[2 * i + 2] - frame->list_begin_[2 * i + 1];
      if (i == 0) floats = observation;
      same_shape = same_shape && observation == floats && next == floats;
      const float reward = row.getReward();
      if (!std::isfinite(reward))
        return refuse(Failure(DecodeErrorReason::kNonFinite, "the reward of row " + std::to_string(i) + " is not finite"));
      frame->actions_.push_back(row.getAction());
      frame->rewards_.push_back(reward);
      frame->done_.push_back(row.getDone() ? 1 : 0);
      frame->max_action_ = std::max(frame->max_action_, row.getAction());
    }
    frame->observation_floats_ = same_shape ? floats : 0;
    if (auto error = AppendFloats(batch.getPriorities(), "a priority", frame->priorities_)) return refuse(*error);
    return frame;
  } catch (const kj::Exception& e) {
    if (!is_batch) return nullptr;
    const std::string detail = e.getDescription().cStr();
    const bool over_budget = detail.find("traversal limit") != std::string::npos;
    return refuse(Failure(over_budget ? DecodeErrorReason::kAmplified : DecodeErrorReason::kMalformed, detail));
  } catch (const std::exception& e) {
    return is_batch ? refuse(Failure(DecodeErrorReason::kMalformed, e.what())) : nullptr;
  }
}

void TransitionBatchFrame::CopyRow(size_t i, Transition& t) const {
  auto copy = [&](size_t list, std::vector<float>& out) {
    out.assign(floats_.begin() + static_cast<std::ptrdiff_t>(list_begin_[list]),
               floats_.begin() + static_cast<std::ptrdiff_t>(list_begin_[list + 1]));
  };
  copy(2 * i, t.observation);
  t.action = actions_[i];
  t.reward = rewards_[i];
  copy(2 * i + 1, t.next_observation);
  t.done = done_[i] != 0;
}

}  // namespace tensortier
