// Environment steps per second of the placement MDP (envs/placement_env):
// reset + step loops with random actions. Also writes a workload and its
// env settings as JSON for bench/python/placement_env.py, and rolls out a
// fixed action sequence so that the two implementations can be checked for
// the same MDP before they are timed against each other
// (bench/python/compare_env.py drives all three).
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "common/hash.h"
#include "envs/placement_env.h"
#include "envs/workload_spec.h"

namespace tensortier {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Every number the MDP reads, in the order of the C++ structs; doubles are
// written with round-trip precision by nlohmann::json.
Json ToJson(const Workload& w, const EnvConfig& c) {
  Json kernels = Json::array(), tensors = Json::array(), accesses = Json::array();
  for (const Kernel& k : w.kernels) kernels.push_back({{"name", k.name}, {"dram_time_ns", k.dram_time_ns}});
  for (const Tensor& t : w.tensors)
    tensors.push_back({{"name", t.name},
                       {"size_bytes", t.size_bytes},
                       {"alloc_kernel", t.alloc_kernel},
                       {"free_kernel", t.free_kernel},
                       {"persistent", t.persistent}});
  for (const Access& a : w.accesses)
    accesses.push_back({{"kernel", a.kernel},
                        {"tensor", a.tensor},
                        {"reads", a.reads},
                        {"writes", a.writes},
                        {"slow_penalty_ns", a.slow_penalty_ns}});
  return {{"workload",
           {{"name", w.name},
            {"kernels", kernels},
            {"tensors", tensors},
            {"accesses", accesses},
            {"device",
             {{"dram_to_slow_bytes_per_second", w.device.dram_to_slow_bytes_per_second},
              {"slow_to_dram_bytes_per_second", w.device.slow_to_dram_bytes_per_second},
              {"slow_capacity_bytes", w.device.slow_capacity_bytes}}}}},
          {"env",
           {{"dram_limit_bytes", c.dram_limit_bytes},
            {"scope", c.scope == DecisionScope::kAllLive ? "all_live" : "relevant"},
            {"step_reward", c.step_reward == StepRewardKind::kDeepTm ? "deeptm" : "time_saved"},
            {"oom_handling", c.oom_handling == OomHandling::kTerminate ? "terminate" : "spill_to_slow"},
            {"spill_penalty", c.spill_penalty},
            {"mode", c.mode == MigrationMode::kAsync ? "async" : "sync"},
            {"beta", c.beta},
            {"reward_fix", c.reward_fix},
            {"oom_penalty", c.oom_penalty}}}};
}

// The fixed action sequence both implementations replay: the top bit of a
// 64-bit LCG (Knuth's MMIX constants), easy to reproduce in Python.
struct ActionSequence {
  uint64_t state = 12345;
  int Next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>(state >> 63);
  }
};

// Every number of the episode's score, bit for bit.
uint64_t CostHash(const EpisodeSummary& s) {
  const CostReport& c = s.cost;
  Fnv1a h;
  h.Value(c.total_ns).Value(c.exec_ns).Value(c.migration_ns).Value(c.raw_migration_ns).Value(c.dram_peak_bytes)
      .Value(c.slow_peak_bytes).Value(c.bytes_to_slow).Value(c.bytes_to_dram).Value(c.migrations_to_slow)
      .Value(c.migrations_to_dram).Value(c.oom).Value(c.oom_kernel).Value(c.oom_excess_bytes);
  for (double ns : c.kernel_ns) h.Value(ns);
  h.Value(s.step_reward_sum).Value(s.episodic_reward).Value(s.normalised_cost).Value(s.price_score);
  h.String(s.plan.produced_by);
  return h.digest();
}

}  // namespace
}  // namespace tensortier

int main(int argc, char** argv) {
  using namespace tensortier;
  CLI::App app{"Placement-env steps per second; JSON dump and fixed-sequence check for the Python twin"};
  std::string spec = "synthetic:resnet:4";
  double dram_fraction = 0.2;
  double slow_fraction = 0;
  std::string mode = "sync";
  double seconds = 2.0;
  std::string dump_json;
  int check_episodes = 0;
  std::string scope = "relevant", step_reward = "time_saved", oom_handling = "spill_to_slow";
  app.add_option("--workload", spec, "workload file or synthetic:SHAPE[:LAYERS[:BASE_BYTES]]");
  app.add_option("--dram-fraction", dram_fraction, "DRAM limit as a fraction of peak live bytes");
  app.add_option("--slow-capacity-fraction", slow_fraction,
                 "slow-tier capacity as a fraction of peak live bytes (0: unbounded)");
  app.add_option("--mode", mode, "sync or async migrations")->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--scope", scope, "which live tensors get a decision")
      ->check(CLI::IsMember({"relevant", "all_live", "access_gaps"}));
  app.add_option("--step-reward", step_reward, "step reward")->check(CLI::IsMember({"time_saved", "deeptm"}));
  app.add_option("--oom-handling", oom_handling, "DRAM choice that does not fit")
      ->check(CLI::IsMember({"spill_to_slow", "terminate"}));
  app.add_option("--seconds", seconds, "time the random-action loop this long");
  app.add_option("--dump-json", dump_json, "write the workload and env settings as JSON and exit");
  app.add_option("--check-episodes", check_episodes,
                 "print this many episodes of the fixed action sequence (JSON lines) and exit");
  CLI11_PARSE(app, argc, argv);

  Workload w = LoadWorkloadSpec(spec);
  if (!w.finalized()) w.Finalize();
  if (slow_fraction > 0)
    w.device.slow_capacity_bytes = static_cast<uint64_t>(std::llround(slow_fraction * w.peak_live_bytes()));
  EnvConfig config;
  config.dram_limit_bytes = static_cast<uint64_t>(std::llround(dram_fraction * w.peak_live_bytes()));
  config.mode = mode == "async" ? MigrationMode::kAsync : MigrationMode::kSync;
  config.scope = scope == "all_live"      ? DecisionScope::kAllLive
                 : scope == "access_gaps" ? DecisionScope::kAccessGaps
                                          : DecisionScope::kRelevant;
  config.step_reward = step_reward == "deeptm" ? StepRewardKind::kDeepTm : StepRewardKind::kTimeSaved;
  config.oom_handling = oom_handling == "terminate" ? OomHandling::kTerminate : OomHandling::kSpillToSlow;

  if (!dump_json.empty()) {
    std::ofstream out(dump_json);
    out << ToJson(w, config).dump() << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_env: cannot write %s\n", dump_json.c_str());
      return 1;
    }
    return 0;
  }

  const auto build_start = Clock::now();
  PlacementEnv env(w, config);
  const double build_seconds = std::chrono::duration<double>(Clock::now() - build_start).count();

  if (check_episodes > 0) {
    ActionSequence actions;
    for (int e = 0; e < check_episodes; ++e) {
      Observation obs = env.Reset();
      double ret = 0, obs_sum = 0;
      uint64_t steps = 0;
      // Bit-exact fingerprints, for comparing two C++ builds (the Python
      // twin prints neither).
      Fnv1a obs_hash, reward_hash;
      while (!env.done()) {
        for (float x : obs) obs_sum += x;
        obs_hash.Value(obs);
        StepResult r = env.Step(actions.Next());
        reward_hash.Value(r.reward);
        ret += r.reward;
        obs = r.observation;
        ++steps;
      }
      const EpisodeSummary& s = env.summary();
      std::printf("{\"episode\": %d, \"steps\": %llu, \"return\": %.17g, \"observation_sum\": %.17g, "
                  "\"normalised_cost\": %.17g, \"spills\": %u, \"oom\": %s, \"migrations\": %zu, "
                  "\"observation_hash\": \"%016llx\", \"reward_hash\": \"%016llx\", \"plan_hash\": \"%016llx\", "
                  "\"cost_hash\": \"%016llx\"}\n",
                  e, static_cast<unsigned long long>(steps), ret, obs_sum, s.normalised_cost, s.spills,
                  s.oom ? "true" : "false", s.plan.migrations.size(),
                  static_cast<unsigned long long>(obs_hash.digest()),
                  static_cast<unsigned long long>(reward_hash.digest()),
                  static_cast<unsigned long long>(s.plan.Hash()), static_cast<unsigned long long>(CostHash(s)));
    }
    return 0;
  }

  std::mt19937_64 rng(1);
  uint64_t steps = 0, episodes = 0;
  double checksum = 0;  // keeps the loop from being optimised away
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    Observation obs = env.Reset();
    while (!env.done()) {
      StepResult r = env.Step(static_cast<int>(rng() >> 63));
      checksum += r.reward + obs[0];
      obs = r.observation;
      ++steps;
    }
    ++episodes;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  // What an env that takes turns with others pays (pretrain's workloads
  // past --resident-slot-bytes build their slots for each rollout): the
  // slots' memory, and the time to build them again at the next Reset.
  const uint64_t slot_bytes = env.decision_slot_bytes();
  env.ReleaseDecisionSlots();
  const auto rebuild_start = Clock::now();
  env.Reset();
  const double rebuild_seconds = std::chrono::duration<double>(Clock::now() - rebuild_start).count();
  std::printf("{\"impl\": \"cpp\", \"workload\": \"%s\", \"kernels\": %zu, \"tensors\": %zu, \"max_steps\": %u, "
              "\"episodes\": %llu, \"steps\": %llu, \"seconds\": %.3f, \"steps_per_second\": %.1f, "
              "\"episodes_per_second\": %.2f, \"setup_seconds\": %.4f, \"decision_slot_bytes\": %llu, "
              "\"slot_rebuild_seconds\": %.4f, \"checksum\": %.6g}\n",
              spec.c_str(), w.num_kernels(), w.num_tensors(), env.max_steps(),
              static_cast<unsigned long long>(episodes), static_cast<unsigned long long>(steps), elapsed,
              static_cast<double>(steps) / elapsed, static_cast<double>(episodes) / elapsed, build_seconds,
              static_cast<unsigned long long>(slot_bytes), rebuild_seconds, checksum);
  return 0;
}
