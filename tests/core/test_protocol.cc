#include "protocol/codec.h"

#include <capnp/message.h>

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "envs/workload_capnp.h"
#include "tests/core/same_workload.h"

namespace tensortier {
namespace {

using testing::ExpectSameWorkload;

Workload MakeWorkload() {
  Workload w;
  w.name = "tiny";
  w.source = "synthetic:tiny seed=3";
  w.batch_size = 16;
  w.kernels = {{"fwd", 100.5}, {"bwd", 250.25}};
  w.tensors = {
      {"w", 1024, TensorKind::kParameter, 0, 1, true},
      {"a", 2048, TensorKind::kActivation, 0, 1, false},
  };
  w.accesses = {{0, 0, 1, 0, 3.5}, {0, 1, 0, 1, 4.5}, {1, 1, 1, 0, 8.0}};
  w.device = {"cxl", 3.0e9, 4.0e9, 1ull << 33};
  w.Finalize();
  return w;
}

TaskMsg MakeTask() {
  TaskMsg m;
  m.task_id = 0x1234567890ull;
  m.workload = MakeWorkload();
  m.env.dram_limit_bytes = 3000;
  m.env.mode = MigrationMode::kAsync;
  m.env.beta = 0.25;
  m.env.reward_fix = 10;
  m.env.oom_penalty = 99;
  m.env.dram_price_per_gb = 1.5;
  m.env.slow_price_per_gb = 0.5;
  m.env.oom_handling = OomHandling::kTerminate;
  m.env.spill_penalty = 3.5;
  m.env.step_reward = StepRewardKind::kDeepTm;
  m.env.scope = DecisionScope::kRelevant;
  m.exploration = {0.05, 0.8, 0.02, 5000, 77};
  m.agent = "dqn-test";
  m.agent_config_json = R"({"hidden":[64,64]})";
  return m;
}

EpisodeReportMsg MakeEpisodeReport() {
  EpisodeReportMsg m;
  m.worker_id = 3;
  m.task_id = 9;
  m.episode_id = 1ull << 40;
  m.policy_version = 17;
  m.steps = 120;
  m.step_reward_sum = -3.25;
  m.episodic_reward = 42.5;
  m.runtime_ns = 1.25e9;
  m.normalised_cost = 0.375;
  m.oom = true;
  m.epsilon = 0.125;
  m.counters.dram_peak_bytes = 100;
  m.counters.slow_peak_bytes = 200;
  m.counters.bytes_to_slow = 300;
  m.counters.bytes_to_dram = 400;
  m.counters.migrations_to_slow = 5;
  m.counters.migrations_to_dram = 6;
  m.counters.oom_events = 7;
  m.counters.measured = true;
  m.counters.runtime_spread = 0.0625;
  m.counters.repeats = 5;
  m.counters.minor_faults = 27000;
  m.counters.major_faults = 2;
  m.counters.exposed_migration_ns = 1.5e5;
  m.counters.emulated_delay_ns = 2.5e6;
  m.counters.hardware_counters = true;
  m.counters.cycles = 1ull << 40;
  m.counters.instructions = 3ull << 40;
  m.counters.llc_misses = 12345;
  m.backend = "emulated:optane-dcpmm";
  m.plan.workload_signature = 0xdeadbeefcafeull;
  m.plan.dram_limit_bytes = 4096;
  m.plan.mode = MigrationMode::kAsync;
  m.plan.initial_tiers = {Tier::kSlow, Tier::kDram};
  m.plan.migrations = {{-1, 0, Tier::kDram}, {0, 1, Tier::kSlow}};
  m.plan.produced_by = "dqn v17";
  m.greedy = true;
  return m;
}

TransitionBatchMsg MakeTransitions() {
  TransitionBatchMsg m;
  m.worker_id = 4;
  m.task_id = 5;
  m.episode_id = 6;
  m.policy_version = 7;
  m.transitions.push_back({{0.5f, -1.0f, 3.25f}, 1, -0.75f, {0.25f, 0.0f, 1.0f}, false});
  m.transitions.push_back({{1.0f, 2.0f, 3.0f}, 0, 12.5f, {}, true});
  return m;
}

DecodeResult Decode(const std::string& frame, const CodecLimits& limits = {}) {
  return DecodeMessage(frame.data(), frame.size(), limits);
}

// Encodes and decodes `m`; fails the test unless a T comes back.
template <typename T>
T RoundTrip(const T& m) {
  DecodeResult result = Decode(EncodeMessage(m));
  if (const auto* error = std::get_if<DecodeError>(&result)) {
    ADD_FAILURE() << DecodeErrorReasonName(error->reason) << ": " << error->detail;
    return T{};
  }
  const Message& message = std::get<Message>(result);
  EXPECT_TRUE(std::holds_alternative<T>(message)) << "decoded a " << MessageName(message);
  return std::holds_alternative<T>(message) ? std::get<T>(message) : T{};
}

DecodeError ExpectDecodeError(const DecodeResult& result) {
  EXPECT_TRUE(std::holds_alternative<DecodeError>(result)) << "decoded a message";
  return std::holds_alternative<DecodeError>(result) ? std::get<DecodeError>(result) : DecodeError{};
}

TEST(Protocol, RegisterRoundTrips) {
  RegisterMsg m{"node-7", 4242, "worker-a",
                {{Tier::kDram, 64ull << 30}, {Tier::kSlow, 512ull << 30}},
                "emulated:optane-dcpmm"};
  RegisterMsg back = RoundTrip(m);
  EXPECT_EQ(back.host, m.host);
  EXPECT_EQ(back.pid, m.pid);
  EXPECT_EQ(back.worker_name, m.worker_name);
  ASSERT_EQ(back.tiers.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.tiers[i].tier, m.tiers[i].tier);
    EXPECT_EQ(back.tiers[i].capacity_bytes, m.tiers[i].capacity_bytes);
  }
  EXPECT_EQ(back.slow_tier_backend, m.slow_tier_backend);
}

TEST(Protocol, RegisterAckRoundTrips) {
  RegisterAckMsg back = RoundTrip(RegisterAckMsg{11, 250, 7});
  EXPECT_EQ(back.worker_id, 11u);
  EXPECT_EQ(back.heartbeat_interval_ms, 250u);
  EXPECT_EQ(back.heartbeat_liveness, 7u);
}

TEST(Protocol, HeartbeatRoundTrips) {
  HeartbeatMsg back = RoundTrip(HeartbeatMsg{12, 1ull << 35, {}});
  EXPECT_EQ(back.worker_id, 12u);
  EXPECT_EQ(back.episodes_done, 1ull << 35);
}

TEST(Protocol, TaskRoundTrips) {
  const TaskMsg m = MakeTask();
  TaskMsg back = RoundTrip(m);
  EXPECT_EQ(back.task_id, m.task_id);
  ExpectSameWorkload(m.workload, back.workload);
  EXPECT_TRUE(back.workload.finalized());
  EXPECT_EQ(back.env.dram_limit_bytes, m.env.dram_limit_bytes);
  EXPECT_EQ(back.env.mode, m.env.mode);
  EXPECT_EQ(back.env.beta, m.env.beta);
  EXPECT_EQ(back.env.oom_handling, m.env.oom_handling);
  EXPECT_EQ(back.env.spill_penalty, m.env.spill_penalty);
  EXPECT_EQ(back.env.step_reward, m.env.step_reward);
  EXPECT_EQ(back.env.scope, DecisionScope::kRelevant);
  EXPECT_EQ(back.env.reward_fix, m.env.reward_fix);
  EXPECT_EQ(back.env.oom_penalty, m.env.oom_penalty);
  EXPECT_EQ(back.env.dram_price_per_gb, m.env.dram_price_per_gb);
  EXPECT_EQ(back.env.slow_price_per_gb, m.env.slow_price_per_gb);
  EXPECT_EQ(back.exploration.epsilon, m.exploration.epsilon);
  EXPECT_EQ(back.exploration.epsilon_start, m.exploration.epsilon_start);
  EXPECT_EQ(back.exploration.epsilon_end, m.exploration.epsilon_end);
  EXPECT_EQ(back.exploration.schedule_episodes, m.exploration.schedule_episodes);
  EXPECT_EQ(back.exploration.seed, m.exploration.seed);
  EXPECT_EQ(back.agent, m.agent);
  EXPECT_EQ(back.agent_config_json, m.agent_config_json);
}

// A peer that does not set the decision scope gets the default one; one
// that sends a scope this build does not know is refused.
TEST(Protocol, EnvSettingsWithoutADecisionScopeGetTheDefault) {
  capnp::MallocMessageBuilder message;
  schema::EnvSettings::Builder settings = message.initRoot<schema::EnvSettings>();
  settings.setDramLimitBytes(1000);
  EXPECT_EQ(EnvConfigFromCapnp(settings.asReader()).scope, EnvConfig{}.scope);
  EXPECT_EQ(EnvConfig{}.scope, DecisionScope::kAccessGaps);
  for (DecisionScope scope : {DecisionScope::kAllLive, DecisionScope::kRelevant, DecisionScope::kAccessGaps}) {
    EnvConfig c;
    c.dram_limit_bytes = 1000;
    c.scope = scope;
    EnvConfigToCapnp(c, settings);
    EXPECT_EQ(EnvConfigFromCapnp(settings.asReader()).scope, scope);
  }
  settings.setDecisionScope(static_cast<schema::DecisionScope>(7));
  EXPECT_THROW(EnvConfigFromCapnp(settings.asReader()), std::invalid_argument);
}

TEST(Protocol, WeightsRoundTripWithBinaryBlob) {
  std::string blob;
  for (int i = 0; i < 1000; ++i) blob.push_back(static_cast<char>(i * 37));
  WeightsMsg back = RoundTrip(WeightsMsg{99, "dqn", blob});
  EXPECT_EQ(back.version, 99u);
  EXPECT_EQ(back.agent, "dqn");
  EXPECT_EQ(back.blob, blob);
}

TEST(Protocol, TransitionBatchRoundTrips) {
  const TransitionBatchMsg m = MakeTransitions();
  TransitionBatchMsg back = RoundTrip(m);
  EXPECT_EQ(back.worker_id, m.worker_id);
  EXPECT_EQ(back.task_id, m.task_id);
  EXPECT_EQ(back.episode_id, m.episode_id);
  EXPECT_EQ(back.policy_version, m.policy_version);
  ASSERT_EQ(back.transitions.size(), m.transitions.size());
  for (size_t i = 0; i < m.transitions.size(); ++i) {
    EXPECT_EQ(back.transitions[i].observation, m.transitions[i].observation);
    EXPECT_EQ(back.transitions[i].action, m.transitions[i].action);
    EXPECT_EQ(back.transitions[i].reward, m.transitions[i].reward);
    EXPECT_EQ(back.transitions[i].next_observation, m.transitions[i].next_observation);
    EXPECT_EQ(back.transitions[i].done, m.transitions[i].done);
  }
}

// Long episodes travel as several batches: every transition lands in
// exactly one chunk, in order, and the chunk numbers survive the wire
// (in both the decoded message and the in-place frame reader).
TEST(Protocol, LongEpisodesSplitIntoNumberedChunks) {
  TransitionBatchMsg m = MakeTransitions();
  while (m.transitions.size() < 10) m.transitions.push_back(m.transitions[m.transitions.size() % 2]);
  m.transitions.resize(10);
  for (size_t i = 0; i < m.transitions.size(); ++i) m.transitions[i].reward = static_cast<float>(i);
  m.priorities.assign(10, 0.0f);
  for (size_t i = 0; i < 10; ++i) m.priorities[i] = static_cast<float>(i) + 0.5f;
  const std::vector<TransitionBatchMsg> chunks = SplitIntoChunks(m, 4);
  ASSERT_EQ(chunks.size(), 3u);
  size_t next = 0;
  for (uint32_t c = 0; c < chunks.size(); ++c) {
    const std::string frame = EncodeMessage(chunks[c]);
    TransitionBatchMsg back = RoundTrip(chunks[c]);
    EXPECT_EQ(back.chunk_index, c);
    EXPECT_EQ(back.chunk_count, 3u);
    EXPECT_EQ(back.episode_id, m.episode_id);
    auto f = TransitionBatchFrame::Open(frame.data(), frame.size());
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->chunk_index(), c);
    EXPECT_EQ(f->chunk_count(), 3u);
    ASSERT_EQ(back.priorities.size(), back.transitions.size());
    for (size_t i = 0; i < back.transitions.size(); ++i, ++next) {
      EXPECT_EQ(back.transitions[i].reward, static_cast<float>(next));
      EXPECT_EQ(back.priorities[i], static_cast<float>(next) + 0.5f);
    }
  }
  EXPECT_EQ(next, 10u);
  EXPECT_EQ(chunks[2].transitions.size(), 2u);
  // A short episode is one chunk, even an empty one; 0 from an old sender reads as 1.
  EXPECT_EQ(SplitIntoChunks(TransitionBatchMsg{}, 4).size(), 1u);
  TransitionBatchMsg old = MakeTransitions();
  old.chunk_count = 0;
  EXPECT_EQ(RoundTrip(old).chunk_count, 1u);
  EXPECT_THROW(SplitIntoChunks(m, 0), std::invalid_argument);
}

TEST(Protocol, EpisodeReportRoundTrips) {
  const EpisodeReportMsg m = MakeEpisodeReport();
  EpisodeReportMsg back = RoundTrip(m);
  EXPECT_EQ(back.worker_id, m.worker_id);
  EXPECT_EQ(back.task_id, m.task_id);
  EXPECT_EQ(back.episode_id, m.episode_id);
  EXPECT_EQ(back.policy_version, m.policy_version);
  EXPECT_EQ(back.steps, m.steps);
  EXPECT_EQ(back.step_reward_sum, m.step_reward_sum);
  EXPECT_EQ(back.episodic_reward, m.episodic_reward);
  EXPECT_EQ(back.runtime_ns, m.runtime_ns);
  EXPECT_EQ(back.normalised_cost, m.normalised_cost);
  EXPECT_EQ(back.oom, m.oom);
  EXPECT_EQ(back.epsilon, m.epsilon);
  EXPECT_EQ(back.counters.dram_peak_bytes, m.counters.dram_peak_bytes);
  EXPECT_EQ(back.counters.slow_peak_bytes, m.counters.slow_peak_bytes);
  EXPECT_EQ(back.counters.bytes_to_slow, m.counters.bytes_to_slow);
  EXPECT_EQ(back.counters.bytes_to_dram, m.counters.bytes_to_dram);
  EXPECT_EQ(back.counters.migrations_to_slow, m.counters.migrations_to_slow);
  EXPECT_EQ(back.counters.migrations_to_dram, m.counters.migrations_to_dram);
  EXPECT_EQ(back.counters.oom_events, m.counters.oom_events);
  EXPECT_EQ(back.counters.measured, m.counters.measured);
  EXPECT_EQ(back.counters.runtime_spread, m.counters.runtime_spread);
  EXPECT_EQ(back.counters.repeats, m.counters.repeats);
  EXPECT_EQ(back.counters.minor_faults, m.counters.minor_faults);
  EXPECT_EQ(back.counters.major_faults, m.counters.major_faults);
  EXPECT_EQ(back.counters.exposed_migration_ns, m.counters.exposed_migration_ns);
  EXPECT_EQ(back.counters.emulated_delay_ns, m.counters.emulated_delay_ns);
  EXPECT_EQ(back.counters.hardware_counters, m.counters.hardware_counters);
  EXPECT_EQ(back.counters.cycles, m.counters.cycles);
  EXPECT_EQ(back.counters.instructions, m.counters.instructions);
  EXPECT_EQ(back.counters.llc_misses, m.counters.llc_misses);
  EXPECT_EQ(back.backend, m.backend);
  EXPECT_EQ(back.plan, m.plan);
  EXPECT_EQ(back.plan.produced_by, m.plan.produced_by);
  EXPECT_EQ(back.greedy, m.greedy);
}

TEST(Protocol, ErrorRoundTrips) {
  ErrorMsg back = RoundTrip(ErrorMsg{ErrorCode::kUnknownWorker, "who are you"});
  EXPECT_EQ(back.code, ErrorCode::kUnknownWorker);
  EXPECT_EQ(back.reason, "who are you");
}

TEST(Protocol, ShutdownRoundTrips) {
  EXPECT_EQ(RoundTrip(ShutdownMsg{"training done"}).reason, "training done");
}

TEST(Protocol, MessageNamesAreDistinct) {
  const std::vector<Message> messages = {
      RegisterMsg{}, RegisterAckMsg{}, HeartbeatMsg{}, TaskMsg{}, WeightsMsg{},
      TransitionBatchMsg{}, EpisodeReportMsg{}, ErrorMsg{}, ShutdownMsg{}};
  std::set<std::string> names;
  for (const Message& m : messages) names.insert(MessageName(m));
  EXPECT_EQ(names.size(), messages.size());
}

TEST(Protocol, RejectsEmptyFrame) {
  EXPECT_EQ(ExpectDecodeError(DecodeMessage(nullptr, 0)).reason, DecodeErrorReason::kEmpty);
  EXPECT_EQ(ExpectDecodeError(Decode("")).reason, DecodeErrorReason::kEmpty);
}

TEST(Protocol, RandomGarbageIsMalformed) {
  for (uint32_t seed = 1; seed <= 64; ++seed) {
    std::mt19937 rng(seed);
    // Both whole-word and ragged sizes.
    const size_t size = std::uniform_int_distribution<size_t>(1, 4096)(rng);
    std::string frame(size, '\0');
    for (char& c : frame) c = static_cast<char>(rng());
    DecodeError error = ExpectDecodeError(Decode(frame));
    EXPECT_EQ(error.reason, DecodeErrorReason::kMalformed) << "seed " << seed << ": " << error.detail;
  }
}

TEST(Protocol, CorruptedFramesNeverCrash) {
  const std::vector<std::string> frames = {EncodeMessage(MakeTask()),
                                           EncodeMessage(MakeEpisodeReport()),
                                           EncodeMessage(MakeTransitions())};
  for (const std::string& good : frames) {
    for (uint32_t seed = 1; seed <= 300; ++seed) {
      std::mt19937 rng(seed);
      std::string frame = good;
      for (int flips = 0; flips < 3; ++flips) frame[rng() % frame.size()] = static_cast<char>(rng());
      // A flip may leave a valid message; what matters is no crash, no throw.
      Decode(frame);
    }
  }
}

TEST(Protocol, RejectsTruncatedFrameAtEveryLength) {
  const std::string frame = EncodeMessage(MakeTask());
  for (size_t length = 1; length < frame.size(); ++length) {
    DecodeError error = ExpectDecodeError(DecodeMessage(frame.data(), length));
    EXPECT_EQ(error.reason, DecodeErrorReason::kMalformed) << "length " << length;
  }
}

TEST(Protocol, RejectsTrailingBytes) {
  const std::string frame = EncodeMessage(ShutdownMsg{"bye"}) + std::string(8, '\0');
  EXPECT_EQ(ExpectDecodeError(Decode(frame)).reason, DecodeErrorReason::kMalformed);
}

TEST(Protocol, DecodesMisalignedBuffer) {
  const std::string frame = EncodeMessage(MakeTransitions());
  std::vector<char> buffer(frame.size() + 1);
  std::memcpy(buffer.data() + 1, frame.data(), frame.size());
  DecodeResult result = DecodeMessage(buffer.data() + 1, frame.size());
  ASSERT_TRUE(std::holds_alternative<Message>(result))
      << std::get<DecodeError>(result).detail;
  const auto& back = std::get<TransitionBatchMsg>(std::get<Message>(result));
  EXPECT_EQ(back.transitions.at(0).observation, MakeTransitions().transitions.at(0).observation);
}

TEST(Protocol, RejectsOversizedFrame) {
  const std::string frame = EncodeMessage(MakeTask());
  CodecLimits limits;
  limits.max_frame_bytes = frame.size() - 1;
  DecodeError error = ExpectDecodeError(Decode(frame, limits));
  EXPECT_EQ(error.reason, DecodeErrorReason::kOversized);
  EXPECT_NE(error.detail.find(std::to_string(frame.size())), std::string::npos) << error.detail;

  limits.max_frame_bytes = frame.size();
  EXPECT_TRUE(std::holds_alternative<Message>(Decode(frame, limits)));
}

TEST(Protocol, OversizedIsCheckedBeforeReadingTheFrame) {
  // A null pointer with a huge size must be refused on the size alone.
  CodecLimits limits;
  limits.max_frame_bytes = 1024;
  EXPECT_EQ(ExpectDecodeError(DecodeMessage(nullptr, 4096, limits)).reason,
            DecodeErrorReason::kOversized);
}

TEST(Protocol, TraversalLimitRejectsLargeMessage) {
  CodecLimits limits;
  limits.traversal_limit_words = 64;
  const std::string frame = EncodeMessage(WeightsMsg{1, "dqn", std::string(4096, 'x')});
  EXPECT_EQ(ExpectDecodeError(Decode(frame, limits)).reason, DecodeErrorReason::kMalformed);
  EXPECT_TRUE(std::holds_alternative<Message>(Decode(frame)));
}

TEST(Protocol, RejectsWrongProtocolVersion) {
  const std::string frame = EncodeMessageWithVersion(HeartbeatMsg{1, 2, {}}, 7);
  DecodeError error = ExpectDecodeError(Decode(frame));
  EXPECT_EQ(error.reason, DecodeErrorReason::kWrongVersion);
  EXPECT_NE(error.detail.find('7'), std::string::npos) << error.detail;
}

TEST(Protocol, RejectsTaskWithInvalidWorkload) {
  TaskMsg m = MakeTask();
  m.workload.accesses.push_back({1, 5, 1, 0, 0.0});  // there are two tensors
  DecodeError error = ExpectDecodeError(Decode(EncodeMessage(m)));
  EXPECT_EQ(error.reason, DecodeErrorReason::kMalformed);
  EXPECT_NE(error.detail.find("names tensor 5"), std::string::npos) << error.detail;
}

TEST(Protocol, DecodeErrorReasonsHaveNames) {
  EXPECT_STREQ(DecodeErrorReasonName(DecodeErrorReason::kEmpty), "empty");
  EXPECT_STREQ(DecodeErrorReasonName(DecodeErrorReason::kOversized), "oversized");
  EXPECT_STREQ(DecodeErrorReasonName(DecodeErrorReason::kMalformed), "malformed");
  EXPECT_STREQ(DecodeErrorReasonName(DecodeErrorReason::kWrongVersion), "wrong_version");
  EXPECT_STREQ(DecodeErrorReasonName(DecodeErrorReason::kAmplified), "amplified");
  EXPECT_STREQ(DecodeErrorReasonName(DecodeErrorReason::kNonFinite), "non_finite");
}

// Issue 17: a report's runtimes and rewards feed the records, the best plan
// and the measurement cache every worker rescales its rewards with.
TEST(Protocol, RefusesNonFiniteRuntimesAndRewards) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (int field = 0; field < 5; ++field) {
    EpisodeReportMsg m = MakeEpisodeReport();
    if (field == 0) m.runtime_ns = nan;
    if (field == 1) m.episodic_reward = -inf;
    if (field == 2) m.max_runtime_ns = inf;
    if (field == 3) m.normalised_cost = nan;
    if (field == 4) m.counters.exposed_migration_ns = inf;
    const std::string frame = EncodeMessage(m);
    DecodeResult r = DecodeMessage(frame.data(), frame.size());
    ASSERT_TRUE(std::holds_alternative<DecodeError>(r)) << field;
    EXPECT_EQ(std::get<DecodeError>(r).reason, DecodeErrorReason::kNonFinite) << field;
  }
  MeasurementCacheMsg cache;
  cache.entries.push_back(CachedMeasurement{1, "cost-model", nan, 1, 2, false, {}});
  const std::string frame = EncodeMessage(cache);
  DecodeResult r = DecodeMessage(frame.data(), frame.size());
  ASSERT_TRUE(std::holds_alternative<DecodeError>(r));
  EXPECT_EQ(std::get<DecodeError>(r).reason, DecodeErrorReason::kNonFinite);
}

}  // namespace
}  // namespace tensortier
