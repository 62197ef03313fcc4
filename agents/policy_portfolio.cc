#include "agents/policy_portfolio.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

namespace tensortier {

std::vector<std::string> PortfolioCheckpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw std::runtime_error("portfolio: no checkpoint");
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& entry : std::filesystem::directory_iterator(path, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".ckpt") in_dir.push_back(entry.path().string());
      if (ec) throw std::runtime_error("portfolio " + path + ": " + ec.message());
      if (in_dir.empty()) throw std::runtime_error("portfolio " + path + ": no .ckpt file in the directory");
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::is_regular_file(path, ec)) {
      files.push_back(path);
    } else {
      throw std::runtime_error("portfolio " + path + ": neither an agent checkpoint nor a directory of them");
    }
  }
  return files;
}

std::vector<PortfolioMember> LoadPortfolio(const std::vector<std::string>& paths, const std::string& device) {
  std::vector<PortfolioMember> members;
  for (const std::string& file : PortfolioCheckpoints(paths)) {
    PortfolioMember m;
    m.path = file;
    try {
      m.agent = LoadAgentCheckpoint(file, device);
    } catch (const std::exception& e) {
      throw std::runtime_error("portfolio member " + file + ": " + e.what());
    }
    if (!members.empty() && m.agent->name() != members[0].agent->name())
      throw std::runtime_error("portfolio member " + file + " is a " + m.agent->name() + " network, " +
                               members[0].path + " a " + members[0].agent->name() + " one: one family per portfolio");
    members.push_back(std::move(m));
  }
  return members;
}

PortfolioChoice FastestGreedy(PlacementEnv& env, const std::vector<ActionScores>& policies) {
  if (policies.empty()) throw std::invalid_argument("FastestGreedy: no policy");
  const auto start = std::chrono::steady_clock::now();
  PortfolioChoice choice;
  for (size_t i = 0; i < policies.size(); ++i) {
    choice.greedy.push_back(PlayGreedy(env, policies[i]).summary);
    if (i > 0 && FasterEpisode(choice.greedy[i], choice.greedy[choice.member])) choice.member = i;
  }
  choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return choice;
}

PortfolioChoice FastestGreedy(PlacementEnv& env, const std::vector<PortfolioMember>& members) {
  std::vector<ActionScores> policies;
  for (const PortfolioMember& m : members) policies.push_back(ScoresOf(*m.agent));
  return FastestGreedy(env, policies);
}

PortfolioSearch SearchFromFastest(PlacementEnv& env, const std::vector<PortfolioMember>& members,
                                  const PortfolioChoice& choice, const PlanSearchOptions& options, int starts,
                                  const std::function<void(const PlanSearchResult&)>& on_search) {
  if (starts < 1) throw std::invalid_argument("SearchFromFastest: starts must be at least 1");
  if (choice.greedy.size() != members.size() || choice.member >= members.size())
    throw std::invalid_argument("SearchFromFastest: the choice is of " + std::to_string(choice.greedy.size()) +
                                " members, the portfolio has " + std::to_string(members.size()));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  // The members by their greedy episodes, fastest first; the chosen one
  // leads (the first of equals, as FastestGreedy takes).
  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const EpisodeSummary &x = choice.greedy[a], &y = choice.greedy[b];
    return x.oom != y.oom ? !x.oom : x.cost.total_ns < y.cost.total_ns;
  });
  std::iter_swap(order.begin(), std::find(order.begin(), order.end(), choice.member));
  const size_t n = std::min(members.size(), static_cast<size_t>(starts));
  PortfolioSearch result;
  for (size_t k = 0; k < n; ++k) {
    PlanSearchOptions o = options;
    if (o.max_seconds > 0 && k > 0) {
      const double left = o.max_seconds - elapsed();
      if (left <= 0) break;
      o.max_seconds = left;
    }
    PlanSearchResult searched = SearchPlan(env, ScoresOf(*members[order[k]].agent), o);
    ++result.searches;
    if (on_search) on_search(searched);
    if (k == 0 || FasterEpisode(searched.best, result.best.best)) {
      result.best = std::move(searched);
      result.member = order[k];
    }
  }
  result.seconds = elapsed();
  return result;
}

}  // namespace tensortier
