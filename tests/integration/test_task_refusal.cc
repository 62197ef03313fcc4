// A task no worker can accept ends the run with one error that says what
// differs, instead of every worker refusing it forever (issue 17).
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "tests/integration/fleet_harness.h"

namespace tensortier {
namespace {

// A worker whose profile of the task's model differs in one tensor's size:
// what a corrupted workload file looks like to every worker.
class MismatchedProfileEvaluator : public CostModelEvaluator {
 public:
  void Prepare(const Workload& w, const EnvConfig&) override {
    Workload profiled = w;
    profiled.tensors[1].size_bytes += 64;
    throw std::runtime_error("profile differs (" + DescribeWorkloadDifference(profiled, w) + ")");
  }
};

TEST(TaskRefusal, TheDifferenceNamesTheSignaturesAndWhatDiffers) {
  const Workload w = LoadWorkloadSpec("synthetic:tiny:3:65536");
  EXPECT_EQ(DescribeWorkloadDifference(w, w), "");
  Workload other = w;
  other.tensors[2].size_bytes += 8;
  const std::string d = DescribeWorkloadDifference(other, w);
  EXPECT_NE(d.find("signature "), std::string::npos) << d;
  EXPECT_NE(d.find("tensor 2 '" + w.tensors[2].name + "' bytes: " + std::to_string(other.tensors[2].size_bytes) +
                   " here, " + std::to_string(w.tensors[2].size_bytes) + " in the task"),
            std::string::npos)
      << d;
  other = w;
  other.accesses[0].writes += 1;
  EXPECT_NE(DescribeWorkloadDifference(other, w).find("access 0 writes"), std::string::npos);
}

TEST(TaskRefusal, ARunNoWorkerCanTakeEndsWithOneClearError) {
  LearnerConfig c = testing::TinyLearner(5);
  c.workload.model.name = "corrupted";  // workers with a real evaluator prepare it
  c.task_refusal_give_up_seconds = 0.5;
  c.max_seconds = 120;  // a backstop: without the give-up the run waited forever
  Learner learner(c);
  LearnerResult result;
  std::thread serve([&] { result = learner.Run(); });
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    WorkerConfig wc;
    wc.learner_endpoint = learner.endpoint();
    wc.give_up_seconds = 60;
    wc.make_real_evaluator = [] { return std::make_unique<MismatchedProfileEvaluator>(); };
    workers.push_back(std::make_unique<Worker>(wc, std::make_unique<CostModelEvaluator>()));
  }
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
  serve.join();
  for (auto& w : workers) w->Stop();
  for (auto& t : threads) t.join();

  EXPECT_EQ(result.episodes, 0u);
  EXPECT_GE(result.counters.tasks_refused, 2u);
  EXPECT_EQ(result.counters.worker_errors, 0u);
  EXPECT_NE(result.failure.find("no worker accepted the task"), std::string::npos) << result.failure;
  EXPECT_NE(result.failure.find("tensor 1 '"), std::string::npos) << result.failure;
  EXPECT_NE(result.failure.find("signature "), std::string::npos) << result.failure;
}

}  // namespace
}  // namespace tensortier
