// A portfolio of networks: several snapshots of one training (`pretrain`
// keeps its best rounds, checkpoints/portfolio/), and the plan-time choice
// among them. On a model none of them saw, the greedy plans of a corpus's
// eight best-validated rounds differ by up to 13 points of all-DRAM's
// speed while their validation scores differ by under 2, so the corpus
// cannot say which snapshot to keep; the cost model of the model at hand
// can, by playing each one's greedy episode (docs/results/learning.md,
// session thirty-eight). The choice is a search at plan time: reports name it
// apart from any one network's greedy plan.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "envs/placement_env.h"
#include "envs/plan_search.h"

namespace tensortier {

// The agent checkpoints a portfolio names: each path is a .ckpt file, or a
// directory whose *.ckpt files are taken in name order. Throws
// std::runtime_error for a path that is neither, a directory without
// checkpoints, or no path.
std::vector<std::string> PortfolioCheckpoints(const std::vector<std::string>& paths);

struct PortfolioMember {
  std::string path;
  std::unique_ptr<PlacementAgent> agent;
};

// Loads every member (LoadAgentCheckpoint, which refuses another
// observation size) on `device`. Throws std::runtime_error naming the file
// for one that does not load, and for members of two agent families.
std::vector<PortfolioMember> LoadPortfolio(const std::vector<std::string>& paths, const std::string& device = "cpu");

struct PortfolioChoice {
  size_t member = 0;                      // the fastest greedy episode's (the first on a tie)
  std::vector<EpisodeSummary> greedy;     // each member's greedy episode, in order
  double seconds = 0;                     // to play them all: the choice's decision time
};

// Plays each policy's greedy episode in `env` (reset each time, left done)
// and names the fastest (FasterEpisode: one that fits before one that runs
// out of memory, then the cost model's time). Throws std::invalid_argument
// for no policy, and what the scores throw.
PortfolioChoice FastestGreedy(PlacementEnv& env, const std::vector<ActionScores>& policies);
PortfolioChoice FastestGreedy(PlacementEnv& env, const std::vector<PortfolioMember>& members);

struct PortfolioSearch {
  size_t member = 0;        // the member whose search found `best`
  size_t searches = 0;      // searches run
  PlanSearchResult best;    // that search's result
  double seconds = 0;       // all the searches'
};

// The plan-time search from several members: the `starts` members with the
// fastest greedy episodes in `choice` (choice.member first), in turn, each
// guided by its own network, while options.max_seconds lasts (the first
// search has all of it, so more starts never end below one), the fastest
// result kept. The members' searches end in different places, and the
// fastest greedy plan does not make the fastest search (docs/results/
// learning.md, session thirty-nine). `on_search` sees each search, for logs.
// Throws std::invalid_argument for starts < 1 or a choice of other members,
// and what the scores throw.
PortfolioSearch SearchFromFastest(PlacementEnv& env, const std::vector<PortfolioMember>& members,
                                  const PortfolioChoice& choice, const PlanSearchOptions& options, int starts,
                                  const std::function<void(const PlanSearchResult&)>& on_search = {});

}  // namespace tensortier
