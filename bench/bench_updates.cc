// Gradient updates per second of the DQN and discrete SAC agents (on the CPU
// unless --device says otherwise), for one agent and batch size per invocation, so that a driver
// (bench/python/compare_updates.py) can interleave it with the PyTorch
// version of the same update and report ratios measured side by side.
// Prints one JSON line.
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "agents/dqn_agent.h"
#include "replay/replay_buffer.h"
#include "agents/sac_agent.h"
#include "envs/placement_env.h"

namespace tensortier {
namespace {

using Clock = std::chrono::steady_clock;

// Random transitions of the placement MDP's shape: the update's cost does
// not depend on what the observations hold.
ReplayBuffer RandomReplay(size_t n, uint64_t seed) {
  ReplayBuffer replay(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    Transition t;
    t.observation.resize(kObservationSize);
    t.next_observation.resize(kObservationSize);
    for (float& x : t.observation) x = u(rng);
    for (float& x : t.next_observation) x = u(rng);
    t.action = static_cast<uint8_t>(rng() & 1);
    t.reward = u(rng) - 0.5f;
    t.done = (rng() % 50) == 0;
    replay.Add(std::move(t));
  }
  return replay;
}

template <typename Agent>
double UpdatesPerSecond(Agent& agent, ReplayBuffer& replay, double seconds, int warmup_updates,
                        uint64_t* updates_done) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < warmup_updates; ++i) agent.Update(replay, rng);
  uint64_t n = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  // Checking the clock every 16 updates keeps it out of the measurement.
  do {
    for (int i = 0; i < 16; ++i) agent.Update(replay, rng);
    n += 16;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  *updates_done = n;
  return static_cast<double>(n) / elapsed;
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Gradient updates per second of one agent at one batch size (CPU unless --device)"};
  std::string agent_name = "sac";
  std::string device = "cpu";
  int batch = 32;
  double seconds = 2.0;
  int threads = 0;
  int warmup_updates = 50;
  app.add_option("--agent", agent_name, "dqn or sac")->check(CLI::IsMember({"dqn", "sac"}));
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "measurement time");
  app.add_option("--threads", threads, "intra-op threads (0 = LibTorch's default)");
  app.add_option("--warmup-updates", warmup_updates, "updates before timing");
  // Each update reads its loss back to the host (TrainStats), so on CUDA the
  // clock includes the device's work, not only its launches.
  app.add_option("--device", device, "where the agent trains: cpu, cuda, cuda:N or auto");
  CLI11_PARSE(app, argc, argv);

  if (threads > 0) at::set_num_threads(threads);
  ReplayBuffer replay = RandomReplay(10000, 1);
  uint64_t updates = 0;
  double rate = 0;
  std::string device_used;
  if (agent_name == "dqn") {
    // The settings of bench/python/bench_updates.py (the library's defaults
    // before they became the tuned ones), so that both sides do the same work.
    DqnConfig c;
    c.batch_size = batch;
    c.device = device;
    c.learning_rate = 1e-4;
    c.target_update_interval = 100;
    DqnAgent agent(c);
    device_used = agent.device_name();
    rate = UpdatesPerSecond(agent, replay, seconds, warmup_updates, &updates);
  } else {
    SacConfig c;
    c.batch_size = batch;
    c.device = device;
    c.alpha_learning_rate = 3e-4;
    c.tau = 0.005;
    c.target_entropy_scale = 0.89;
    c.reward_scale = 1.0;
    SacAgent agent(c);
    device_used = agent.device_name();
    rate = UpdatesPerSecond(agent, replay, seconds, warmup_updates, &updates);
  }
  std::printf("{\"impl\": \"cpp\", \"agent\": \"%s\", \"device\": \"%s\", \"batch\": %d, \"threads\": %d, "
              "\"updates\": %llu, \"updates_per_second\": %.1f}\n",
              agent_name.c_str(), device_used.c_str(), batch, at::get_num_threads(),
              static_cast<unsigned long long>(updates), rate);
  return 0;
}
