// Transitions ingested per second by one learner (learner/learner.h, in this
// process) from N worker processes on loopback. The workers are
// bench/ingest_worker: they speak the real protocol, with its flow control,
// but replay recorded transitions instead of running episodes, so that the
// learner is the bottleneck being measured.
//
// Two learner settings: "ingest" (learning_starts beyond the replay
// capacity: no gradient updates) and "train" (32 updates per episode report
// once replay holds 256 transitions: the schedule first measured here, kept
// so that rows compare across versions). The rate is taken between the first and the last episode
// report of a measurement window, so that process start-up and the final
// greedy evaluation are left out; the whole-run rate from LearnerResult is
// printed beside it.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "envs/workload_spec.h"
#include "replay/replay_buffer.h"
#include "envs/placement_env.h"
#include "learner/learner.h"
#include "protocol/codec.h"

extern char** environ;

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string mode;
  int workers = 0;
  uint64_t transitions = 0;       // in the measurement window
  double seconds = 0;             // first to last episode report
  uint64_t episodes = 0;
  uint64_t updates = 0;
  uint64_t transitions_total = 0;  // LearnerResult.counters
  double wall_seconds_total = 0;   // LearnerResult.wall_seconds
  uint32_t batch_transitions = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(transitions) / seconds : 0; }
};

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start " + args[0]);
  return pid;
}

// Waits for the workers (the learner told them to shut down); ends the
// ones still running after `grace` by their pid.
void Reap(std::vector<pid_t>& pids, std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  pids.clear();
}

Row Measure(const std::string& mode, int workers, const Workload& workload, const std::string& agent,
            const std::string& worker_path, size_t batch_transitions, uint64_t episodes) {
  LearnerConfig c;
  c.bind_endpoint = "tcp://127.0.0.1:*";
  c.workload = workload;
  c.env.dram_limit_bytes = static_cast<uint64_t>(std::llround(0.2 * workload.peak_live_bytes()));
  c.agent = ParseAgentKind(agent);
  c.dqn.device = c.sac.device = "cpu";
  // The "train" schedule first measured here (the library's defaults are
  // now 64 updates per episode from 512 transitions).
  c.dqn.updates_per_episode = c.sac.updates_per_episode = 32;
  c.dqn.learning_starts = c.sac.learning_starts = 256;
  c.sac.batch_size = 64;
  if (mode == "ingest") c.dqn.learning_starts = c.sac.learning_starts = INT_MAX;
  // The run ends on an episode count, so that every row measures a known
  // amount of work.
  c.episodes = episodes;
  c.eval_interval_episodes = 0;
  c.min_workers = static_cast<uint32_t>(workers);
  Learner learner(std::move(c));

  std::vector<pid_t> pids;
  for (int i = 0; i < workers; ++i)
    pids.push_back(Spawn({worker_path, "--connect", learner.endpoint(), "--transitions-per-batch",
                          std::to_string(batch_transitions)}));

  Row row;
  row.mode = mode;
  row.workers = workers;
  // Window: from the first episode report to the last; transitions counted
  // from the second report on (the first one's batch arrived before it).
  double first_wall = -1;
  LearnerResult result = learner.Run([&](const EpisodeRecord& rec) {
    if (first_wall < 0) {
      first_wall = rec.wall_seconds;
      row.batch_transitions = rec.steps;
      return;
    }
    row.transitions += rec.steps;
    ++row.episodes;
    row.seconds = rec.wall_seconds - first_wall;
  });
  Reap(pids, std::chrono::milliseconds(5000));
  row.updates = result.updates;
  row.transitions_total = result.counters.transitions_ingested;
  row.wall_seconds_total = result.wall_seconds;
  return row;
}

// A short pilot run sizes the measured one to about `seconds`.
Row MeasureFor(const std::string& mode, int workers, const Workload& workload, const std::string& agent,
               const std::string& worker_path, size_t batch_transitions, double seconds) {
  const uint64_t pilot_episodes = std::max<uint64_t>(40, 4 * static_cast<uint64_t>(workers));
  Row pilot = Measure(mode, workers, workload, agent, worker_path, batch_transitions, pilot_episodes);
  const double episodes_per_second = pilot.seconds > 0 ? pilot.episodes / pilot.seconds : 100;
  const uint64_t episodes =
      std::max<uint64_t>(pilot_episodes, static_cast<uint64_t>(episodes_per_second * seconds));
  return Measure(mode, workers, workload, agent, worker_path, batch_transitions, episodes);
}

// Transitions for the decode + insert microbenchmark: random-action
// episodes of the workload's environment.
std::vector<Transition> RecordTransitions(const Workload& workload, size_t count) {
  EnvConfig env_config;
  env_config.dram_limit_bytes = static_cast<uint64_t>(std::llround(0.2 * workload.peak_live_bytes()));
  PlacementEnv env(workload, env_config);
  std::mt19937_64 rng(1);
  std::vector<Transition> out;
  while (out.size() < count) {
    Observation obs = env.Reset();
    while (!env.done() && out.size() < count) {
      const int action = static_cast<int>(rng() >> 63);
      StepResult r = env.Step(action);
      out.push_back(TransitionOf(obs, action, r));
      obs = r.observation;
    }
  }
  return out;
}

// The learner's per-transition ingest work on one thread, without sockets:
// decode a TransitionBatch frame, check its rows' shape, put every row into
// a full replay ring. "message": DecodeMessage into a TransitionBatchMsg
// (two vectors per transition) and ReplayBuffer::Add, as the learner did;
// "frame": TransitionBatchFrame::Open and CopyRow into the overwritten
// replay row, as it does now. Rounds alternate between the two.
void DecodeInsertMicro(const Workload& workload, size_t batch_transitions, double seconds, int rounds) {
  if (batch_transitions == 0) batch_transitions = 256;
  TransitionBatchMsg batch;
  batch.worker_id = 1;
  batch.episode_id = 1;
  batch.transitions = RecordTransitions(workload, batch_transitions);
  const std::string frame = EncodeMessage(batch);
  const size_t capacity = 100000;
  ReplayBuffer message_replay(capacity), frame_replay(capacity);
  const size_t obs = static_cast<size_t>(kObservationSize);
  auto run_message = [&] {
    DecodeResult d = DecodeMessage(frame.data(), frame.size());
    auto& m = std::get<TransitionBatchMsg>(std::get<Message>(d));
    for (const Transition& t : m.transitions)
      if (t.observation.size() != obs || t.next_observation.size() != obs || t.action >= 2) std::abort();
    for (Transition& t : m.transitions) message_replay.Add(std::move(t));
  };
  auto run_frame = [&] {
    auto f = TransitionBatchFrame::Open(frame.data(), frame.size());
    if (!f || f->observation_floats() != obs || f->max_action() >= 2) std::abort();
    for (size_t i = 0; i < f->size(); ++i) frame_replay.AddInPlace([&](Transition& row) { f->CopyRow(i, row); });
  };
  // Fill both rings first: the steady state is a full ring.
  while (message_replay.size() < capacity) run_message();
  while (frame_replay.size() < capacity) run_frame();
  auto rate = [&](auto&& fn) {
    uint64_t n = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      fn();
      n += batch_transitions;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    return static_cast<double>(n) / elapsed;
  };
  std::printf("decode+insert, one thread, %zu transitions per frame (%zu bytes), replay of %zu\n",
              batch_transitions, frame.size(), capacity);
  std::printf("%5s %16s %16s %7s\n", "round", "message t/s", "frame t/s", "ratio");
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    double message_rate = 0, frame_rate = 0;
    if (r % 2 == 0) {
      message_rate = rate(run_message);
      frame_rate = rate(run_frame);
    } else {
      frame_rate = rate(run_frame);
      message_rate = rate(run_message);
    }
    ratios.push_back(frame_rate / message_rate);
    std::printf("%5d %16.0f %16.0f %6.2fx\n", r + 1, message_rate, frame_rate, ratios.back());
    std::fflush(stdout);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("median ratio %.2fx\n", ratios[ratios.size() / 2]);
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Transitions per second ingested by one learner from N worker processes on loopback"};
  std::string worker_path;
  std::vector<int> worker_counts = {1, 4, 16, 64};
  std::vector<std::string> modes = {"ingest", "train"};
  std::string spec = "synthetic:resnet:4";
  std::string agent = "dqn";
  size_t batch_transitions = 0;
  double seconds = 3.0;
  std::string csv;
  app.add_option("--ingest-worker", worker_path, "path of bench/ingest_worker");
  app.add_option("--workers", worker_counts, "worker process counts")->delimiter(',');
  app.add_option("--modes", modes, "ingest (no updates) and/or train (the agent's update schedule)")->delimiter(',');
  app.add_option("--workload", spec, "the task's workload");
  app.add_option("--agent", agent, "dqn or sac");
  app.add_option("--transitions-per-batch", batch_transitions,
                 "transitions per TransitionBatch (0 = one episode of the workload)");
  app.add_option("--seconds", seconds, "measurement window per row");
  app.add_option("--csv", csv, "also write the table here");
  int micro_rounds = 0;
  app.add_option("--decode-insert-rounds", micro_rounds,
                 "instead: the single-thread decode + insert microbenchmark, this many rounds");
  CLI11_PARSE(app, argc, argv);
  SetLogLevel(LogLevel::kWarn);

  Workload w = LoadWorkloadSpec(spec);
  if (!w.finalized()) w.Finalize();
  if (micro_rounds > 0) {
    DecodeInsertMicro(w, batch_transitions, seconds, micro_rounds);
    return 0;
  }
  if (worker_path.empty()) {
    std::fprintf(stderr, "--ingest-worker is required\n");
    return 2;
  }
  std::vector<Row> rows;
  std::printf("%-7s %7s %10s %12s %9s %8s %14s %9s  %s\n", "mode", "workers", "batch", "transitions", "seconds",
              "updates", "transitions/s", "episodes", "(whole run: transitions / wall s)");
  for (const auto& mode : modes)
    for (int n : worker_counts) {
      Row r = MeasureFor(mode, n, w, agent, worker_path, batch_transitions, seconds);
      std::printf("%-7s %7d %10u %12llu %9.2f %8llu %14.0f %9llu  (%llu / %.2f)\n", r.mode.c_str(), r.workers,
                  r.batch_transitions, static_cast<unsigned long long>(r.transitions), r.seconds,
                  static_cast<unsigned long long>(r.updates), r.rate(), static_cast<unsigned long long>(r.episodes),
                  static_cast<unsigned long long>(r.transitions_total), r.wall_seconds_total);
      std::fflush(stdout);
      rows.push_back(r);
    }
  if (!csv.empty()) {
    std::ofstream out(csv);
    out << "mode,workers,batch_transitions,transitions,seconds,transitions_per_second,episodes,updates,"
           "transitions_total,wall_seconds_total\n";
    for (const Row& r : rows)
      out << r.mode << ',' << r.workers << ',' << r.batch_transitions << ',' << r.transitions << ',' << r.seconds
          << ',' << r.rate() << ',' << r.episodes << ',' << r.updates << ',' << r.transitions_total << ','
          << r.wall_seconds_total << '\n';
  }
  return 0;
}
