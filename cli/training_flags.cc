#include "cli/training_flags.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metrics_server.h"

namespace tensortier {
namespace {

// A default as capture_default_str shows it (a list: items and spaces, which
// main.cc's ReusableConfig writes back as a TOML array).
template <typename T>
std::string DefaultString(const T& value) {
  return CLI::detail::to_string(value);
}
std::string DefaultString(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

// One flag for a setting DQN and SAC (or SAC's actor and critics) both have.
template <typename T>
CLI::Option* AddOptionForBoth(CLI::App* cmd, const std::string& name, T& first, T& second, const std::string& help) {
  return cmd->add_option_function<T>(name, [&first, &second](const T& v) { first = second = v; }, help)
      ->default_str(DefaultString(first));
}

// A named setting (agent, replay, exploration): parsed by the library's
// function, whose error lists the choices.
template <typename E>
CLI::Option* AddEnumOption(CLI::App* cmd, const std::string& name, E& field, E (*parse)(const std::string&),
                           std::string (*name_of)(E), const std::string& help) {
  return cmd->add_option_function<std::string>(name, [&field, parse](const std::string& v) { field = parse(v); }, help)
      ->check(CLI::Validator(
          [parse](std::string& v) {
            try {
              parse(v);
              return std::string();
            } catch (const std::invalid_argument& e) {
              return std::string(e.what());
            }
          },
          "", name))
      ->default_str(name_of(field));
}

MigrationMode ParseMigrationMode(const std::string& name) {
  if (name == "sync") return MigrationMode::kSync;
  if (name == "async") return MigrationMode::kAsync;
  throw std::invalid_argument("mode must be sync or async, not '" + name + "'");
}
std::string MigrationModeString(MigrationMode mode) { return MigrationModeName(mode); }

}  // namespace

std::vector<std::string> ComparisonBaselines(const TrainingFlags& flags, MigrationMode mode) {
  std::vector<std::string> names = flags.baselines;
  if (mode == MigrationMode::kAsync && names == TrainingFlags::DefaultBaselines()) names.push_back("autotm-async");
  return names;
}

void PutInHelpGroups(CLI::App* cmd, const std::vector<std::pair<std::string, std::vector<std::string>>>& groups) {
  for (const auto& [group, names] : groups)
    for (const std::string& name : names) {
      CLI::Option* opt = cmd->get_option_no_throw(name);
      if (!opt) throw std::logic_error("no option " + name + " to put in the help group " + group);
      opt->group(group);
    }
}

// The learner serves Prometheus metrics unless told 'off'; a Learner built
// in code serves none unless given an address.
TrainingFlags::TrainingFlags() { learner.metrics_address = kDefaultMetricsAddress; }

CLI::Option* AddDecisionScopeOption(CLI::App* cmd, DecisionScope& scope) {
  return AddEnumOption(cmd, "--decision-scope", scope, ParseDecisionScope, DecisionScopeName,
                       "Which live tensors of a bottleneck kernel get a decision: access-gaps (an untouched DRAM tensor "
                       "once per gap between its accesses), relevant (at every bottleneck kernel) or all-live "
                       "(docs/mdp.md)");
}

CLI::Option* AddMigrationModeOption(CLI::App* cmd, MigrationMode& mode, const std::string& help) {
  return AddEnumOption(cmd, "--mode", mode, ParseMigrationMode, MigrationModeString, help);
}

void AddTrainingOptions(CLI::App* cmd, TrainingFlags& f) {
  LearnerConfig& c = f.learner;
  cmd->add_option("--workload", f.workload,
                  "Workload file (.ttwl) or synthetic:SHAPE[:LAYERS[:BASE_BYTES]], SHAPE in vgg|resnet|mobilenet|tiny|rnn|transformer "
                  "(default: profile --model)");
  cmd->add_option("--dram-fraction", f.dram_fraction, "DRAM limit as a fraction of the workload's peak live bytes")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  cmd->add_option("--dram-limit-bytes", f.dram_limit_bytes, "DRAM limit in bytes (overrides --dram-fraction)");
  cmd->add_option("--episodes", c.episodes, "Episodes to train for")->check(CLI::Range(1, 10000000))->capture_default_str();
  AddEnumOption(cmd, "--agent", c.agent, ParseAgentKind, AgentKindName,
                "Agent to train: dqn (double DQN) or sac (discrete SAC)");
  AddEnumOption(cmd, "--mode", c.env.mode, ParseMigrationMode, MigrationModeString,
                "Migration mode: sync (blocking copies) or async (copies overlap the next kernel)");
  cmd->add_option("--beta", c.env.beta, "Weight of performance against memory price in the episodic reward (eq. 13)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  AddDecisionScopeOption(cmd, c.env.scope);
  cmd->add_option("--spill-penalty", c.env.spill_penalty,
                  "Step reward subtracted when the agent asks for DRAM that is full (the tensor goes to the slow tier)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  AddOptionForBoth(cmd, "--seed", c.dqn.seed, c.sac.seed, "Random seed");
  AddOptionForBoth(cmd, "--hidden", c.dqn.hidden, c.sac.hidden, "Hidden layer sizes of the networks");
  cmd->add_option("--lr", c.dqn.learning_rate, "DQN: Adam learning rate (SAC: --sac-lr)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddOptionForBoth(cmd, "--batch-size", c.dqn.batch_size, c.sac.batch_size, "Minibatch size")
      ->check(CLI::Range(1, 65536));
  AddOptionForBoth(cmd, "--updates-per-episode", c.dqn.updates_per_episode, c.sac.updates_per_episode,
                   "Gradient updates per episode report")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--epsilon-decay-episodes", c.dqn.epsilon_decay_episodes,
                  "DQN: weights versions (episode reports) over which epsilon falls to its end value")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  AddOptionForBoth(cmd, "--learning-starts", c.dqn.learning_starts, c.sac.learning_starts,
                   "Transitions in replay before the first update");
  cmd->add_option("--target-update-interval", c.dqn.target_update_interval, "DQN: updates between target-network syncs")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  AddOptionForBoth(cmd, "--gamma", c.dqn.gamma, c.sac.gamma, "Discount factor (DQN and SAC)")
      ->check(CLI::Range(0.0, 1.0));
  AddOptionForBoth(cmd, "--sac-lr", c.sac.actor_learning_rate, c.sac.critic_learning_rate,
                   "SAC: learning rate of the actor and both critics")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sac-alpha-lr", c.sac.alpha_learning_rate, "SAC: learning rate of the entropy temperature")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--sac-tau", c.sac.tau, "SAC: Polyak factor of the target critics")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--sac-target-entropy-scale", c.sac.target_entropy_scale,
                  "SAC: target entropy as a fraction of log(2) nats")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--sac-reward-scale", c.sac.reward_scale, "SAC: rewards are multiplied by this in the critics' target")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddOptionForBoth(cmd, "--device", c.dqn.device, c.sac.device,
                   "Where the learner trains: auto (CUDA when present), cpu, cuda, cuda:N");
  cmd->add_option("--out", f.out, "Run directory (default runs/<time>); must be empty or new unless --resume or --force");
  cmd->add_flag("--force", f.force, "Write into a non-empty --out (its old files are replaced or left beside the new ones)");
  cmd->add_option("--max-seconds", c.max_seconds, "Stop training after this many seconds (0 = no limit)");
  cmd->add_option("--heartbeat-ms", c.heartbeat_interval_ms, "Heartbeat interval between learner and workers")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", c.checkpoint_interval_episodes,
                  "Episodes between checkpoints (0 = only at the end)")
      ->capture_default_str();
  cmd->add_option("--metrics-address", c.metrics_address,
                  "Serve Prometheus metrics on HOST:PORT (port 0: any free one; 'off': none)")
      ->capture_default_str();
  cmd->add_option("--init", c.init_checkpoint,
                  "Start from the network of another run: an agent checkpoint file, a run directory (pretrain's: "
                  "its portfolio, checkpoints/portfolio/, whose member with the fastest greedy plan on this workload "
                  "is taken; else checkpoints/AGENT-fastest.ckpt, else AGENT.ckpt), or a directory of checkpoints "
                  "(a portfolio); the hidden sizes come from it, DQN takes the "
                  "whole Q-network, SAC its actor only; imitation, if any, starts from it; ignored with --resume");
  cmd->add_option("--resume", f.resume_dir,
                  "Continue the run in RUN_DIR from its newest good checkpoint (also its --out; the workload "
                  "defaults to RUN_DIR/workload.ttwl)");
  AddEnumOption(cmd, "--replay", c.replay, ParseReplayKind, ReplayKindName,
                "Replay: uniform, or prioritized (proportional, Ape-X style; DQN or SAC)");
  cmd->add_option("--samples-per-insert", c.samples_per_insert,
                  "Rate limiter: transitions trained on per transition inserted (-1: updates-per-episode x "
                  "batch-size / mean length of the last 32 episodes, followed as it changes; 0: no limiter, "
                  "updates-per-episode per episode report)")
      ->capture_default_str();
  AddEnumOption(cmd, "--exploration", c.exploration, ParseExplorationKind, ExplorationKindName,
                "DQN workers' epsilon: schedule (decays over --epsilon-decay-episodes) or apex (worker i of N: "
                "eps^(1 + alpha i/(N-1)))");
  cmd->add_option("--apex-epsilon", c.apex_epsilon, "Ape-X base epsilon")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--apex-alpha", c.apex_alpha, "Ape-X exponent")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--eval-every", c.eval_interval_episodes, "Episodes between greedy evaluations")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--converge-window", c.converge_window,
                  "Stop when this many greedy evaluations in a row agree within --converge-tolerance and beat the "
                  "best before them by no more (0: off)")
      ->capture_default_str();
  cmd->add_option("--converge-tolerance", c.converge_tolerance,
                  "Relative tolerance of --converge-window (times max(1, |best evaluation reward|))")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  // No captured defaults for the lists: CLI11 writes a list default into
  // config.toml as one space-separated string, which would not read back.
  cmd->add_option("--demonstrations", f.demonstrations,
                  "Baseline policies whose plans DQN imitates before training (DQfD + DAgger, the fastest plan "
                  "of them); 'none' to start from random weights [default: autotm-sync sentinel heat+ilp]");
  cmd->add_option("--baselines", f.baselines,
                  "Baseline policies scored beside the learned plan at the end; 'none' for none [default: sentinel "
                  "autotm-sync ca-lm relaxation, and autotm-async in async mode]");
  cmd->add_option("--solver-seconds", f.solver_seconds,
                  "Time limit of each solve of the baselines (AutoTM's ILPs, heat+ilp, the relaxation)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--dagger-rounds", c.imitation.dagger_rounds,
                  "Imitation: DAgger rounds after pre-training on the expert")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--polish-updates", c.imitation.polish_updates,
                  "Imitation: steps on the expert's own states alone after the DAgger rounds, the greedy plan "
                  "scored every 1,500 (0: none)")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  cmd->add_option("--self-imitation-rounds", c.self_imitation.rounds,
                  "DQN, before the workers play: rounds of imitating its own plan-time search's plan (no baseline "
                  "plan needed; fine-tunes an --init network on a new model)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--init-search-starts", c.self_imitation.portfolio_search_starts,
                  "With --init a portfolio and --self-imitation-rounds: the first round's search also starts from "
                  "the best of the searches from this many of its members' greedy plans, each guided by its own "
                  "network (1: the chosen member's network alone)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  // One flag for both: the labels of DAgger rounds on the baselines' plans
  // and of self-imitation's rounds on the network's own searched plans.
  cmd->add_option_function<bool>(
         "--room-labels",
         [&c](const bool& on) {
           c.imitation.room_labels = on;
           c.self_imitation.imitation.room_labels = on;
         },
         "Imitation and self-imitation: DAgger labels that price the room (where the rollout's kept tensors crowd "
         "out a DRAM label, the cheapest of them to evict are labelled slow)")
      ->default_str(c.imitation.room_labels ? "true" : "false");
  AddEnumOption(cmd, "--expert-choice", c.imitation.expert_choice, ParseExpertChoice, ExpertChoiceName,
                "Imitation: of the --demonstrations, imitate the fastest as the MDP replays it (episode) or the "
                "fastest once that replay's copies are scheduled and it is polished, as the plan-time pipelines "
                "finish a greedy plan (finished)");
  cmd->add_option("--lr-after-imitation", c.imitation.learning_rate_after,
                  "Imitation: DQN's learning rate once it is over (0 keeps --lr); a smaller step keeps TD updates "
                  "from pulling the imitated policy off the expert")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--search-rollouts", c.plan_search.max_rollouts,
                  "Plan-time search from the fastest evaluated policy's greedy plan, guided by its network (1 = none)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--search-seconds", c.plan_search.max_seconds,
                  "Plan-time search: time limit (0: none; it also stops when no candidate improves). Seconds give the "
                  "network's plan; minutes let a search find more without it")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--search-replays", c.plan_search.max_replays,
                  "Plan-time search, after the rollouts: episodes that flip one of the incumbent's least-sure decisions "
                  "and keep its others (about an environment episode each; 0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-replays-per-improvement", c.plan_search.replays_per_improvement,
                  "Plan-time search: single flips added to --search-replays by each one that improves, so flips that "
                  "keep paying go on (0 = a fixed budget)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_flag_callback("--no-copy-schedule", [&c] { c.plan_search.schedule_async_copies = false; },
                         "Plan-time search, async mode: compare and return plans as the MDP makes them, without "
                         "moving each copy to the boundary where it is exposed least");
  cmd->add_flag_callback("--no-plan-polish", [&c] { c.plan_search.polish_plan = false; },
                         "Plan-time search: return the search's plan as it ends, without the polish's edits on the plan "
                         "itself (a copied tensor in one tier all iteration; a tensor in DRAM with room made for it)");
  cmd->add_option("--search-cyclic-replays", c.plan_search.max_cyclic_replays,
                  "Plan-time search, after the rollouts: each persistent tensor the plan ends in another tier than it "
                  "starts (a copy back after the last kernel) kept in its starting or its last tier all the iteration "
                  "(0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-blocker-replays", c.plan_search.max_blocker_replays,
                  "Plan-time search, then: for each DRAM choice clipped for want of room, the least sure DRAM choices "
                  "holding that room evicted, one at a time (0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-pair-replays", c.plan_search.max_pair_replays,
                  "Plan-time search, when single flips stop improving: episodes that flip two of the incumbent's "
                  "decisions of opposite directions over overlapping kernels (0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-tensor-replays", c.plan_search.max_tensor_replays,
                  "Plan-time search, when single and pair flips stop improving: episodes that put every decision of "
                  "one tensor in one tier, the least sure tensors first (0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-room-replays", c.plan_search.max_room_replays,
                  "Plan-time search, when single and pair flips stop improving: episodes that take one of the "
                  "costliest slow-tier uses to DRAM and evict tensors kept through their gap over its kernel until "
                  "they free its size (0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-window-replays", c.plan_search.max_window_replays,
                  "Plan-time search, when no other move improves: episodes that keep one tensor in the slow tier "
                  "over a stretch of its uses and in DRAM elsewhere, or the other way round, the costliest tensors "
                  "first (0 = none)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--search-polished-restarts", c.plan_search.max_polished_restarts,
                  "Plan-time search: where it ends with more than a tenth of its time left, search again from the "
                  "polished plan, up to this many times while each is faster (0 = none)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_flag_callback("--no-search-from-baseline", [&f] { f.search_from_baseline = false; },
                         "Plan-time search: start only from the network's plans (and the ILP it guides), not also "
                         "from the comparison's fastest baseline plan (the final plan's source names where the "
                         "search went on from)");
  cmd->add_option("--search-polish-share", c.plan_search.polish_share,
                  "Plan-time search: the polish of the searched plan gets at most this share of its time limit")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--search-move-turn-share", c.plan_search.move_turn_share,
                  "Plan-time search: each pass of single flips, room, tensor or window replays is a turn of at most "
                  "this share of its time limit; one cut short goes on at its next turn (0 = a pass runs to its end)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag_callback("--no-window-pricing", [&c] { c.plan_search.price_windows = false; },
                         "Plan-time search: play every window replay, in order, instead of pricing each first (the "
                         "tensor's own reads and copies, the clipped requests where it frees DRAM) and skipping those "
                         "priced at no gain");
  cmd->add_option("--ilp-seconds", c.plan_ilp.time_limit_seconds,
                  "Before the search: AutoTM's ILP with the same network's surest decisions fixed, from its greedy "
                  "plan (CBC solves the rest; the search then starts from the faster of the two; 0 = none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  // No captured default: CLI11 writes a list default into config.toml as one
  // string, which would not read back as a list.
  cmd->add_option("--ilp-fixed-shares", c.plan_ilp.fixed_shares,
                  "That ILP: shares of the network's surest decisions fixed, one solve each from the best plan so far, "
                  "descending [default: " + SharesText(GuidedIlpOptions{}.fixed_shares) + "]")
      ->check(CLI::Range(0.0, 1.0));

  PutInHelpGroups(cmd, {
      {"What to train on, and the run", {"--workload", "--dram-fraction", "--dram-limit-bytes", "--episodes", "--out",
                                         "--force", "--init", "--resume", "--max-seconds", "--checkpoint-every"}},
      {"The environment", {"--mode", "--decision-scope", "--beta", "--spill-penalty"}},
      {"The agent (DQN, and SAC where it says so)",
       {"--agent", "--seed", "--hidden", "--lr", "--batch-size", "--updates-per-episode", "--epsilon-decay-episodes",
        "--learning-starts", "--target-update-interval", "--gamma", "--device"}},
      {"SAC", {"--sac-lr", "--sac-alpha-lr", "--sac-tau", "--sac-target-entropy-scale", "--sac-reward-scale"}},
      {"Replay and exploration", {"--replay", "--samples-per-insert", "--exploration", "--apex-epsilon", "--apex-alpha"}},
      {"Baselines and imitation", {"--demonstrations", "--baselines", "--solver-seconds", "--dagger-rounds",
                                   "--polish-updates", "--self-imitation-rounds", "--init-search-starts", "--room-labels",
                                   "--expert-choice", "--lr-after-imitation"}},
      {"Evaluation, convergence and the final search",
       {"--eval-every", "--converge-window", "--converge-tolerance", "--search-rollouts", "--search-seconds",
        "--search-replays", "--search-replays-per-improvement", "--search-cyclic-replays",
        "--search-blocker-replays", "--search-pair-replays", "--search-room-replays", "--search-tensor-replays",
        "--search-window-replays", "--no-window-pricing", "--search-move-turn-share", "--search-polished-restarts",
        "--search-polish-share", "--no-search-from-baseline", "--no-copy-schedule", "--no-plan-polish", "--ilp-seconds",
        "--ilp-fixed-shares"}},
      {"Fleet and metrics", {"--heartbeat-ms", "--metrics-address"}},
  });
}

void AddPretrainOptions(CLI::App* cmd, CorpusPretrainingOptions& o) {
  cmd->add_option("--workloads", o.workloads,
                  "The corpus: workload files (profile, generate) or synthetic:SHAPE[:LAYERS] specs")
      ->required();
  cmd->add_option("--validation-workloads", o.validation_workloads,
                  "Workloads the network does not learn from: its greedy plans on them choose the round kept "
                  "(default: none, the corpus's own mean chooses it); keep the models you evaluate on out of both");
  cmd->add_option("--out", o.out_dir, "Run directory: checkpoints/dqn.ckpt (for train --init, bench --checkpoint, "
                                      "export --checkpoint), corpus.csv, corpus.md, pretrain.log")
      ->required();
  cmd->add_option("--dram-fractions,--dram-fraction", o.dram_fractions,
                  "DRAM limits, as fractions of each workload's peak live bytes: every workload enters the corpus "
                  "once per fraction")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  AddEnumOption(cmd, "--mode", o.env.mode, ParseMigrationMode, MigrationModeString,
                "Migration mode: sync (blocking copies) or async (copies overlap the next kernel)");
  AddDecisionScopeOption(cmd, o.env.scope);
  cmd->add_option("--demonstrations", o.experts,
                  "Baseline policies whose fastest plan the network imitates on each workload "
                  "[default: autotm-sync sentinel]");
  cmd->add_option("--solver-seconds", o.solver_seconds, "Time limit of each ILP solve (AutoTM)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o.dqn.seed, "Random seed")->capture_default_str();
  cmd->add_option("--hidden", o.dqn.hidden, "Hidden layer sizes of the network");
  cmd->add_option("--dagger-rounds", o.imitation.dagger_rounds, "DAgger rounds after pre-training on the experts")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--polish-updates", o.imitation.polish_updates,
                  "Steps on the experts' own states alone after the DAgger rounds (0: none)")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  cmd->add_option("--repeat-crowding-mistakes", o.imitation.repeat_crowding_mistakes,
                  "DAgger: the states where the network kept a tensor the expert evicts and its room crowded out a "
                  "clipped DRAM label enter the aggregate twice")
      ->capture_default_str();
  cmd->add_option("--room-labels", o.imitation.room_labels,
                  "DAgger labels that price the room: where the rollout's kept tensors crowd out a DRAM label, "
                  "the cheapest of them to evict are labelled slow")
      ->capture_default_str();
  AddEnumOption(cmd, "--expert-choice", o.imitation.expert_choice, ParseExpertChoice, ExpertChoiceName,
                "Of the --demonstrations, imitate on each workload the fastest as the MDP replays it (episode) or "
                "the fastest once that replay's copies are scheduled and it is polished (finished); finished also "
                "ranks the portfolio's rounds by their greedy plans finished so");
  cmd->add_option("--weight-mean-from-round", o.imitation.weight_mean_from_round,
                  "From this round on (DAgger rounds and polish chunks), average the network's weights; the mean "
                  "competes with the rounds' snapshots on the (validation) score (-1: off)")
      ->check(CLI::Range(-1, 100000))
      ->capture_default_str();
  cmd->add_option("--portfolio-size", o.imitation.portfolio_size,
                  "Rounds kept as the portfolio (checkpoints/portfolio/), the best scores first: on a model none "
                  "of them saw, the fastest of their greedy plans is chosen at plan time (bench dqn+portfolio, "
                  "train --init); 1: the best round alone")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--seeds", o.seeds,
                  "Imitate from this many seeds (--seed, +1, ...) on the same experts: the best seed's network is "
                  "kept, and the portfolio holds every seed's best rounds (each seed adds one imitation's time)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--max-seconds", o.imitation.max_seconds, "Stop imitating after this many seconds (0 = no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--resident-slot-bytes", o.resident_slot_bytes,
                  "Decision slots the workloads' environments hold at once (bytes, or with a unit: 512MiB, 2GiB); "
                  "the workloads past it build theirs for each rollout: less memory, slower")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
}

}  // namespace tensortier
