// `train` and `learner` bind their flags to the library's settings: with no
// flags they run what a default-constructed LearnerConfig runs, and every
// flag lands in its field.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cli/training_flags.h"

namespace tensortier {
namespace {

// Parses `args` after the subcommand name, as main.cc's `train` does.
TrainingFlags Parse(std::vector<std::string> args) {
  CLI::App app;
  TrainingFlags flags;
  CLI::App* train = app.add_subcommand("train");
  AddTrainingOptions(train, flags);
  args.insert(args.begin(), "train");
  std::reverse(args.begin(), args.end());  // CLI11 takes argv reversed
  app.parse(args);
  return flags;
}

void ExpectSameEnv(const EnvConfig& got, const EnvConfig& want) {
  EXPECT_EQ(got.dram_limit_bytes, want.dram_limit_bytes);
  EXPECT_EQ(got.scope, want.scope);
  EXPECT_EQ(got.step_reward, want.step_reward);
  EXPECT_EQ(got.oom_handling, want.oom_handling);
  EXPECT_EQ(got.spill_penalty, want.spill_penalty);
  EXPECT_EQ(got.mode, want.mode);
  EXPECT_EQ(got.beta, want.beta);
  EXPECT_EQ(got.reward_fix, want.reward_fix);
  EXPECT_EQ(got.oom_penalty, want.oom_penalty);
  EXPECT_EQ(got.dram_price_per_gb, want.dram_price_per_gb);
  EXPECT_EQ(got.slow_price_per_gb, want.slow_price_per_gb);
}

TEST(TrainingFlags, TrainsWithTheLibrarysDefaults) {
  const LearnerConfig got = Parse({}).learner;
  const LearnerConfig want;
  EXPECT_EQ(got.dqn.ToJson(), want.dqn.ToJson());
  EXPECT_EQ(got.sac.ToJson(), want.sac.ToJson());
  ExpectSameEnv(got.env, want.env);
  EXPECT_EQ(got.agent, want.agent);
  EXPECT_EQ(got.episodes, want.episodes);
  EXPECT_EQ(got.heartbeat_interval_ms, want.heartbeat_interval_ms);
  EXPECT_EQ(got.weights_publish_interval_ms, want.weights_publish_interval_ms);
  EXPECT_EQ(got.heartbeat_liveness, want.heartbeat_liveness);
  EXPECT_EQ(got.checkpoint_interval_episodes, want.checkpoint_interval_episodes);
  EXPECT_EQ(got.max_seconds, want.max_seconds);
  EXPECT_EQ(got.eval_interval_episodes, want.eval_interval_episodes);
  EXPECT_EQ(got.replay, want.replay);
  EXPECT_EQ(got.priority_alpha, want.priority_alpha);
  EXPECT_EQ(got.priority_beta, want.priority_beta);
  EXPECT_EQ(got.samples_per_insert, want.samples_per_insert);
  EXPECT_EQ(got.rate_limit_error_buffer, want.rate_limit_error_buffer);
  EXPECT_EQ(got.exploration, want.exploration);
  EXPECT_EQ(got.apex_epsilon, want.apex_epsilon);
  EXPECT_EQ(got.apex_alpha, want.apex_alpha);
  EXPECT_EQ(got.apex_workers, want.apex_workers);
  EXPECT_EQ(got.converge_window, want.converge_window);
  EXPECT_EQ(got.converge_tolerance, want.converge_tolerance);
  EXPECT_EQ(got.checkpoints_kept, want.checkpoints_kept);
  EXPECT_EQ(got.imitation.room_labels, want.imitation.room_labels);
  EXPECT_EQ(got.self_imitation.imitation.room_labels, want.self_imitation.imitation.room_labels);
  EXPECT_EQ(got.plan_search.max_seconds, want.plan_search.max_seconds);
  // The one difference, on purpose: the service serves metrics ('off' turns
  // them off); an embedded learner serves none unless asked.
  EXPECT_EQ(got.metrics_address, "127.0.0.1:0");
  EXPECT_EQ(want.metrics_address, "");
}

// The comparison holds the strongest network-free planners, so that the
// verdict "the learned plan is the fastest" cannot come from leaving them
// out; a list the user names is taken as it is.
TEST(TrainingFlags, TheDefaultComparisonHasTheRelaxationAndInAsyncModeAutoTmsAsyncFormulation) {
  const TrainingFlags defaults = Parse({});
  const std::vector<std::string> sync = ComparisonBaselines(defaults, MigrationMode::kSync);
  EXPECT_EQ(sync, (std::vector<std::string>{"sentinel", "autotm-sync", "ca-lm", "relaxation"}));
  std::vector<std::string> async = sync;
  async.push_back("autotm-async");
  EXPECT_EQ(ComparisonBaselines(defaults, MigrationMode::kAsync), async);
  const TrainingFlags named = Parse({"--baselines", "sentinel", "autotm-sync"});
  for (MigrationMode mode : {MigrationMode::kSync, MigrationMode::kAsync})
    EXPECT_EQ(ComparisonBaselines(named, mode), (std::vector<std::string>{"sentinel", "autotm-sync"}));
  EXPECT_EQ(ComparisonBaselines(Parse({"--baselines", "none"}), MigrationMode::kAsync),
            std::vector<std::string>{"none"});
}

// One flag sets what DQN and SAC share, so their defaults must agree.
TEST(TrainingFlags, SharedSettingsHaveOneDefault) {
  const DqnConfig dqn;
  const SacConfig sac;
  EXPECT_EQ(dqn.hidden, sac.hidden);
  EXPECT_EQ(dqn.batch_size, sac.batch_size);
  EXPECT_EQ(dqn.updates_per_episode, sac.updates_per_episode);
  EXPECT_EQ(dqn.learning_starts, sac.learning_starts);
  EXPECT_EQ(dqn.gamma, sac.gamma);
  EXPECT_EQ(dqn.seed, sac.seed);
  EXPECT_EQ(dqn.device, sac.device);
  EXPECT_EQ(sac.actor_learning_rate, sac.critic_learning_rate);
}

TEST(TrainingFlags, EveryFlagLandsInItsField) {
  const TrainingFlags f = Parse({"--agent", "sac", "--mode", "async", "--decision-scope", "relevant", "--beta", "0.25", "--spill-penalty", "2",
                                 "--seed", "9", "--hidden", "48", "24", "--lr", "5e-4", "--batch-size", "8",
                                 "--updates-per-episode", "3", "--epsilon-decay-episodes", "77",
                                 "--learning-starts", "99", "--target-update-interval", "11", "--gamma", "0.9",
                                 "--sac-lr", "1e-3", "--sac-alpha-lr", "2e-3", "--sac-tau", "0.1",
                                 "--sac-target-entropy-scale", "0.3", "--sac-reward-scale", "0.5", "--device", "cpu",
                                 "--episodes", "12", "--heartbeat-ms", "250", "--checkpoint-every", "5",
                                 "--max-seconds", "60", "--metrics-address", "off", "--replay", "prioritized",
                                 "--samples-per-insert", "4", "--exploration", "apex", "--apex-epsilon", "0.3",
                                 "--apex-alpha", "5", "--eval-every", "6", "--converge-window", "4",
                                 "--converge-tolerance", "0.02", "--workload", "synthetic:tiny", "--dram-fraction",
                                 "0.5", "--out", "run", "--polish-updates", "4500", "--self-imitation-rounds", "3",
                                 "--init-search-starts", "2", "--room-labels", "true", "--init", "runs/other",
                                 "--search-seconds", "30", "--expert-choice", "finished",
                                 "--search-polish-share", "0.5", "--no-search-from-baseline"});
  const LearnerConfig& c = f.learner;
  EXPECT_EQ(c.plan_search.max_seconds, 30.0);
  EXPECT_EQ(c.plan_search.polish_share, 0.5);
  EXPECT_EQ(c.imitation.polish_updates, 4500);
  EXPECT_EQ(c.imitation.expert_choice, ExpertChoice::kFinished);
  EXPECT_EQ(c.self_imitation.rounds, 3);
  EXPECT_EQ(c.self_imitation.portfolio_search_starts, 2);
  EXPECT_TRUE(c.imitation.room_labels);  // one flag, both phases' labels
  EXPECT_TRUE(c.self_imitation.imitation.room_labels);
  EXPECT_EQ(c.init_checkpoint, "runs/other");  // main.cc's BuildLearnerConfig resolves a run directory
  EXPECT_EQ(c.agent, AgentKind::kSac);
  EXPECT_EQ(c.env.mode, MigrationMode::kAsync);
  EXPECT_EQ(c.env.scope, DecisionScope::kRelevant);
  EXPECT_EQ(c.env.beta, 0.25);
  EXPECT_EQ(c.env.spill_penalty, 2.0);
  for (uint64_t seed : {c.dqn.seed, c.sac.seed}) EXPECT_EQ(seed, 9u);
  for (const std::vector<int>& h : {c.dqn.hidden, c.sac.hidden}) EXPECT_EQ(h, (std::vector<int>{48, 24}));
  EXPECT_EQ(c.dqn.learning_rate, 5e-4);
  for (int b : {c.dqn.batch_size, c.sac.batch_size}) EXPECT_EQ(b, 8);
  for (int u : {c.dqn.updates_per_episode, c.sac.updates_per_episode}) EXPECT_EQ(u, 3);
  EXPECT_EQ(c.dqn.epsilon_decay_episodes, 77);
  for (int l : {c.dqn.learning_starts, c.sac.learning_starts}) EXPECT_EQ(l, 99);
  EXPECT_EQ(c.dqn.target_update_interval, 11);
  for (double g : {c.dqn.gamma, c.sac.gamma}) EXPECT_EQ(g, 0.9);
  EXPECT_EQ(c.sac.actor_learning_rate, 1e-3);
  EXPECT_EQ(c.sac.critic_learning_rate, 1e-3);
  EXPECT_EQ(c.sac.alpha_learning_rate, 2e-3);
  EXPECT_EQ(c.sac.tau, 0.1);
  EXPECT_EQ(c.sac.target_entropy_scale, 0.3);
  EXPECT_EQ(c.sac.reward_scale, 0.5);
  for (const std::string& d : {c.dqn.device, c.sac.device}) EXPECT_EQ(d, "cpu");
  EXPECT_EQ(c.episodes, 12u);
  EXPECT_EQ(c.heartbeat_interval_ms, 250u);
  EXPECT_EQ(c.checkpoint_interval_episodes, 5u);
  EXPECT_EQ(c.max_seconds, 60.0);
  EXPECT_EQ(c.metrics_address, "off");  // main.cc's BuildLearnerConfig turns it into none
  EXPECT_EQ(c.replay, ReplayKind::kPrioritized);
  EXPECT_EQ(c.samples_per_insert, 4.0);
  EXPECT_EQ(c.exploration, ExplorationKind::kApex);
  EXPECT_EQ(c.apex_epsilon, 0.3);
  EXPECT_EQ(c.apex_alpha, 5.0);
  EXPECT_EQ(c.eval_interval_episodes, 6u);
  EXPECT_EQ(c.converge_window, 4u);
  EXPECT_EQ(c.converge_tolerance, 0.02);
  EXPECT_EQ(f.workload, "synthetic:tiny");
  EXPECT_EQ(f.dram_fraction, 0.5);
  EXPECT_EQ(f.out, "run");
  EXPECT_FALSE(f.search_from_baseline);
  EXPECT_TRUE(Parse({}).search_from_baseline);
}

TEST(TrainingFlags, AnUnknownNameIsRefusedWithTheChoices) {
  for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
           {"--agent", "agent must be dqn or sac, not 'ppo'"},
           {"--replay", "replay must be uniform or prioritized, not 'ppo'"},
           {"--exploration", "exploration must be schedule or apex, not 'ppo'"},
           {"--mode", "mode must be sync or async, not 'ppo'"},
           {"--decision-scope", "unknown decision scope 'ppo' (access-gaps, relevant or all-live)"},
           {"--expert-choice", "expert choice must be episode or finished, not 'ppo'"}}) {
    try {
      Parse({flag, "ppo"});
      ADD_FAILURE() << flag << " ppo accepted";
    } catch (const CLI::ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// `train --help` is grouped: every training flag is in a group of its own
// kind, none left in CLI11's catch-all "Options".
TEST(TrainingFlags, EveryFlagHasAHelpGroup) {
  CLI::App app;
  TrainingFlags flags;
  CLI::App* train = app.add_subcommand("train");
  AddTrainingOptions(train, flags);
  std::set<std::string> groups;
  for (const CLI::Option* opt : train->get_options()) {
    if (opt == train->get_help_ptr()) continue;
    EXPECT_NE(opt->get_group(), "Options") << opt->get_name();
    groups.insert(opt->get_group());
  }
  EXPECT_GE(groups.size(), 6u);
  const std::string help = train->help();
  EXPECT_LT(help.find("What to train on, and the run:"), help.find("SAC:"));
  EXPECT_THROW(PutInHelpGroups(train, {{"x", {"--no-such-flag"}}}), std::logic_error);
}

// `pretrain`: with no flags the library's defaults (the tuned ones); the
// slot budget takes bytes or a unit, and a word is refused.
TEST(TrainingFlags, PretrainBindsTheCorpusOptionsAndTheSlotBudgetTakesUnits) {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    CorpusPretrainingOptions o;
    CLI::App* cmd = app.add_subcommand("pretrain");
    AddPretrainOptions(cmd, o);
    args.insert(args.begin(), {"pretrain", "--workloads", "synthetic:vgg:4", "--out", "x"});
    std::reverse(args.begin(), args.end());
    app.parse(args);
    return o;
  };
  const CorpusPretrainingOptions defaults;
  const CorpusPretrainingOptions plain = parse({});
  EXPECT_EQ(plain.resident_slot_bytes, defaults.resident_slot_bytes);
  EXPECT_EQ(plain.imitation.polish_updates, defaults.imitation.polish_updates);
  EXPECT_EQ(plain.experts, defaults.experts);
  EXPECT_EQ(plain.imitation.room_labels, defaults.imitation.room_labels);
  EXPECT_EQ(parse({"--room-labels", "true"}).imitation.room_labels, true);
  EXPECT_EQ(parse({"--room-labels", "false"}).imitation.room_labels, false);
  EXPECT_EQ(plain.imitation.repeat_crowding_mistakes, defaults.imitation.repeat_crowding_mistakes);
  EXPECT_EQ(parse({"--repeat-crowding-mistakes", "true"}).imitation.repeat_crowding_mistakes, true);
  EXPECT_EQ(plain.imitation.weight_mean_from_round, defaults.imitation.weight_mean_from_round);
  EXPECT_EQ(parse({"--weight-mean-from-round", "10"}).imitation.weight_mean_from_round, 10);
  EXPECT_EQ(parse({"--weight-mean-from-round", "-1"}).imitation.weight_mean_from_round, -1);
  EXPECT_THROW(parse({"--weight-mean-from-round", "-2"}), CLI::ParseError);
  EXPECT_EQ(plain.imitation.expert_choice, defaults.imitation.expert_choice);
  EXPECT_EQ(parse({"--expert-choice", "finished"}).imitation.expert_choice, ExpertChoice::kFinished);
  EXPECT_EQ(plain.imitation.portfolio_size, defaults.imitation.portfolio_size);
  EXPECT_EQ(parse({"--portfolio-size", "3"}).imitation.portfolio_size, 3);
  EXPECT_EQ(parse({"--portfolio-size", "1"}).imitation.portfolio_size, 1);
  EXPECT_THROW(parse({"--portfolio-size", "0"}), CLI::ParseError);
  EXPECT_EQ(plain.seeds, defaults.seeds);
  EXPECT_EQ(parse({"--seeds", "4"}).seeds, 4);
  EXPECT_THROW(parse({"--seeds", "0"}), CLI::ParseError);
  EXPECT_EQ(plain.workloads, std::vector<std::string>{"synthetic:vgg:4"});
  EXPECT_EQ(parse({"--resident-slot-bytes", "1000"}).resident_slot_bytes, 1000u);
  EXPECT_EQ(parse({"--resident-slot-bytes", "256MiB"}).resident_slot_bytes, uint64_t{256} << 20);
  EXPECT_EQ(parse({"--resident-slot-bytes", "2GB"}).resident_slot_bytes, uint64_t{2} << 30);
  EXPECT_EQ(parse({"--resident-slot-bytes", "0"}).resident_slot_bytes, 0u);  // every workload takes turns
  EXPECT_THROW(parse({"--resident-slot-bytes", "lots"}), CLI::ParseError);
}

}  // namespace
}  // namespace tensortier
