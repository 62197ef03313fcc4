// Issue 16: every plan the cost model accepts executes as planned on any
// model, not only on the zoo. Two TorchScript modules are made here, with
// the operations the zoo's models lack: a dense block (every layer reads the
// concatenation of all before it), a channel shuffle (view, transpose,
// contiguous, view), an in-place ReLU, and a transformer block (layer norm,
// attention's matmuls and softmax, GELU, residual adds). Each is profiled,
// and the baselines' plans at DRAM 0.2 x peak run on real iterations: no
// allocation may overflow the limit, and no planned migration may be
// refused or skipped.
//
// Both failed before the profile marked the bytes a TorchScript module keeps
// through the CPU allocator (its debug records: no tensor's storage, so no
// executor can move them) as pinned in DRAM: plans sent them to the slow
// tier, the executor could not move them, and the DRAM they held made moves
// into DRAM overflow the limit (docs/results/executor.md).
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "evaluation/benchmark.h"
#include "executor/executor.h"
#include "tests/common/profiled_workload.h"
#include "tests/evaluation/measured_benchmark.h"

namespace tensortier {
namespace {

// Parameters drawn from a fixed seed, so that the module is the same every run.
struct ModuleParams {
  explicit ModuleParams(torch::jit::Module& m) : module(m) { torch::manual_seed(5); }
  torch::jit::Module& module;
  void Add(const std::string& name, std::vector<int64_t> shape, double scale) {
    module.register_parameter(name, torch::randn(shape) * scale, false);
  }
};

torch::jit::Module DenseShuffleNet() {
  torch::jit::Module m("DenseShuffleNet");
  ModuleParams p(m);
  p.Add("w0", {16, 3, 3, 3}, 0.2);
  p.Add("b0", {16}, 0.0);
  p.Add("w1", {8, 16, 3, 3}, 0.1);
  p.Add("b1", {8}, 0.0);
  p.Add("w2", {8, 24, 3, 3}, 0.1);
  p.Add("b2", {8}, 0.0);
  p.Add("w3", {8, 32, 3, 3}, 0.1);
  p.Add("b3", {8}, 0.0);
  p.Add("w4", {32, 40, 3, 3}, 0.1);
  p.Add("b4", {32}, 0.0);
  p.Add("w5", {32, 10}, 0.2);
  p.Add("b5", {10}, 0.0);
  m.define(R"JIT(
    def forward(self, x):
        h = torch.relu(torch.conv2d(x, self.w0, self.b0, [1, 1], [1, 1]))
        c1 = torch.cat([h, torch.relu(torch.conv2d(h, self.w1, self.b1, [1, 1], [1, 1]))], 1)
        c2 = torch.cat([c1, torch.relu(torch.conv2d(c1, self.w2, self.b2, [1, 1], [1, 1]))], 1)
        c3 = torch.cat([c2, torch.relu(torch.conv2d(c2, self.w3, self.b3, [1, 1], [1, 1]))], 1)
        n = c3.size(0)
        s = c3.size(2)
        g = c3.view([n, 4, 10, s, s]).transpose(1, 2).contiguous().view([n, 40, s, s])
        d = torch.relu_(torch.conv2d(g, self.w4, self.b4, [2, 2], [1, 1]))
        f = torch.adaptive_avg_pool2d(d, [1, 1]).flatten(1)
        return torch.matmul(f, self.w5) + self.b5
  )JIT");
  return m;
}

torch::jit::Module TinyTransformer() {
  torch::jit::Module m("TinyTransformer");
  ModuleParams p(m);
  p.Add("we", {32, 3, 8, 8}, 0.05);
  p.Add("be", {32}, 0.0);
  for (const char* norm : {"g1", "g2"}) m.register_parameter(norm, torch::ones({32}), false);
  for (const char* shift : {"n1", "n2"}) p.Add(shift, {32}, 0.0);
  for (const char* w : {"wq", "wk", "wv", "wo"}) p.Add(w, {32, 32}, 0.15);
  p.Add("w1", {32, 64}, 0.15);
  p.Add("w2", {64, 32}, 0.1);
  p.Add("wh", {32, 10}, 0.2);
  p.Add("bh", {10}, 0.0);
  m.define(R"JIT(
    def forward(self, x):
        t = torch.conv2d(x, self.we, self.be, [8, 8], [0, 0]).flatten(2).transpose(1, 2)
        a = torch.layer_norm(t, [32], self.g1, self.n1, 1e-5)
        q = torch.matmul(a, self.wq)
        k = torch.matmul(a, self.wk)
        v = torch.matmul(a, self.wv)
        att = torch.softmax(torch.matmul(q, k.transpose(1, 2)) * 0.17, -1)
        t = t + torch.matmul(torch.matmul(att, v), self.wo)
        h = torch.layer_norm(t, [32], self.g2, self.n2, 1e-5)
        t = t + torch.matmul(torch.gelu(torch.matmul(h, self.w1)), self.w2)
        return torch.matmul(t.mean(1), self.wh) + self.bh
  )JIT");
  return m;
}

// `module` saved, profiled once on the emulated slow tier (times derived
// from sizes, so that the ILP's plan does not move with the host's load).
Workload Profiled(torch::jit::Module module, const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/outside_the_zoo_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name + ".pt";
  module.save(path);
  RunnerOptions r = ZooRunnerOptions("torchscript", 2, 32, "emulated:optane-dcpmm");
  r.model.torchscript_path = path;
  return testing::ProfiledWithTimesFromSizes(r);
}

void ExpectBaselinePlansExecuteAsPlanned(const Workload& w) {
  // Whatever the profile pinned is a buffer the step never touches, not
  // one of the module's parameters.
  for (const Tensor& t : w.tensors)
    if (t.pinned_dram) {
      EXPECT_EQ(t.name.rfind("untracked:", 0), 0u) << t.name;
    }
  const BenchmarkOptions o = testing::MeasuredBenchmark({"first-touch", "sentinel", "autotm-sync", "ca-lm"}, 0.2, 1);
  const std::vector<BenchmarkRow> rows = RunBenchmark(w, o);
  ASSERT_EQ(rows.size(), o.policies.size());
  for (const BenchmarkRow& r : rows) {
    ASSERT_TRUE(r.measured) << w.name << " " << r.policy << ": " << r.note;
    EXPECT_EQ(r.oom_events, 0u) << w.name << " " << r.policy;
    EXPECT_EQ(r.migrations_refused, 0u) << w.name << " " << r.policy << ": " << r.note;
    EXPECT_EQ(r.migrations_skipped, 0u) << w.name << " " << r.policy << ": " << r.note;
    EXPECT_LE(r.dram_peak_bytes, r.dram_limit_bytes) << w.name << " " << r.policy;
  }
  // AutoTM's plan moves tensors during the iteration: the checks above are
  // about migrations that happened, not a plan with none.
  EXPECT_GT(rows[2].measured_bytes_migrated, 0u) << w.name;
}

TEST(OutsideTheZoo, BaselinePlansExecuteAsPlannedOnADenseBlockWithAChannelShuffle) {
  const Workload w = Profiled(DenseShuffleNet(), "dense_shuffle");
  EXPECT_EQ(w.name, "dense_shuffle");
  EXPECT_GT(w.num_kernels(), 20u);
  ExpectBaselinePlansExecuteAsPlanned(w);
}

TEST(OutsideTheZoo, BaselinePlansExecuteAsPlannedOnATransformerBlock) {
  const Workload w = Profiled(TinyTransformer(), "tiny_transformer");
  EXPECT_GT(w.num_kernels(), 20u);
  ExpectBaselinePlansExecuteAsPlanned(w);
}

}  // namespace
}  // namespace tensortier
