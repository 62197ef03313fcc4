#include "exporter/export.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "agents/policy_portfolio.h"
#include "common/files.h"
#include "envs/describe.h"
#include "envs/workload_io.h"
#include "envs/workload_spec.h"
#include "exporter/lookup_writer.h"
#include "hostrt/lookup_format.h"
#include "hostrt/tensortier_lookup.h"

namespace tensortier {
namespace lf = lookup_format;
namespace {

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool Exists(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

void CheckPlacementShape(int observation_size, int num_actions) {
  if (observation_size != kObservationSize || num_actions != 2)
    throw std::invalid_argument("export: the agent does not match the placement MDP (observation " +
                                std::to_string(observation_size) + " floats, " + std::to_string(num_actions) +
                                " actions)");
}

std::string ShapeText(const std::vector<int>& hidden) {
  std::string s = std::to_string(kObservationSize);
  for (int h : hidden) s += "-" + std::to_string(h);
  return s + "-2";
}

// `hidden` empty: the checkpoint's own settings decide the network (the
// checkpoint records them); else the shape given, which must match.
std::unique_ptr<DqnAgent> LoadAgent(const std::string& checkpoint, const std::vector<int>& hidden) {
  if (hidden.empty()) return DqnAgent::FromCheckpoint(checkpoint, "cpu");  // inference runs on the host
  DqnConfig config;
  config.observation_size = kObservationSize;
  config.num_actions = 2;
  config.device = "cpu";
  config.hidden = hidden;
  auto agent = std::make_unique<DqnAgent>(config);
  agent->LoadCheckpoint(checkpoint);
  return agent;
}

// The policy's greedy actions, several threads at once (the policy must be
// safe to call concurrently: DqnAgent::Act is, and does not allocate once a
// thread has warmed up).
BatchGreedyPolicy MakeBatchPolicy(const GreedyPolicy& greedy, int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return [&greedy, threads](const Observation* obs, size_t n, uint8_t* out) {
    auto work = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) out[i] = static_cast<uint8_t>(greedy(obs[i].data()));
    };
    const size_t parts = std::min<size_t>(static_cast<size_t>(threads), n / 512 + 1);
    if (parts <= 1) return work(0, n);
    std::vector<std::thread> pool;
    for (size_t p = 1; p < parts; ++p) pool.emplace_back(work, n * p / parts, n * (p + 1) / parts);
    work(0, n / parts);
    for (std::thread& t : pool) t.join();
  };
}

EnvConfig EnvAt(const ExportOptions& o, const PlacementPlan& plan, double factor) {
  EnvConfig c = o.env;
  c.dram_limit_bytes = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(factor * plan.dram_limit_bytes)));
  c.mode = plan.mode;
  return c;
}

// "dqn" or "sac" (see ExportOptions::agent).
std::string AgentFamily(const ExportOptions& o, const std::string& dir, std::string* checkpoint) {
  if (!o.agent.empty() && o.agent != "dqn" && o.agent != "sac")
    throw std::invalid_argument("export: unknown agent '" + o.agent + "' (dqn or sac)");
  if (!o.checkpoint_path.empty()) {
    *checkpoint = o.checkpoint_path;
    if (!o.agent.empty()) return o.agent;
    return std::filesystem::path(o.checkpoint_path).filename().string().rfind("sac", 0) == 0 ? "sac" : "dqn";
  }
  const std::string dqn = dir + "checkpoints/dqn.ckpt", sac = dir + "checkpoints/sac.ckpt";
  std::string family = o.agent;
  if (family.empty()) {
    if (Exists(dqn) && Exists(sac)) {
      // Both: a later run in the same directory with the other agent.
      std::error_code e1, e2;
      const auto t_dqn = std::filesystem::last_write_time(dqn, e1), t_sac = std::filesystem::last_write_time(sac, e2);
      family = !e1 && !e2 && t_sac > t_dqn ? "sac" : "dqn";
    } else {
      family = Exists(sac) ? "sac" : "dqn";
    }
  }
  // The fastest evaluated policy is the one the run's final plan starts
  // from (learner/fastest_policy.h); the live network may have drifted since.
  const std::string fastest = dir + "checkpoints/" + family + "-fastest.ckpt";
  *checkpoint = Exists(fastest) ? fastest : family == "sac" ? sac : dqn;
  return family;
}

struct Handle {
  tt_lookup* h = nullptr;
  ~Handle() { tt_lookup_close(h); }
};

std::string Percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

}  // namespace

std::string ExportReport::Summary() const {
  std::ostringstream os;
  os << "lookup file     " << output_path << " (" << FormatBytes(static_cast<double>(file_bytes)) << ")\n";
  os << "model           " << Hex(model_signature) << ", batch " << batch_size << ", DRAM budget "
     << FormatBytes(static_cast<double>(dram_budget_bytes)) << "\n";
  if (plan_section_bytes)
    os << "plan table      " << plan_tensors << " tensors, " << plan_migrations << " migrations ("
       << FormatBytes(static_cast<double>(plan_section_bytes)) << ")\n";
  if (!portfolio_member.empty())
    os << "portfolio       " << portfolio_member << " (of " << portfolio_members
       << " members: its greedy plan is the fastest on this model)\n";
  if (generalised_section_bytes) {
    os << "generalised     " << policy << " -> " << quantiser.cells << " cells ("
       << FormatBytes(static_cast<double>(generalised_section_bytes)) << "); bins:";
    for (const auto& fb : quantiser.bins_by_feature) os << " " << ObservationFeatureName(fb.first) << "=" << fb.second;
    os << "\n";
    os << "cells filled    " << quantiser.cells_from_exact << " from evaluation states, "
       << quantiser.cells_from_coverage << " from exploratory states, " << quantiser.cells_from_centres
       << " by the network at the cell centre\n";
    os << "agreement       " << eval_agreements << " / " << eval_states << " evaluation states ("
       << Percent(agreement) << "; " << eval_dont_care << " with DRAM full agree either way); exploratory states "
       << Percent(quantiser.coverage_states
                      ? 1.0 - static_cast<double>(quantiser.coverage_disagreements) / quantiser.coverage_states
                      : 0.0)
       << " of " << quantiser.coverage_states << " (" << quantiser.coverage_dont_care << " with DRAM full)\n";
    if (network_section_bytes)
      os << "network         " << policy << " in the file (" << FormatBytes(static_cast<double>(network_section_bytes))
         << "): hosts decide with it; the table alone agrees on " << table_agreements << " / " << eval_states
         << " evaluation states\n";
    char line[256], table[64] = " (no plan table)";
    if (plan_section_bytes) std::snprintf(table, sizeof table, ", plan table %.4f ms", plan_table_runtime_ns / 1e6);
    char alone[64] = "";
    if (network_section_bytes) std::snprintf(alone, sizeof alone, ", the table alone %.4f ms", table_runtime_ns / 1e6);
    std::snprintf(line, sizeof line, "runtime (model) network %.4f ms, lookup %.4f ms (%+.3f%%)%s%s\n",
                  network_runtime_ns / 1e6, lookup_runtime_ns / 1e6,
                  network_runtime_ns > 0 ? 100.0 * (lookup_runtime_ns / network_runtime_ns - 1.0) : 0.0, alone,
                  table);
    os << line;
  }
  char took[64];
  std::snprintf(took, sizeof took, "export took     %.1f s\n", seconds);
  os << took;
  return os.str();
}

ExportReport ExportLookup(const ExportOptions& o) {
  const std::string dir = o.run_dir.empty() ? "" : o.run_dir + "/";
  const std::string workload_spec = !o.workload.empty() ? o.workload : dir + "workload.ttwl";
  const std::string plan_path = !o.plan_path.empty() ? o.plan_path : dir + "final_plan.ttplan";
  std::string checkpoint;
  const std::string family = AgentFamily(o, dir, &checkpoint);
  // A network with no plan of its own (pretrain's): the generalised lookup
  // alone, keyed by a DRAM limit of the workload's.
  const bool without_plan = o.run_dir.empty() && o.plan_path.empty() && o.dram_fraction > 0;
  if (o.dram_fraction < 0 || o.dram_fraction > 1 || !std::isfinite(o.dram_fraction))
    throw std::invalid_argument("export: the DRAM fraction must be in (0, 1]");
  if (without_plan && (!o.generalised || o.checkpoint_path.empty() || o.workload.empty()))
    throw std::invalid_argument("export: a lookup without a plan needs a checkpoint and a workload to roll it out on");
  if (o.run_dir.empty() && !without_plan &&
      (o.workload.empty() || o.plan_path.empty() || (o.generalised && o.checkpoint_path.empty())))
    throw std::invalid_argument("export: give a run directory, or a workload, a plan and (for the generalised "
                                "lookup) a checkpoint, or a checkpoint, a workload and a DRAM fraction");
  if (o.output_path.empty() && o.run_dir.empty())
    throw std::invalid_argument("export: no output path (--out FILE.ttlookup)");
  Workload w = LoadWorkloadSpec(workload_spec);
  PlacementPlan plan;
  if (without_plan) {
    const auto limit = static_cast<uint64_t>(o.dram_fraction * static_cast<double>(w.peak_live_bytes()));
    plan = PlacementPlan::Uniform(w, Tier::kDram, std::max<uint64_t>(limit, 1));
    plan.mode = o.mode;
  } else {
    plan = ReadPlanFile(plan_path);
  }
  std::string portfolio_member;
  size_t portfolio_members = 0;
  if (without_plan && o.generalised && std::filesystem::is_directory(checkpoint)) {
    std::vector<PortfolioMember> members = LoadPortfolio({checkpoint});
    EnvConfig env = o.env;
    env.dram_limit_bytes = plan.dram_limit_bytes;
    env.mode = plan.mode;
    PlacementEnv placement(w, env);
    const PortfolioChoice choice = FastestGreedy(placement, members);
    checkpoint = portfolio_member = members[choice.member].path;
    portfolio_members = members.size();
  }
  ExportOptions with_source = o;
  if (without_plan) with_source.plan_table = false;
  if (with_source.output_path.empty()) with_source.output_path = dir + "policy.ttlookup";
  with_source.checkpoint_path = checkpoint;
  with_source.plan_path = without_plan ? "" : plan_path;
  with_source.workload = workload_spec;
  with_source.agent = family;
  if (o.generalised && !Exists(checkpoint)) throw std::runtime_error("export: no checkpoint at '" + checkpoint + "'");
  auto from_portfolio = [&](ExportReport report) {
    report.portfolio_member = portfolio_member;
    report.portfolio_members = portfolio_members;
    return report;
  };
  if (o.generalised && family == "sac") {
    if (!o.hidden.empty()) throw std::invalid_argument("export: --hidden applies to DQN checkpoints only");
    return from_portfolio(ExportLookupFrom(*SacAgent::FromCheckpoint(checkpoint, "cpu"), w, plan, with_source));
  }
  std::unique_ptr<DqnAgent> agent;
  if (o.generalised) {
    agent = LoadAgent(checkpoint, o.hidden);
  } else {
    agent = std::make_unique<DqnAgent>([] {
      DqnConfig c;
      c.device = "cpu";
      return c;
    }());
  }
  return from_portfolio(ExportLookupFrom(*agent, w, plan, with_source));
}

ExportReport ExportLookupFrom(const DqnAgent& agent, const Workload& w, const PlacementPlan& plan,
                              const ExportOptions& o) {
  CheckPlacementShape(agent.config().observation_size, agent.config().num_actions);
  const GreedyPolicy greedy = [&agent](const float* observation) {
    thread_local std::mt19937_64 unused(0);  // epsilon 0: Act draws nothing
    return agent.Act(observation, 0.0, unused);
  };
  return ExportLookupFromPolicy(greedy, "dqn " + ShapeText(agent.config().hidden), w, plan, o,
                                agent.GreedyNetwork());
}

ExportReport ExportLookupFrom(const SacAgent& agent, const Workload& w, const PlacementPlan& plan,
                              const ExportOptions& o) {
  CheckPlacementShape(agent.config().observation_size, agent.config().num_actions);
  const GreedyPolicy greedy = [&agent](const float* observation) {
    thread_local std::mt19937_64 unused(0);  // greedy: Act draws nothing
    return agent.Act(observation, SacActMode::kGreedy, unused);
  };
  return ExportLookupFromPolicy(greedy, "sac " + ShapeText(agent.config().hidden), w, plan, o,
                                agent.GreedyNetwork());
}

ExportReport ExportLookupFromPolicy(const GreedyPolicy& greedy, const std::string& policy_name, const Workload& w,
                                    const PlacementPlan& plan, const ExportOptions& o,
                                    const std::vector<DenseLayer>& network) {
  const auto started = std::chrono::steady_clock::now();
  if (o.output_path.empty()) throw std::invalid_argument("export: no output path");
  if (!o.plan_table && !o.generalised) throw std::invalid_argument("export: nothing to export");
  if (plan.dram_limit_bytes == 0)
    throw std::invalid_argument("export: the plan has no DRAM limit, so it cannot key a plan table");
  ExportReport report;
  report.output_path = o.output_path;
  report.model_signature = w.Signature();
  report.batch_size = w.batch_size;
  report.dram_budget_bytes = plan.dram_limit_bytes;
  report.policy = policy_name;

  LookupContents contents;
  contents.primary_signature = w.Signature();
  contents.created_unix_seconds = static_cast<uint64_t>(std::time(nullptr));
  if (o.plan_table) {
    contents.plans.push_back(MakePlanTableEntry(w, plan));  // validates the plan against w
    report.plan_tensors = static_cast<uint32_t>(plan.initial_tiers.size());
    report.plan_migrations = static_cast<uint32_t>(plan.migrations.size());
  } else {
    plan.Validate(w);
  }

  std::vector<LabelledObservation> samples;
  std::mt19937_64 rng(o.seed);
  if (o.generalised) {
    if (o.eval_budget_factors.empty()) throw std::invalid_argument("export: no evaluation budgets");
    // Greedy evaluation episodes: the states the policy really visits.
    for (double factor : o.eval_budget_factors) {
      PlacementEnv env(w, EnvAt(o, plan, factor));
      RunEpisode(env, [&](const Observation& obs) {
        int a = greedy(obs.data());
        samples.push_back({obs, static_cast<uint8_t>(a), true, env.DramRequestWouldSpill()});
        return a;
      });
    }
    // Exploratory episodes: states the policy reaches at other budgets, or
    // after a deviation, on the trained model and on the coverage models
    // (at the same share of their peak as the plan's limit of the trained one).
    std::uniform_real_distribution<double> factor_of(0.5, 1.5), eps_of(0.0, o.coverage_epsilon_max), coin(0, 1);
    // Episodes run in an order whose every prefix spreads over the budget
    // range (van der Corput), so a workload whose episodes are long stops at
    // `max_states` having seen budgets across the range.
    auto explore = [&](const Workload& wl, uint64_t base_limit, int episodes, uint64_t max_states) {
      std::vector<int> order(static_cast<size_t>(std::max(0, episodes)));
      std::iota(order.begin(), order.end(), 0);
      auto radical_inverse = [](uint32_t i) {
        double x = 0, f = 0.5;
        for (; i; i >>= 1, f *= 0.5) x += f * (i & 1);
        return x;
      };
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return radical_inverse(a / 2) < radical_inverse(b / 2); });
      const size_t start = samples.size();
      for (int e : order) {
        if (samples.size() - start >= max_states) break;
        // Even episodes are greedy, at budgets spread evenly over the range:
        // the policy's own path at budgets it was not evaluated at. Odd ones
        // deviate from it, at random budgets.
        const bool on_policy = e % 2 == 0;
        const double factor = on_policy ? 0.5 + (e + 0.5) / std::max(1, episodes) : factor_of(rng);
        EnvConfig c = o.env;
        c.dram_limit_bytes = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(factor * base_limit)));
        c.mode = plan.mode;
        PlacementEnv env(wl, c);
        const double epsilon = on_policy ? 0.0 : eps_of(rng);
        RunEpisode(env, [&](const Observation& obs) {
          const int a = greedy(obs.data());
          samples.push_back({obs, static_cast<uint8_t>(a), false, env.DramRequestWouldSpill()});
          return coin(rng) < epsilon ? static_cast<int>(rng() & 1) : a;
        });
      }
    };
    const uint64_t share_states =
        o.max_exploration_states / (2 + static_cast<uint64_t>(o.coverage_workloads.size()));
    explore(w, plan.dram_limit_bytes, o.coverage_episodes, 2 * share_states);
    const double share = static_cast<double>(plan.dram_limit_bytes) / static_cast<double>(w.peak_live_bytes());
    for (const std::string& spec : o.coverage_workloads) {
      Workload other = LoadWorkloadSpec(spec);
      explore(other, static_cast<uint64_t>(std::llround(share * other.peak_live_bytes())),
              o.coverage_episodes_per_workload, share_states);
    }
    QuantiserOptions q = o.quantiser;
    q.seed = o.seed;
    contents.has_generalised = true;
    contents.generalised = BuildGeneralisedTable(samples, MakeBatchPolicy(greedy, o.threads), q, &report.quantiser);
    contents.generalised.constants = DefaultLookupConstants(plan.dram_limit_bytes);
  }

  // Info for people; the runtime does not read it.
  std::ostringstream info;
  info << "producer: tensortier export\n";
  if (!o.run_dir.empty()) info << "run_dir: " << o.run_dir << "\n";
  if (!o.checkpoint_path.empty() && o.generalised) info << "checkpoint: " << o.checkpoint_path << "\n";
  if (!o.plan_path.empty()) info << "plan: " << o.plan_path << "\n";
  info << "workload: " << w.name << " (" << w.num_kernels() << " kernels, " << w.num_tensors() << " tensors)\n";
  info << "plan_produced_by: " << plan.produced_by << "\n";
  info << "plan_hash: " << Hex(plan.Hash()) << "\n";
  if (o.generalised) {
    const QuantiserStats& s = report.quantiser;
    info << "policy: " << report.policy << "\n";
    info << "evaluation_states: " << s.exact_states << " (budgets x";
    for (double f : o.eval_budget_factors) info << " " << f;
    info << "; " << s.exact_dont_care << " with DRAM full, either action)\n";
    info << "exploratory_states: " << s.coverage_states << " (models: " << w.name;
    for (const std::string& spec : o.coverage_workloads) info << ", " << spec;
    info << "; " << s.coverage_dont_care << " with DRAM full, either action)\n";
    info << "cells: " << s.cells << " (" << s.cells_from_exact << " from evaluation states, "
         << s.cells_from_coverage << " from exploratory states, " << s.cells_from_centres << " from cell centres; "
         << s.slow_cells << " slow)\n";
    info << "dropped_features:";
    for (int f : s.dropped_features) info << " " << ObservationFeatureName(f);
    info << "\nimportance:";
    for (const auto& fi : s.importance) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s=%.3f", ObservationFeatureName(fi.first), fi.second);
      info << buf;
    }
    info << "\n";
  }
  if (o.generalised && o.network)
    for (const DenseLayer& l : network)
      contents.network.push_back(
          {static_cast<uint32_t>(l.in), static_cast<uint32_t>(l.out), l.weight, l.bias});
  contents.info = info.str();

  const std::string bytes = SerializeLookup(contents);
  report.file_bytes = bytes.size();

  // Check the bytes through the host runtime before they replace anything.
  Handle h;
  char err[512];
  if (tt_lookup_open_memory(bytes.data(), bytes.size(), o.output_path.c_str(), &h.h, err, sizeof err) != TT_LOOKUP_OK)
    throw std::logic_error(std::string("export: the runtime refuses the file just built: ") + err);
  if (o.plan_table) {
    const int32_t id = tt_lookup_find_plan(h.h, w.Signature(), w.batch_size, plan.dram_limit_bytes);
    if (id < 0) throw std::logic_error("export: the plan is missing from the file just built");
    for (uint32_t t = 0; t < w.num_tensors(); ++t)
      if (tt_lookup_plan_tier_at(h.h, id, t) != static_cast<int>(plan.initial_tiers[t]))
        throw std::logic_error("export: the plan table's tier of tensor " + std::to_string(t) + " differs");
    size_t migrations = 0;
    std::vector<tt_lookup_migration> buf(plan.migrations.size() + 1);
    for (int32_t k = -1; k < static_cast<int32_t>(w.num_kernels()); ++k) {
      int32_t n = tt_lookup_plan_migrations_at(h.h, id, k, buf.data(), buf.size());
      for (int32_t i = 0; i < n; ++i, ++migrations) {
        const Migration& m = plan.migrations[migrations];
        if (m.after_kernel != k || m.tensor != buf[i].tensor || static_cast<uint32_t>(m.to) != buf[i].to_tier)
          throw std::logic_error("export: the plan table's migrations differ from the plan");
      }
    }
    if (migrations != plan.migrations.size()) throw std::logic_error("export: the plan table lost migrations");
  }
  if (o.plan_table) report.plan_table_runtime_ns = EvaluatePlan(w, plan).total_ns;
  if (o.generalised) {
    tt_lookup_generalised_info gi;
    tt_lookup_generalised_info_get(h.h, &gi);
    report.generalised_section_bytes = gi.section_bytes;
    for (const LabelledObservation& s : samples) {
      if (!s.exact) continue;
      ++report.eval_states;
      report.eval_dont_care += s.dont_care ? 1 : 0;
      // Where DRAM is full either answer places the tensor in the slow tier.
      const int answer = tt_lookup_decide(h.h, s.observation.data(), s.observation.size());
      report.eval_agreements += s.dont_care || answer == s.action;
      report.table_agreements +=
          s.dont_care || tt_lookup_decide_table(h.h, s.observation.data(), s.observation.size()) == s.action;
    }
    report.agreement = report.eval_states ? static_cast<double>(report.eval_agreements) / report.eval_states : 0;
    // The network's plan and the lookup's plan at the plan's own budget.
    PlacementEnv env(w, EnvAt(o, plan, 1.0));
    report.network_runtime_ns =
        RunEpisode(env, [&](const Observation& obs) { return greedy(obs.data()); }).cost.total_ns;
    report.lookup_runtime_ns =
        RunEpisode(env, [&](const Observation& obs) { return tt_lookup_decide(h.h, obs.data(), obs.size()); })
            .cost.total_ns;
    report.table_runtime_ns =
        RunEpisode(env, [&](const Observation& obs) { return tt_lookup_decide_table(h.h, obs.data(), obs.size()); })
            .cost.total_ns;
  }
  // The plan section's size, from the directory.
  const auto* file = reinterpret_cast<const unsigned char*>(bytes.data());
  for (uint32_t i = 0; i < lf::LoadU32(file + lf::kOffSectionCount); ++i) {
    const unsigned char* entry = file + lf::kHeaderBytes + i * lf::kDirEntryBytes;
    if (lf::LoadU32(entry) == lf::kSectionPlans) report.plan_section_bytes = lf::LoadU64(entry + 16);
    if (lf::LoadU32(entry) == lf::kSectionNetwork) report.network_section_bytes = lf::LoadU64(entry + 16);
  }
  WriteFileAtomically(o.output_path, bytes);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

bool IsLookupFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[sizeof lf::kMagic] = {};
  f.read(magic, sizeof magic);
  return f.gcount() == static_cast<std::streamsize>(sizeof magic) &&
         std::equal(magic, magic + sizeof magic, lf::kMagic);
}

std::string DescribeLookupFile(const std::string& path) {
  Handle h;
  char err[512];
  if (tt_lookup_open(path.c_str(), &h.h, err, sizeof err) != TT_LOOKUP_OK) throw std::runtime_error(err);
  std::ostringstream os;
  os << "lookup file     " << path << "\n";
  os << "format          version " << lf::kFormatVersion << ", " << tt_lookup_file_bytes(h.h) << " bytes ("
     << FormatBytes(static_cast<double>(tt_lookup_file_bytes(h.h))) << "), checksums ok\n";
  os << "trained on      model " << Hex(tt_lookup_primary_signature(h.h)) << "\n";
  const uint32_t plans = tt_lookup_plan_count(h.h);
  os << "plan tables     " << plans << "\n";
  for (uint32_t i = 0; i < plans; ++i) {
    tt_lookup_plan_info p;
    tt_lookup_plan_info_at(h.h, static_cast<int32_t>(i), &p);
    uint32_t slow = 0;
    for (uint32_t t = 0; t < p.num_tensors; ++t) slow += tt_lookup_plan_tier_at(h.h, static_cast<int32_t>(i), t) == 1;
    os << "  model " << Hex(p.model_signature) << "  batch " << p.batch_size << "  DRAM budget "
       << FormatBytes(static_cast<double>(p.dram_budget_bytes)) << " (" << p.dram_budget_bytes << " B)  "
       << p.num_tensors << " tensors (" << slow << " start slow)  " << p.num_kernels << " kernels  "
       << p.num_migrations << " migrations  " << (p.async_copies ? "async" : "sync") << "\n";
  }
  tt_lookup_generalised_info g;
  if (tt_lookup_generalised_info_get(h.h, &g) == TT_LOOKUP_OK) {
    const uint64_t cells = g.cell_count;
    char head[256];
    std::snprintf(head, sizeof head, "%u observation floats -> %llu cells (%.1f bits), ", g.observation_size,
                  static_cast<unsigned long long>(cells), std::log2(static_cast<double>(cells)));
    os << "generalised     " << head << FormatBytes(static_cast<double>((cells + 63) / 64 * 8)) << " bitmap, section "
       << FormatBytes(static_cast<double>(g.section_bytes)) << ", " << g.fine_bins << " fine bins per feature\n";
    std::vector<bool> in_key(g.observation_size, false);
    for (uint32_t i = 0; i < g.feature_count; ++i) {
      tt_lookup_feature_info f;
      tt_lookup_feature_info_at(h.h, i, &f);
      in_key[f.observation_index] = true;
      char line[160];
      std::snprintf(line, sizeof line, "  %-18s %3u bins over [%.4g, %.4g]\n",
                    ObservationFeatureName(static_cast<int>(f.observation_index)), f.bins, f.lo,
                    f.lo + g.fine_bins / f.scale);
      os << line;
    }
    os << "  not in the cell number:";
    for (uint32_t i = 0; i < g.observation_size; ++i)
      if (!in_key[i]) os << " " << ObservationFeatureName(static_cast<int>(i));
    os << "\n";
    char line[512];
    std::snprintf(line, sizeof line,
                  "constants       heat weights w_r %g w_f %g w_s %g w_l %g threshold %g; band [%g, %g] x L_D, "
                  "step %g, w_s above %g x L_D, %g iterations; pending cap %g; trained L_D %s\n",
                  tt_lookup_constant(h.h, lf::kConstHeatWr), tt_lookup_constant(h.h, lf::kConstHeatWf),
                  tt_lookup_constant(h.h, lf::kConstHeatWs), tt_lookup_constant(h.h, lf::kConstHeatWl),
                  tt_lookup_constant(h.h, lf::kConstHeatThreshold), tt_lookup_constant(h.h, lf::kConstHeatBandLow),
                  tt_lookup_constant(h.h, lf::kConstHeatBandHigh), tt_lookup_constant(h.h, lf::kConstHeatStep),
                  tt_lookup_constant(h.h, lf::kConstHeatSizeSwitch),
                  tt_lookup_constant(h.h, lf::kConstHeatMaxIterations), tt_lookup_constant(h.h, lf::kConstPendingCap),
                  FormatBytes(tt_lookup_constant(h.h, lf::kConstTrainedDramLimit)).c_str());
    os << line;
    const uint32_t layers = tt_lookup_network_layers(h.h);
    if (layers > 0)
      os << "network         " << layers << " layers in the file: tt_lookup_decide is their forward pass, the cells "
         << "answer tt_lookup_decide_table\n";
    else
      os << "network         none: tt_lookup_decide answers from the cells\n";
  } else {
    os << "generalised     none\n";
  }
  const std::string info = tt_lookup_info_text(h.h);
  if (!info.empty()) {
    os << "info\n";
    std::istringstream in(info);
    std::string l;
    while (std::getline(in, l)) os << "  " << l << "\n";
  }
  return os.str();
}

}  // namespace tensortier
