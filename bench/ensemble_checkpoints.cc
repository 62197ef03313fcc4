// Folds DQN checkpoints of one shape into one whose Q-values are their mean
// (agents/q_ensemble.h), for zero-shot experiments (docs/results/learning.md).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "agents/q_ensemble.h"

int main(int argc, char** argv) {
  CLI::App app{"Fold DQN checkpoints into one network whose Q-values are their mean"};
  std::vector<std::string> paths;
  std::string out;
  app.add_option("--checkpoints", paths, "DQN agent checkpoints (.ckpt) of one network shape")->required();
  app.add_option("--out", out, "the folded checkpoint to write")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::unique_ptr<tensortier::DqnAgent>> agents;
    std::vector<const tensortier::DqnAgent*> members;
    for (const auto& p : paths) {
      agents.push_back(tensortier::DqnAgent::FromCheckpoint(p, "cpu"));
      members.push_back(agents.back().get());
    }
    auto folded = tensortier::FoldQEnsemble(members);
    folded->SaveCheckpoint(out);
    std::cout << "wrote " << out << ": " << members.size() << " members, hidden";
    for (int w : folded->config().hidden) std::cout << " " << w;
    std::cout << "\n";
  } catch (const std::exception& e) {
    std::cerr << "ensemble_checkpoints: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
