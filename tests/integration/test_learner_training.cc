// The learner's training loop: the rate limiter paces updates against
// inserts, prioritised replay is what trains when configured, Ape-X gives
// each worker its own epsilon, and the convergence rule stops a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "agents/agent.h"
#include "envs/placement_env.h"
#include "learner/run_report.h"
#include "protocol/codec.h"
#include "tests/integration/fleet_harness.h"
#include "transport/channel.h"

namespace tensortier {
namespace {

using testing::OomReport;
using testing::ReceiveA;
using testing::RegisterByHand;

using testing::RunFleet;
using testing::TinyLearner;

// The weights of the best greedy evaluation are kept beside the latest:
// loaded back, they play exactly that evaluation again.
TEST(LearnerTraining, KeepsTheBestEvaluatedPolicy) {
  LearnerConfig c = TinyLearner(40);
  c.run_dir = ::testing::TempDir() + "/best_policy_" + std::to_string(getpid());
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 1);
  const std::string path = c.run_dir + "/checkpoints/dqn-best.ckpt";
  ASSERT_TRUE(std::filesystem::exists(path));
  std::unique_ptr<PlacementAgent> best = LoadAgentCheckpoint(path);
  PlacementEnv env(c.workload, c.env);
  const EpisodeSummary s = RunEpisode(env, [&](const Observation& o) { return best->Greedy(o.data()); });
  EXPECT_NEAR(s.step_reward_sum + s.episodic_reward, r.best_evaluation_reward, 1e-6);
  std::filesystem::remove_all(c.run_dir);
}

TEST(LearnerTraining, RateLimiterKeepsSamplesPerInsertInItsBand) {
  LearnerConfig c = TinyLearner(40);
  c.samples_per_insert = 3.0;
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 2);
  ASSERT_EQ(r.episodes, 40u);
  const RateLimiterCounters& rl = r.rate_limiter;
  const double spi = 3.0, min_size = c.dqn.learning_starts, batch = c.dqn.batch_size;
  const double error_buffer = spi + batch + 1;  // the learner's default
  // Every transition went through the limiter, every update drew one batch.
  EXPECT_EQ(rl.inserts, r.counters.transitions_ingested);
  EXPECT_EQ(rl.samples, r.updates * c.dqn.batch_size);
  EXPECT_GT(r.updates, 0u);
  // Reverb's invariant: samples stay within error_buffer of
  // (inserts - min_size_to_sample) * samples_per_insert, both ways.
  const double target = (static_cast<double>(rl.inserts) - min_size) * spi;
  EXPECT_LE(static_cast<double>(rl.samples), target + error_buffer);
  EXPECT_GE(static_cast<double>(rl.samples), target - error_buffer);
  EXPECT_DOUBLE_EQ(r.samples_per_insert, spi);
}

TEST(LearnerTraining, DerivedRateFollowsTheEpisodeLengths) {
  LearnerConfig c = TinyLearner(30);
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 1);
  ASSERT_EQ(r.episodes, 30u);
  // The ratio in force at the end is the schedule's 8 updates of batch 16
  // spread over the mean length of the last 32 episodes...
  double recent_steps = 0;
  for (const EpisodeRecord& rec : r.records) recent_steps += rec.steps;
  recent_steps /= static_cast<double>(r.records.size());
  EXPECT_NEAR(r.samples_per_insert, 8.0 * 16.0 / recent_steps, 1e-9 * r.samples_per_insert);
  // ... so the run as a whole trained about 8 updates per episode once
  // replay held learning_starts transitions, whatever the start-up guess.
  const double inserts = static_cast<double>(r.rate_limiter.inserts);
  ASSERT_GT(inserts, c.dqn.learning_starts);
  const double episodes_training = (inserts - c.dqn.learning_starts) / recent_steps;
  const double batch_slack = (8.0 * 16.0 / recent_steps + 16 + 1) / 16;  // the limiter's error buffer, in updates
  EXPECT_GT(static_cast<double>(r.updates), 8.0 * episodes_training * 0.8 - batch_slack);
  EXPECT_LT(static_cast<double>(r.updates), 8.0 * episodes_training * 1.25 + batch_slack);
  EXPECT_EQ(r.rate_limiter.inserts, r.counters.transitions_ingested);
}

TEST(LearnerTraining, NoLimiterMeansFixedUpdatesPerReport) {
  LearnerConfig c = TinyLearner(20);
  c.samples_per_insert = 0;
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 1);
  EXPECT_EQ(r.rate_limiter.inserts, 0u);
  EXPECT_EQ(r.updates % 8, 0u);  // whole rounds of updates_per_episode
  EXPECT_GT(r.updates, 0u);
}

// Every gradient step drew a prioritised batch, and the |TD errors|
// written back by the updates moved the largest priority away from the
// initial 1.0 that new transitions enter at.
void ExpectPrioritizedTraining(const LearnerConfig& c) {
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 2);
  ASSERT_EQ(r.episodes, 30u);
  EXPECT_EQ(r.replay, "prioritized");
  EXPECT_GT(r.updates, 0u);
  EXPECT_EQ(r.prioritized_updates, r.updates);
  EXPECT_NE(r.replay_max_priority, 1.0);
}

LearnerConfig PrioritizedLearner(AgentKind agent) {
  LearnerConfig c = TinyLearner(30);
  c.agent = agent;
  c.replay = ReplayKind::kPrioritized;
  c.samples_per_insert = 2.0;
  return c;
}

TEST(LearnerTraining, PrioritizedReplayTrainsSac) {
  LearnerConfig c = PrioritizedLearner(AgentKind::kSac);
  // Unscaled rewards (the default 0.05 keeps every |TD error| of these short
  // episodes below the initial priority 1, which then stays the largest).
  c.sac.reward_scale = 1.0;
  ExpectPrioritizedTraining(c);
}

TEST(LearnerTraining, PrioritizedReplayTrainsDqn) { ExpectPrioritizedTraining(PrioritizedLearner(AgentKind::kDqn)); }

// Agent, replay and exploration are enums; their names parse back, and an
// unknown name is refused with the valid ones listed.
TEST(LearnerTraining, UnknownSettingNamesAreRefusedWithTheChoices) {
  for (AgentKind k : {AgentKind::kDqn, AgentKind::kSac}) EXPECT_EQ(ParseAgentKind(AgentKindName(k)), k);
  for (ReplayKind k : {ReplayKind::kUniform, ReplayKind::kPrioritized})
    EXPECT_EQ(ParseReplayKind(ReplayKindName(k)), k);
  for (ExplorationKind k : {ExplorationKind::kSchedule, ExplorationKind::kApex})
    EXPECT_EQ(ParseExplorationKind(ExplorationKindName(k)), k);
  const auto refusal = [](auto parse, const std::string& name) -> std::string {
    try {
      parse(name);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refusal(ParseReplayKind, "sorted"), "replay must be uniform or prioritized, not 'sorted'");
  EXPECT_EQ(refusal(ParseAgentKind, "ppo"), "agent must be dqn or sac, not 'ppo'");
  EXPECT_EQ(refusal(ParseExplorationKind, "Apex"), "exploration must be schedule or apex, not 'Apex'");
}

TEST(LearnerTraining, WorkerPrioritiesAreCheckedAndAcknowledged) {
  LearnerConfig c = TinyLearner(1);
  c.agent = AgentKind::kSac;
  c.replay = ReplayKind::kPrioritized;
  Learner learner(c);
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });
  FleetClient client(learner.endpoint());
  const uint32_t id = RegisterByHand(client, "prio", /*incarnation=*/42);
  ASSERT_NE(id, 0u);
  Transition t{std::vector<float>(kObservationSize, 0.5f), 1, 1.0f, std::vector<float>(kObservationSize, 0.f), true};
  TransitionBatchMsg bad;
  bad.worker_id = id;
  bad.episode_id = 1;
  bad.transitions = {t, t};
  bad.priorities = {0.5f};  // one short
  client.Send(EncodeMessage(bad));
  ASSERT_TRUE(ReceiveA<ErrorMsg>(client, std::chrono::seconds(5)).has_value());
  TransitionBatchMsg good = bad;
  good.priorities = {0.5f, 3.0f};
  client.Send(EncodeMessage(good));
  client.Send(OomReport(id, 1));
  // Both halves in: the episode is acknowledged by id.
  std::optional<HeartbeatMsg> hb;
  while ((hb = ReceiveA<HeartbeatMsg>(client, std::chrono::seconds(5))) && hb->acked_episodes.empty()) {
  }
  ASSERT_TRUE(hb.has_value());
  EXPECT_EQ(hb->acked_episodes, std::vector<uint64_t>{1});
  serve.join();
  EXPECT_EQ(result.counters.transitions_ingested, 2u);
  EXPECT_EQ(result.counters.malformed_frames, 1u);
  // No gradient step yet (learning_starts): the worker's priority stands.
  EXPECT_EQ(result.updates, 0u);
  EXPECT_DOUBLE_EQ(result.replay_max_priority, 3.0);
}

TEST(LearnerTraining, ApexGivesEachWorkerItsOwnEpsilon) {
  EXPECT_DOUBLE_EQ(ApexEpsilon(0.4, 7, 0, 1), 0.4);
  EXPECT_DOUBLE_EQ(ApexEpsilon(0.4, 7, 0, 4), 0.4);
  EXPECT_DOUBLE_EQ(ApexEpsilon(0.4, 7, 3, 4), std::pow(0.4, 8.0));
  EXPECT_DOUBLE_EQ(ApexEpsilon(0.4, 7, 1, 3), std::pow(0.4, 4.5));

  LearnerConfig c = TinyLearner(90);
  c.exploration = ExplorationKind::kApex;
  c.min_workers = 3;
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 3);
  ASSERT_EQ(r.episodes, 90u);  // enough that a worker starved by a loaded host still reports
  std::map<uint32_t, std::set<double>> epsilons;
  for (const EpisodeRecord& rec : r.records) epsilons[rec.worker_id].insert(rec.epsilon);
  ASSERT_EQ(epsilons.size(), 3u);
  std::set<double> all;
  for (const auto& [worker, eps] : epsilons) {
    EXPECT_EQ(eps.size(), 1u) << "worker " << worker << " changed its epsilon";
    all.insert(*eps.begin());
  }
  EXPECT_EQ(all, (std::set<double>{0.4, std::pow(0.4, 4.5), std::pow(0.4, 8.0)}));
}

TEST(LearnerTraining, ConvergenceRuleStopsTheRun) {
  LearnerConfig c = TinyLearner(3000);
  c.converge_window = 3;
  c.converge_tolerance = 1e6;  // any plateau: the rule must fire as soon as it can
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 2);
  ASSERT_TRUE(r.converged);
  EXPECT_LT(r.episodes, 3000u);
  EXPECT_EQ(r.converged_at_episode, r.episodes);
  EXPECT_GT(r.converged_at_seconds, 0.0);
  // The window needs W evaluations after training began plus one before them.
  EXPECT_GE(r.evaluation_rewards.size(), 4u);
}

TEST(LearnerTraining, ConvergenceNeedsAPlateau) {
  LearnerConfig c = TinyLearner(60);
  c.converge_window = 50;  // more evaluations than the run has
  c.converge_tolerance = 1e6;
  Learner learner(c);
  LearnerResult r = RunFleet(learner, 1);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.episodes, 60u);
}

}  // namespace
}  // namespace tensortier

namespace tensortier {
namespace {

// Stands for real iterations: every Measure() "executes" the plan (counted)
// and reports a measured runtime from the cost model.
class CountingEvaluator : public PlanEvaluator {
 public:
  explicit CountingEvaluator(std::atomic<uint64_t>* executions) : executions_(executions) {}
  std::string backend() const override { return "fake-tier"; }
  PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) override {
    ++*executions_;
    PlanMeasurement m = cost_model_.Measure(w, plan);
    m.backend = backend();
    m.counters.measured = true;
    m.min_runtime_ns = 1;
    m.max_runtime_ns = 2 * m.runtime_ns + 1;
    return m;
  }
  bool NextMeasureIsReal() const override { return true; }

 private:
  std::atomic<uint64_t>* executions_;
  CostModelEvaluator cost_model_;
};

TEST(LearnerTraining, MeasurementCacheKeepsWorkersFromRepeatingAPlan) {
  LearnerConfig c = TinyLearner(80);
  c.workload.model.name = "fake-model";  // a "real" workload: workers use their real evaluator
  c.workload.Finalize();
  // Every episode plays the same plan: greedy from the start, and no
  // training changes the network. (With a policy that trains, whether plans
  // repeat depended on when weights reached the workers: on a loaded
  // machine no plan repeated in some runs.)
  c.dqn.epsilon_start = c.dqn.epsilon_end = 0.0;
  c.samples_per_insert = 0;
  c.dqn.updates_per_episode = 0;
  Learner learner(c);
  std::atomic<uint64_t> executions{0};
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  std::vector<WorkerStats> stats(2);
  for (int i = 0; i < 2; ++i) {
    WorkerConfig wc;
    wc.learner_endpoint = learner.endpoint();
    wc.give_up_seconds = 60;
    wc.make_real_evaluator = [&] { return std::make_unique<CountingEvaluator>(&executions); };
    workers.push_back(std::make_unique<Worker>(wc, std::make_unique<CostModelEvaluator>()));
  }
  for (int i = 0; i < 2; ++i) threads.emplace_back([&, i] { stats[i] = workers[i]->Run(); });
  serve.join();
  for (auto& t : threads) t.join();
  const LearnerCounters& k = result.counters;
  ASSERT_EQ(result.episodes, 80u);
  // Every episode was measured once: from the cache, or executed (new to
  // the cache, or redundant when the entry was still on its way).
  EXPECT_EQ(k.measurement_cache_hits + k.measurement_cache_misses + k.measurement_cache_redundant, 80u);
  // One plan, one cache entry. The learner broadcasts it when it books the
  // first report, before any acknowledgement; a worker runs at most two
  // episodes before its first acknowledgement, so each executes the plan at
  // most twice, and takes it from the cache ever after.
  EXPECT_EQ(k.measurement_cache_misses, 1u);
  EXPECT_GE(k.measurement_cache_hits, 76u);
  // Workers may run up to two unacknowledged episodes each past the
  // learner's last report (it stops at 80): those the learner never counts.
  const uint64_t cached_by_workers = stats[0].measurements_cached + stats[1].measurements_cached;
  EXPECT_GE(cached_by_workers, k.measurement_cache_hits);
  EXPECT_LE(cached_by_workers, k.measurement_cache_hits + 4);
  EXPECT_GE(executions.load(), k.measurement_cache_misses + k.measurement_cache_redundant);
  EXPECT_LE(executions.load(), k.measurement_cache_misses + k.measurement_cache_redundant + 4);
  EXPECT_LE(executions.load(), 4u);
  // The result carries the cache, so that the run's table can show the
  // final plan as measured: here the greedy plan is the one plan the
  // episodes ran.
  ASSERT_EQ(result.measurements.size(), 1u);
  EXPECT_EQ(result.measurements[0].backend, "fake-tier");
  const FinalPlanMeasurement final_plan = FinalPlanMeasuredInTraining(result, result.greedy_plan);
  EXPECT_TRUE(final_plan.measured) << final_plan.not_measured_reason;
  EXPECT_EQ(final_plan.all_dram_ns, 1);  // CountingEvaluator's references
}

}  // namespace
}  // namespace tensortier

namespace tensortier {
namespace {

// Reports advance the weights version (the workers' epsilon schedule runs
// on it) whether or not a frame goes out for each; the interval only
// decides how often workers get new weights.
TEST(LearnerTraining, WeightsVersionCountsReportsWhateverThePublishInterval) {
  LearnerConfig c = testing::TinyLearner(20);
  c.weights_publish_interval_ms = 3600 * 1000;  // nothing after the first weights
  Learner learner(c);
  std::vector<WorkerStats> stats;
  LearnerResult r = testing::RunFleet(learner, 2, &stats);
  ASSERT_EQ(r.episodes, 20u);
  EXPECT_EQ(r.weights_version, 21u);  // the initial weights, then one per report
  // One weights frame each, the first; a worker that registered after the
  // 20 short episodes were over (a loaded machine) loaded none and ran none.
  uint64_t episodes = 0;
  for (const WorkerStats& s : stats) {
    EXPECT_LE(s.weights_loaded, 1u);
    if (s.episodes > 0) {
      EXPECT_EQ(s.weights_loaded, 1u);
    }
    episodes += s.episodes;
  }
  EXPECT_GE(episodes, 20u);
}

// Stop() and max_seconds end a learner that workers keep busy.
TEST(LearnerTraining, StopAndTimeLimitEndALearnerUnderLoad) {
  {
    LearnerConfig c = testing::TinyLearner(1000000);
    Learner learner(c);
    LearnerResult r;
    std::thread serve([&] { r = learner.Run(); });
    testing::WorkerThreads fleet(learner.endpoint(), 4);
    while (learner.status().episodes < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    learner.Stop();
    serve.join();
    fleet.StopAndJoin();
    EXPECT_GE(r.episodes, 20u);
    EXPECT_LT(r.episodes, 1000000u);
  }
  {
    LearnerConfig c = testing::TinyLearner(1000000);
    c.max_seconds = 1.0;
    Learner learner(c);
    LearnerResult r = testing::RunFleet(learner, 4);
    EXPECT_GT(r.episodes, 0u);
    EXPECT_LT(r.episodes, 1000000u);
  }
}

}  // namespace
}  // namespace tensortier

namespace tensortier {
namespace {

// Stands for real iterations that take a while: the worker heartbeats
// through them (Worker::Busy), and its reports come no faster than this.
class SlowEvaluator : public CostModelEvaluator {
 public:
  explicit SlowEvaluator(std::chrono::milliseconds delay) : delay_(delay) {}
  PlanMeasurement Measure(const Workload& w, const PlacementPlan& plan) override {
    std::this_thread::sleep_for(delay_);
    return CostModelEvaluator::Measure(w, plan);
  }

 private:
  std::chrono::milliseconds delay_;
};

// Periodic greedy evaluations run beside the network thread. Each one here
// takes 400 ms (an injected delay in its span, longer than the heartbeat
// window of a blocked network thread, whatever the machine's speed); with
// an evaluation after every report, the learner still heartbeats and reads
// frames meanwhile (the worker never takes it for dead and re-registers,
// the learner expires nobody), and every evaluation asked for is booked by
// the end. (With the evaluation on the network thread, the worker
// re-registered after every report.)
TEST(LearnerTraining, EvaluationsDoNotHoldUpTheNetworkThread) {
  const auto evaluation = std::chrono::milliseconds(400);
  LearnerConfig c = testing::TinyLearner(5);
  c.workload.model.name = "slow-model";  // "real": the worker takes make_real_evaluator's
  c.workload.Finalize();
  c.eval_interval_episodes = 1;
  c.before_periodic_evaluation = [&] { std::this_thread::sleep_for(evaluation); };
  // Heartbeats eight times an evaluation; the fleet gives up only after 3 s
  // of silence, so that a load spike on a shared machine expires nobody.
  // What shows that evaluations run off the network thread is below:
  // heartbeats keep coming *while* each evaluation runs (on the learner's
  // own clock), which an evaluation on the network thread makes impossible
  // however loaded the machine is. The worker plays at random and its
  // "measurements" take as long as an evaluation, so that reports do not
  // outrun evaluations by much.
  c.heartbeat_interval_ms = 50;
  c.heartbeat_liveness = 60;
  c.dqn.epsilon_start = c.dqn.epsilon_end = 1.0;
  Learner learner(c);
  LearnerResult r;
  std::thread serve([&] { r = learner.Run(); });
  // A second fleet member that only heartbeats, and notes when the
  // learner's heartbeats to it arrive.
  std::atomic<bool> serving{true};
  std::vector<std::chrono::steady_clock::time_point> heard;
  std::thread observer([&] {
    FleetClient client(learner.endpoint());
    RegisterMsg reg{"h", 2, "observer", {}, "cost-model"};
    reg.incarnation = 7;
    client.Send(EncodeMessage(reg));
    uint32_t id = 0;
    auto last_sent = std::chrono::steady_clock::now();
    while (serving.load()) {
      auto in = client.Receive(std::chrono::milliseconds(5));
      const auto now = std::chrono::steady_clock::now();
      if (in) {
        DecodeResult d = DecodeMessage(in->frame.data(), in->frame.size());
        if (auto* m = std::get_if<Message>(&d)) {
          if (auto* ack = std::get_if<RegisterAckMsg>(m)) {
            id = ack->worker_id;
            heard.push_back(now);
          } else if (std::holds_alternative<HeartbeatMsg>(*m) && id != 0) {
            heard.push_back(now);
          } else if (std::holds_alternative<ShutdownMsg>(*m)) {
            break;
          }
        }
      }
      if (id != 0 && now - last_sent > std::chrono::milliseconds(c.heartbeat_interval_ms)) {
        client.Send(EncodeMessage(HeartbeatMsg{id, 0, {}}));
        last_sent = now;
      }
    }
  });
  WorkerConfig wc;
  wc.learner_endpoint = learner.endpoint();
  wc.give_up_seconds = 60;
  wc.reconnect_initial_ms = 50;
  wc.make_real_evaluator = [&] { return std::make_unique<SlowEvaluator>(evaluation); };
  Worker worker(wc, std::make_unique<CostModelEvaluator>());
  WorkerStats stats;
  std::thread work([&] { stats = worker.Run(); });
  serve.join();
  serving.store(false);
  observer.join();
  worker.Stop();
  work.join();
  ASSERT_EQ(r.episodes, 5u);
  // One request per report, and the final evaluation: each request is
  // evaluated or replaced by a newer one while it waited. The first and the
  // last periodic ones are never replaced.
  EXPECT_EQ(r.evaluations_failed, 0u);
  EXPECT_EQ(r.evaluations + r.evaluations_skipped, r.episodes + 1);
  EXPECT_GE(r.evaluations, 3u);
  EXPECT_EQ(r.evaluation_rewards.size(), r.evaluations);
  ASSERT_EQ(r.evaluation_spans.size(), r.evaluations - 1);  // the final one runs on the network thread
  // During every evaluation (eight heartbeat intervals at least; at most one
  // heartbeat sent before it started can arrive inside it), the network
  // thread kept heartbeating.
  for (const LearnerResult::EvaluationSpan& span : r.evaluation_spans) {
    ASSERT_GE(span.finished - span.started, evaluation);
    const auto during = std::count_if(heard.begin(), heard.end(),
                                      [&](auto t) { return t > span.started && t < span.finished; });
    EXPECT_GE(during, 2) << "an evaluation of "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(span.finished - span.started).count()
                         << " ms, heartbeat interval " << c.heartbeat_interval_ms << " ms";
  }
  // Nobody was taken for dead on either side.
  EXPECT_GE(heard.size(), 4u);
  EXPECT_EQ(r.counters.workers_expired, 0u);
  EXPECT_EQ(stats.reconnects, 0u);
  EXPECT_EQ(stats.registrations, 1u);
  EXPECT_EQ(r.counters.workers_registered, 2u);  // the worker and the observer
}

}  // namespace
}  // namespace tensortier
