// A LibTorch training loop that applies an exported TensorTier policy while
// it trains, and compares iteration times in the same process:
//
//   default allocator     the job as it runs without TensorTier (all DRAM)
//   all-DRAM              through TensorTier's allocator and executor, nothing in the slow tier
//   lookup                the plan from the lookup file, under its DRAM budget
//   all-slow              every tensor in the slow tier
//
//   torch_host LOOKUP_FILE [--model zoo:resnet18 | cnn | torchscript:PATH | PATH.pt] [--batch 2]
//              [--image 32] [--iterations 5] [--rounds 3] [--slow-tier auto] [--dram-budget BYTES]
//
// `zoo:NAME` trains a model of TensorTier's zoo, the same job `tensortier
// train` profiles, so a policy trained on it is applied through its plan
// table. `cnn` trains a small CNN defined here, a model the policy never saw:
// it gets a plan from the generalised lookup. `torchscript:PATH` (or a path
// to the file) trains your own TorchScript module, whose forward(x) maps a
// [batch, 3, image, image] batch to logits, as `tensortier profile
// --torchscript PATH` does: the way to check an exported policy on your model
// before deploying it. A refused file, or a job no plan applies to, trains on
// with the default allocator.
#include <tensortier/tensortier_torch.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace th = tensortier::host;

namespace {

struct SmallCnnImpl : torch::nn::Module {
  SmallCnnImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 32, 3).padding(1)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(32))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)))),
        conv3(register_module("conv3", torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 64, 3).padding(1)))),
        fc(register_module("fc", torch::nn::Linear(64, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(conv1(x)));
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = torch::relu(conv3(x));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2, conv3;
  torch::nn::Linear fc;
};
TORCH_MODULE(SmallCnn);

// The host's own job: model, optimizer and one batch. What TensorTier needs
// of it is Step() and the tensors that outlive a step.
class CnnJob : public th::TrainingJob {
 public:
  CnnJob(int64_t batch, int64_t image) : batch_(batch) {
    torch::manual_seed(1);
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(),
                                                     torch::optim::SGDOptions(0.01).momentum(0.9));
    input_ = torch::randn({batch, 3, image, image});
    target_ = torch::randint(0, 10, {batch}, torch::kLong);
  }
  double Step() override {
    optimizer_->zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(input_), target_);
    loss.backward();
    optimizer_->step();
    return loss.item<double>();
  }
  std::vector<th::JobTensor> PersistentTensors() override {
    return th::JobTensorsOf(*model_, *optimizer_, input_, target_);
  }
  uint32_t batch_size() const override { return static_cast<uint32_t>(batch_); }
  std::string name() const override { return "example-cnn"; }

 private:
  int64_t batch_;
  SmallCnn model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  torch::Tensor input_, target_;
};

struct Args {
  std::string lookup;
  std::string model = "zoo:resnet18";
  int64_t batch = 2, image = 32;
  int iterations = 5, rounds = 3;
  std::string slow_tier = "auto";
  uint64_t dram_budget = 0;
};

bool IsFile(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

std::unique_ptr<th::TrainingJob> MakeJob(const Args& a) {
  if (a.model == "cnn") return std::make_unique<CnnJob>(a.batch, a.image);
  if (a.model.rfind("zoo:", 0) == 0) return th::MakeZooJob(a.model.substr(4), a.batch, a.image);
  if (a.model.rfind("torchscript:", 0) == 0) return th::MakeTorchScriptJob(a.model.substr(12), a.batch, a.image);
  if (IsFile(a.model)) return th::MakeTorchScriptJob(a.model, a.batch, a.image);
  throw std::invalid_argument("--model: zoo:NAME, cnn, torchscript:PATH or a TorchScript file, not '" + a.model +
                              "' (no such file)");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double NowNs() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* StateName(th::TieringState s) {
  return s == th::TieringState::kApplied ? "applied" : s == th::TieringState::kProfiling ? "profiling" : "default";
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", f.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (f == "--model") a.model = value();
    else if (f == "--batch") a.batch = std::atoll(value().c_str());
    else if (f == "--image") a.image = std::atoll(value().c_str());
    else if (f == "--iterations") a.iterations = std::max(1, std::atoi(value().c_str()));
    else if (f == "--rounds") a.rounds = std::max(1, std::atoi(value().c_str()));
    else if (f == "--slow-tier") a.slow_tier = value();
    else if (f == "--dram-budget") a.dram_budget = std::strtoull(value().c_str(), nullptr, 10);
    else if (!f.empty() && f[0] != '-' && a.lookup.empty()) a.lookup = f;
    else {
      std::fprintf(stderr,
                   "usage: %s LOOKUP_FILE [--model zoo:NAME|cnn|torchscript:PATH|PATH.pt] [--batch N] [--image N] "
                   "[--iterations N] [--rounds N] [--slow-tier SPEC] [--dram-budget BYTES]\n",
                   argv[0]);
      return 2;
    }
  }
  if (a.lookup.empty()) {
    std::fprintf(stderr, "usage: %s LOOKUP_FILE [options]; --help for them\n", argv[0]);
    return 2;
  }
  torch::set_num_threads(1);  // steadier timings on a shared host

  // 1. The job as it runs without TensorTier. A model that cannot be built
  // (unknown name, a file that is not a TorchScript module) ends the run here.
  std::vector<double> default_ns;
  {
    std::unique_ptr<th::TrainingJob> job;
    try {
      job = MakeJob(a);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
      return 2;
    }
    // Warm-up: a TorchScript module's profiling executor settles its graph
    // over the first runs (one warm-up step left the default row 26x slower).
    for (int i = 0; i < 3; ++i) job->Step();
    for (int i = 0; i < a.iterations * a.rounds; ++i) {
      const double t0 = NowNs();
      job->Step();
      default_ns.push_back(NowNs() - t0);
    }
  }

  // 2. The same job under TensorTier: constructed before the model so that
  // the model's tensors come from its allocator.
  th::TieredTrainingOptions options;
  options.slow_tier = a.slow_tier;
  options.dram_budget_bytes = a.dram_budget;
  th::TieredTraining tiering(a.lookup, options);
  std::unique_ptr<th::TrainingJob> job = MakeJob(a);
  double loss = 0;
  int steps = 0;
  while (tiering.status().state == th::TieringState::kProfiling && steps < 16) {
    loss = tiering.Step(*job);
    ++steps;
  }
  const th::TieringStatus& st = tiering.status();
  std::printf("model %s, batch %lld, image %lld: after %d steps (loss %.4f) TensorTier is %s: %s\n", a.model.c_str(),
              static_cast<long long>(a.batch), static_cast<long long>(a.image), steps, loss, StateName(st.state),
              st.reason.c_str());
  if (st.state != th::TieringState::kApplied) {
    for (int i = 0; i < a.iterations; ++i) loss = tiering.Step(*job);
    std::printf("trained on with the default allocator: loss %.4f after %d more steps\n", loss, a.iterations);
    return 0;
  }
  std::printf("signature %016llx, %u kernels, %u tensors, peak %.2f MiB; plan: %s, %u tensors in the slow tier, "
              "%u migrations, DRAM budget %.2f MiB; slow tier %s\n",
              static_cast<unsigned long long>(st.model_signature), st.kernels, st.tensors,
              st.peak_live_bytes / 1048576.0, st.plan_source.c_str(), st.slow_tensors, st.migrations,
              st.dram_budget_bytes / 1048576.0, st.backend.c_str());

  // 3. Placements in turn, `rounds` times: the lookup plan and all-slow, each
  // between two all-DRAM runs. A placement's "vs DRAM" is the median over
  // the rounds of its run's median over the mean of the all-DRAM runs beside
  // it: the host's speed drifts within a round (the same all-DRAM iteration
  // read 4.1 ms, then 6.7 ms, in one process). The first step after a switch
  // places the persistent tensors and is not measured.
  const char* names[] = {"all-DRAM (TensorTier)", "lookup plan", "all-slow"};
  const th::Placement placements[] = {th::Placement::kAllDram, th::Placement::kLookup, th::Placement::kAllSlow};
  std::vector<double> iteration_ns[3], ratios[3];
  uint64_t dram_peak[3] = {0, 0, 0}, oom_events[3] = {0, 0, 0};
  // One run of placement p: `iterations` measured steps; their median, or
  // -1 when TensorTier left the plan.
  auto run = [&](int p) {
    tiering.SetPlacement(placements[p]);
    loss = tiering.Step(*job);
    std::vector<double> ns;
    for (int i = 0; i < a.iterations; ++i) {
      loss = tiering.Step(*job);
      if (!tiering.applied()) return -1.0;
      ns.push_back(st.last_iteration_ns);
      dram_peak[p] = std::max(dram_peak[p], st.last_dram_peak_bytes);
      oom_events[p] += st.last_oom_events;
    }
    iteration_ns[p].insert(iteration_ns[p].end(), ns.begin(), ns.end());
    return Median(ns);
  };
  for (int r = 0; r < a.rounds; ++r) {
    double before = run(0);
    for (int p : {1, 2}) {
      const double plan = before < 0 ? -1 : run(p);
      const double after = plan < 0 ? -1 : run(0);
      if (after < 0) {
        std::printf("TensorTier left the plan: %s\n", st.reason.c_str());
        return 0;
      }
      ratios[p].push_back(plan / (0.5 * (before + after)));
      ratios[0].push_back(1.0);
      before = after;
    }
  }
  const double dram = Median(iteration_ns[0]);
  std::printf("\n%-24s %12s %10s %14s %10s\n", "placement", "median ms", "vs DRAM", "DRAM peak MiB", "OOM events");
  std::printf("%-24s %12.3f %9.3fx %14s %10s\n", "default allocator", Median(default_ns) / 1e6,
              Median(default_ns) / dram, "-", "-");
  for (int p = 0; p < 3; ++p)
    std::printf("%-24s %12.3f %9.3fx %14.2f %10llu\n", names[p], Median(iteration_ns[p]) / 1e6, Median(ratios[p]),
                dram_peak[p] / 1048576.0, static_cast<unsigned long long>(oom_events[p]));
  std::printf("(\"vs DRAM\": the median over the rounds of each run against the all-DRAM runs just before and after "
              "it; the default allocator's against all-DRAM's median, measured before TensorTier was set up)\n");
  std::printf("(%d rounds x %d iterations each; final loss %.4f)\n", a.rounds, a.iterations, loss);
  return 0;
}
