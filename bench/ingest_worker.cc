// A lightweight worker for bench_ingest: registers with a learner like
// worker/worker.cc (Register -> RegisterAck, Task, PolicyWeights), then
// replays recorded transitions as fast as the protocol lets it: one
// TransitionBatch and one EpisodeReport per episode, at most two episodes
// ahead of the learner's acknowledgement (Heartbeat.episodes_done), with
// heartbeats while idle, until the learner sends Shutdown.
//
// The transitions are recorded once from the task's own environment under
// random actions, and both frames are encoded once: per episode only the
// episode id is patched into them, so that the benchmark measures the
// learner's ingest and not the workers' encoding on a shared machine.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "common/log.h"
#include "envs/placement_env.h"
#include "protocol/codec.h"
#include "transport/channel.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

// A frame whose episode id can be rewritten in place: the offset of the
// 8 bytes that differ between two encodings with different ids.
class PatchableFrame {
 public:
  template <typename Msg>
  PatchableFrame(Msg msg, uint64_t Msg::*episode_field) {
    constexpr uint64_t kProbeA = 0x1122334455667788ull, kProbeB = 0x8877665544332211ull;
    msg.*episode_field = kProbeA;
    frame_ = EncodeMessage(msg);
    msg.*episode_field = kProbeB;
    std::string other = EncodeMessage(msg);
    size_t first = std::string::npos, last = 0;
    for (size_t i = 0; i < frame_.size() && i < other.size(); ++i)
      if (frame_[i] != other[i]) {
        if (first == std::string::npos) first = i;
        last = i;
      }
    uint64_t found = 0;
    if (other.size() == frame_.size() && first != std::string::npos && last - first < 8 &&
        first + 8 <= frame_.size()) {
      // The differing bytes sit inside the little-endian field; align to it.
      for (size_t start = last >= 7 ? last - 7 : 0; start <= first; ++start) {
        std::memcpy(&found, frame_.data() + start, 8);
        if (found == kProbeA) {
          offset_ = start;
          return;
        }
      }
    }
    throw std::runtime_error("ingest_worker: cannot locate the episode id in an encoded frame");
  }

  const std::string& With(uint64_t episode_id) {
    std::memcpy(&frame_[offset_], &episode_id, 8);
    return frame_;
  }

 private:
  std::string frame_;
  size_t offset_ = 0;
};

// Random-action episodes of the task's environment until `count`
// transitions are recorded; also returns the plan of the last episode (the
// report carries a valid plan, which the learner scores).
std::vector<Transition> Record(const TaskMsg& task, size_t count, uint64_t seed, PlacementPlan* plan,
                               uint32_t* steps_per_episode) {
  PlacementEnv env(task.workload, task.env);
  std::mt19937_64 rng(seed);
  std::vector<Transition> out;
  out.reserve(count);
  while (out.size() < count) {
    Observation obs = env.Reset();
    uint32_t steps = 0;
    while (!env.done() && out.size() < count) {
      const int action = static_cast<int>(rng() >> 63);
      StepResult r = env.Step(action);
      out.push_back(TransitionOf(obs, action, r));
      obs = r.observation;
      ++steps;
    }
    if (env.done()) {
      *plan = env.summary().plan;
      *steps_per_episode = steps;
    }
  }
  return out;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Lightweight worker for bench_ingest: replays recorded transitions to a learner"};
  std::string endpoint;
  size_t transitions_per_batch = 0;
  uint64_t max_episodes = 0;
  app.add_option("--connect", endpoint, "learner endpoint")->required();
  app.add_option("--transitions-per-batch", transitions_per_batch,
                 "transitions per TransitionBatch (0 = one recorded episode's worth)");
  app.add_option("--max-episodes", max_episodes, "stop after this many episodes (0 = until Shutdown)");
  CLI11_PARSE(app, argc, argv);
  SetLogLevel(LogLevel::kWarn);

  FleetClient client(endpoint);
  RegisterMsg reg;
  reg.host = "localhost";
  reg.pid = static_cast<uint32_t>(::getpid());
  reg.worker_name = "ingest-worker-" + std::to_string(::getpid());
  reg.slow_tier_backend = "cost-model";
  client.Send(EncodeMessage(reg));

  uint32_t worker_id = 0;
  uint32_t heartbeat_interval_ms = 1000;
  std::optional<PatchableFrame> batch_frame, report_frame;
  bool have_weights = false;
  uint64_t sent = 0, acked = 0;
  auto last_sent = Clock::now();
  constexpr uint64_t kMaxUnacked = 2;  // worker/worker.cc's flow control

  for (;;) {
    const bool may_send = worker_id != 0 && batch_frame && have_weights && sent < acked + kMaxUnacked &&
                          (max_episodes == 0 || sent < max_episodes);
    auto wait = std::chrono::milliseconds(may_send ? 0 : 20);
    bool shutdown = false;
    while (auto in = client.Receive(wait)) {
      wait = std::chrono::milliseconds(0);
      // Policy weights are the only large frames after the task; this worker
      // does not act, so it skips decoding them (a real worker keeps only the
      // newest anyway).
      if (batch_frame && in->frame.size() > 16384) {
        have_weights = true;
        continue;
      }
      DecodeResult decoded = DecodeMessage(in->frame.data(), in->frame.size());
      auto* msg = std::get_if<Message>(&decoded);
      if (!msg) continue;
      if (auto* hb = std::get_if<HeartbeatMsg>(msg)) {
        acked = std::max(acked, hb->episodes_done);
      } else if (auto* ack = std::get_if<RegisterAckMsg>(msg)) {
        worker_id = ack->worker_id;
        heartbeat_interval_ms = std::max<uint32_t>(ack->heartbeat_interval_ms, 10);
      } else if (auto* task = std::get_if<TaskMsg>(msg)) {
        if (!task->workload.finalized()) task->workload.Finalize();
        PlacementPlan plan;
        uint32_t episode_steps = 0;
        size_t count = transitions_per_batch;
        if (count == 0) {
          PlacementEnv probe(task->workload, task->env);
          std::mt19937_64 rng(worker_id);
          RunEpisode(probe, [&](const Observation&) { return static_cast<int>(rng() >> 63); });
          count = std::max<size_t>(1, probe.summary().steps);
        }
        TransitionBatchMsg batch;
        batch.worker_id = worker_id;
        batch.task_id = task->task_id;
        batch.policy_version = 1;
        batch.transitions = Record(*task, count, worker_id, &plan, &episode_steps);
        EpisodeReportMsg report;
        report.worker_id = worker_id;
        report.task_id = task->task_id;
        report.policy_version = 1;
        report.steps = static_cast<uint32_t>(batch.transitions.size());
        report.backend = "cost-model";
        report.plan = plan;
        batch_frame.emplace(std::move(batch), &TransitionBatchMsg::episode_id);
        report_frame.emplace(std::move(report), &EpisodeReportMsg::episode_id);
      } else if (std::holds_alternative<WeightsMsg>(*msg)) {
        have_weights = true;
      } else if (std::holds_alternative<ShutdownMsg>(*msg)) {
        shutdown = true;
      }
    }
    if (shutdown) break;
    if (worker_id != 0 && batch_frame && have_weights && sent < acked + kMaxUnacked &&
        (max_episodes == 0 || sent < max_episodes)) {
      ++sent;
      client.Send(batch_frame->With(sent));
      client.Send(report_frame->With(sent));
      last_sent = Clock::now();
    } else if (worker_id != 0 && Clock::now() - last_sent > std::chrono::milliseconds(heartbeat_interval_ms)) {
      client.Send(EncodeMessage(HeartbeatMsg{worker_id, sent, {}}));
      last_sent = Clock::now();
    }
  }
  return 0;
}
