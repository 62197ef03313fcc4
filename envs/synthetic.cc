#include "envs/synthetic.h"

#include <algorithm>
#include <array>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>

namespace tensortier {
namespace {

// Bandwidths behind the synthetic kernel times: DRAM as on a small server,
// the slow tier as one first-generation Optane DIMM (Izraelevitz et al.).
constexpr double kDramBytesPerSecond = 20e9;
constexpr double kSlowReadBytesPerSecond = 6.6e9;
constexpr double kSlowWriteBytesPerSecond = 2.3e9;

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {}

  uint32_t AddTensor(const std::string& name, uint64_t bytes, TensorKind kind, bool persistent = false) {
    Tensor t;
    t.name = name;
    t.size_bytes = std::max<uint64_t>(bytes, 4);
    t.kind = kind;
    t.persistent = persistent;
    tensors_.push_back(t);
    first_use_.push_back(UINT32_MAX);
    last_use_.push_back(0);
    return static_cast<uint32_t>(tensors_.size() - 1);
  }

  // A kernel that reads `reads` and writes `writes`; its DRAM time follows
  // the bytes it moves times a compute intensity, and each tensor's slow
  // penalty the extra transfer time scaled by how memory-bound the kernel is.
  uint32_t AddKernel(const std::string& name, const std::vector<uint32_t>& reads,
                     const std::vector<uint32_t>& writes, double intensity) {
    const uint32_t k = static_cast<uint32_t>(kernels_.size());
    std::uniform_real_distribution<double> boundness(0.3, 1.0);
    const double memory_bound = boundness(rng_) / intensity;
    uint64_t moved = 0;
    std::vector<Access> acc;
    auto touch = [&](uint32_t t, bool write) {
      for (Access& a : acc)
        if (a.tensor == t) {
          (write ? a.writes : a.reads) += 1;
          return;
        }
      Access a;
      a.kernel = k;
      a.tensor = t;
      (write ? a.writes : a.reads) = 1;
      acc.push_back(a);
    };
    for (uint32_t t : reads) touch(t, false);
    for (uint32_t t : writes) touch(t, true);
    for (Access& a : acc) {
      const double bytes = static_cast<double>(tensors_[a.tensor].size_bytes);
      moved += tensors_[a.tensor].size_bytes * (a.reads + a.writes);
      double extra = a.reads * bytes * (1 / kSlowReadBytesPerSecond - 1 / kDramBytesPerSecond) +
                     a.writes * bytes * (1 / kSlowWriteBytesPerSecond - 1 / kDramBytesPerSecond);
      a.slow_penalty_ns = extra * 1e9 * memory_bound;
      first_use_[a.tensor] = std::min(first_use_[a.tensor], k);
      last_use_[a.tensor] = std::max(last_use_[a.tensor], k);
      accesses_.push_back(a);
    }
    Kernel kernel;
    kernel.name = name;
    kernel.dram_time_ns = static_cast<double>(moved) / kDramBytesPerSecond * 1e9 * intensity + 2000.0;
    kernels_.push_back(kernel);
    return k;
  }

  std::mt19937_64& rng() { return rng_; }
  const std::string& tensor_name(uint32_t t) const { return tensors_[t].name; }
  uint64_t tensor_bytes(uint32_t t) const { return tensors_[t].size_bytes; }

  Workload Build(const std::string& name, const std::string& source, uint32_t batch) {
    Workload w;
    w.name = name;
    w.source = source;
    w.batch_size = batch;
    const uint32_t last = static_cast<uint32_t>(kernels_.size() - 1);
    for (size_t t = 0; t < tensors_.size(); ++t) {
      Tensor& x = tensors_[t];
      if (x.persistent || first_use_[t] == UINT32_MAX) {
        x.alloc_kernel = 0;
        x.free_kernel = last;
        x.persistent = true;
      } else {
        x.alloc_kernel = first_use_[t];
        x.free_kernel = last_use_[t];
      }
    }
    w.kernels = kernels_;
    w.tensors = tensors_;
    w.accesses = accesses_;
    w.device.name = "synthetic-optane";
    w.device.dram_to_slow_bytes_per_second = kSlowWriteBytesPerSecond;
    w.device.slow_to_dram_bytes_per_second = kSlowReadBytesPerSecond;
    w.Finalize();
    return w;
  }

 private:
  std::mt19937_64 rng_;
  std::vector<Kernel> kernels_;
  std::vector<Tensor> tensors_;
  std::vector<Access> accesses_;
  std::vector<uint32_t> first_use_, last_use_;
};

struct Layer {
  uint64_t activation_bytes;
  uint64_t weight_bytes;
  int small_params;       // batch-norm style parameters under one page
  double intensity;       // compute per byte moved
  int skip_from = -1;     // layer whose output this one adds (resnet)
};

std::vector<Layer> LayersFor(const SyntheticOptions& o, std::mt19937_64& rng) {
  std::vector<Layer> layers;
  std::uniform_real_distribution<double> jitter(0.8, 1.25);
  const double b = static_cast<double>(o.base_bytes);
  for (int l = 0; l < o.layers; ++l) {
    double depth = o.layers > 1 ? static_cast<double>(l) / (o.layers - 1) : 0.0;
    Layer x{};
    switch (o.shape) {
      case SyntheticShape::kVggLike:
        // Activations shrink with depth; weights grow, the classifier is huge.
        x.activation_bytes = static_cast<uint64_t>(b * 2.0 * (1.0 - 0.85 * depth) * jitter(rng));
        x.weight_bytes = static_cast<uint64_t>(b * (l == o.layers - 1 ? 3.0 : 0.1 + 0.6 * depth) * jitter(rng));
        x.small_params = 1;
        x.intensity = 3.0;
        break;
      case SyntheticShape::kResnetLike:
        x.activation_bytes = static_cast<uint64_t>(b * (1.0 - 0.5 * depth) * jitter(rng));
        x.weight_bytes = static_cast<uint64_t>(b * (0.05 + 0.3 * depth) * jitter(rng));
        x.small_params = 4;
        x.intensity = 2.0;
        if (l >= 2 && l % 2 == 0) x.skip_from = l - 2;
        break;
      case SyntheticShape::kMobilenetLike:
        x.activation_bytes = static_cast<uint64_t>(b * 0.6 * (1.0 - 0.6 * depth) * jitter(rng));
        // Depthwise filters: tiny.
        x.weight_bytes = static_cast<uint64_t>((l % 2 == 0 ? 1152.0 : b * 0.02) * jitter(rng));
        x.small_params = 6;
        x.intensity = 0.8;  // memory bound
        break;
      case SyntheticShape::kRnnLike:  // built by GenerateRecurrent, not from layers
      case SyntheticShape::kTransformerLike:  // built by GenerateTransformer
      case SyntheticShape::kTiny:
        x.activation_bytes = static_cast<uint64_t>(b * jitter(rng));
        x.weight_bytes = static_cast<uint64_t>(b * 0.5 * jitter(rng));
        x.small_params = 0;
        x.intensity = 1.0;
        break;
    }
    layers.push_back(x);
  }
  return layers;
}


// Two stacked GRU-like cells unrolled over `steps` time steps, then a
// classifier on the last hidden state. Sizes follow a small recurrent model
// at batch 32: the weights are large beside the per-step states.
Workload GenerateRecurrent(const SyntheticOptions& o) {
  constexpr int kCells = 2;
  const int steps = o.layers;
  Builder b(o.seed);
  std::uniform_real_distribution<double> jitter(0.8, 1.25);
  const double base = static_cast<double>(o.base_bytes);
  const uint64_t state_bytes = static_cast<uint64_t>(base * 0.04);
  const uint64_t gate_bytes = 3 * state_bytes;
  uint64_t weight_bytes[kCells][2];
  uint32_t weight[kCells][2], momentum[kCells][2], bias[kCells], bias_momentum[kCells];
  for (int c = 0; c < kCells; ++c) {
    const std::string n = "cell" + std::to_string(c);
    for (int m = 0; m < 2; ++m) {
      const std::string wn = n + (m == 0 ? ".weight_ih" : ".weight_hh");
      weight_bytes[c][m] = static_cast<uint64_t>(base * 0.4 * jitter(b.rng()));
      weight[c][m] = b.AddTensor(wn, weight_bytes[c][m], TensorKind::kParameter, true);
      momentum[c][m] = b.AddTensor(wn + ".momentum", weight_bytes[c][m], TensorKind::kOptimizerState, true);
    }
    bias[c] = b.AddTensor(n + ".bias", 6 * 1024, TensorKind::kParameter, true);
    bias_momentum[c] = b.AddTensor(n + ".bias.momentum", 6 * 1024, TensorKind::kOptimizerState, true);
  }
  const uint64_t head_bytes = static_cast<uint64_t>(base * 0.05);
  const uint32_t head = b.AddTensor("head.weight", head_bytes, TensorKind::kParameter, true);
  const uint32_t head_momentum = b.AddTensor("head.weight.momentum", head_bytes, TensorKind::kOptimizerState, true);

  // Inputs arrive as one tensor per step (rows of an image, tokens).
  std::vector<uint32_t> input(steps);
  for (int t = 0; t < steps; ++t)
    input[t] = b.AddTensor("input." + std::to_string(t), state_bytes / 2 + 64, TensorKind::kInput);
  std::vector<std::vector<uint32_t>> hidden(kCells, std::vector<uint32_t>(steps + 1));
  std::vector<std::vector<uint32_t>> gates(kCells, std::vector<uint32_t>(steps));
  for (int c = 0; c < kCells; ++c)
    hidden[c][0] = b.AddTensor("cell" + std::to_string(c) + ".h0", state_bytes, TensorKind::kActivation);

  for (int t = 0; t < steps; ++t)
    for (int c = 0; c < kCells; ++c) {
      const std::string n = "cell" + std::to_string(c) + "." + std::to_string(t);
      const uint32_t in = c == 0 ? input[t] : hidden[c - 1][t + 1];
      gates[c][t] = b.AddTensor(n + ".gates", gate_bytes, TensorKind::kActivation);
      const uint32_t workspace = b.AddTensor(n + ".workspace", gate_bytes, TensorKind::kTemporary);
      b.AddKernel("forward." + n + ".gates", {in, hidden[c][t], weight[c][0], weight[c][1], bias[c]},
                  {gates[c][t], workspace}, 2.0);
      hidden[c][t + 1] = b.AddTensor(n + ".h", state_bytes, TensorKind::kActivation);
      b.AddKernel("forward." + n + ".cell", {gates[c][t], hidden[c][t]}, {hidden[c][t + 1]}, 0.8);
    }
  const uint32_t logits = b.AddTensor("head.out", 4096, TensorKind::kActivation);
  b.AddKernel("forward.head", {hidden[kCells - 1][steps], head}, {logits}, 1.0);
  const uint32_t logits_grad = b.AddTensor("loss.grad", 4096, TensorKind::kGradient);
  b.AddKernel("loss", {logits}, {logits_grad}, 0.5);
  const uint32_t head_grad = b.AddTensor("head.weight.grad", head_bytes, TensorKind::kGradient);
  std::vector<uint32_t> hidden_grad(kCells, UINT32_MAX);
  hidden_grad[kCells - 1] = b.AddTensor("head.in.grad", state_bytes, TensorKind::kGradient);
  b.AddKernel("backward.head", {logits_grad, hidden[kCells - 1][steps], head}, {head_grad, hidden_grad[kCells - 1]},
              1.0);

  // Backward through time: each step's weight gradients are new tensors the
  // size of the weights, summed into the running gradients (autograd's
  // accumulation), so the sums are live across the whole backward pass. A
  // step's share waits kSumLag steps before it is summed, as in a profiled
  // GRU, where the shares live for several kernels while memory is tightest.
  constexpr size_t kSumLag = 2;
  uint32_t weight_grad[kCells][2], bias_grad[kCells];
  std::vector<std::deque<std::array<uint32_t, 2>>> waiting(kCells);
  auto sum_into = [&](int c, const std::array<uint32_t, 2>& share, std::vector<uint32_t>& reads,
                      std::vector<uint32_t>& writes) {
    for (int m = 0; m < 2; ++m) {
      reads.push_back(share[m]);
      if (weight_grad[c][m] == UINT32_MAX)
        weight_grad[c][m] = b.AddTensor("cell" + std::to_string(c) + (m == 0 ? ".weight_ih" : ".weight_hh") + ".grad",
                                        weight_bytes[c][m], TensorKind::kGradient);
      else
        reads.push_back(weight_grad[c][m]);
      writes.push_back(weight_grad[c][m]);
    }
  };
  for (int c = 0; c < kCells; ++c) {
    for (int m = 0; m < 2; ++m) weight_grad[c][m] = UINT32_MAX;
    bias_grad[c] = UINT32_MAX;
  }
  std::vector<uint32_t> input_grad(kCells, UINT32_MAX);  // to the cell below, this step
  for (int t = steps - 1; t >= 0; --t)
    for (int c = kCells - 1; c >= 0; --c) {
      const std::string n = "cell" + std::to_string(c) + "." + std::to_string(t);
      std::vector<uint32_t> cell_reads = {gates[c][t], hidden[c][t]};
      if (hidden_grad[c] != UINT32_MAX) cell_reads.push_back(hidden_grad[c]);
      if (c + 1 < kCells && input_grad[c + 1] != UINT32_MAX) cell_reads.push_back(input_grad[c + 1]);
      const uint32_t gates_grad = b.AddTensor(n + ".gates.grad", gate_bytes, TensorKind::kGradient);
      b.AddKernel("backward." + n + ".cell", cell_reads, {gates_grad}, 0.8);
      const uint32_t in = c == 0 ? input[t] : hidden[c - 1][t + 1];
      std::array<uint32_t, 2> share;
      for (int m = 0; m < 2; ++m)
        share[m] = b.AddTensor(n + (m == 0 ? ".weight_ih.grad" : ".weight_hh.grad"), weight_bytes[c][m],
                               TensorKind::kGradient);
      std::vector<uint32_t> writes = {share[0], share[1]};
      hidden_grad[c] = t > 0 ? b.AddTensor(n + ".h.grad", state_bytes, TensorKind::kGradient) : UINT32_MAX;
      if (hidden_grad[c] != UINT32_MAX) writes.push_back(hidden_grad[c]);
      input_grad[c] = c > 0 ? b.AddTensor(n + ".in.grad", state_bytes, TensorKind::kGradient) : UINT32_MAX;
      if (input_grad[c] != UINT32_MAX) writes.push_back(input_grad[c]);
      b.AddKernel("backward." + n + ".gates", {gates_grad, in, hidden[c][t], weight[c][0], weight[c][1]}, writes, 2.0);
      waiting[c].push_back(share);
      std::vector<uint32_t> sum_reads = {gates_grad};
      std::vector<uint32_t> sum_writes;
      if (waiting[c].size() > kSumLag) {
        sum_into(c, waiting[c].front(), sum_reads, sum_writes);
        waiting[c].pop_front();
      }
      if (bias_grad[c] == UINT32_MAX)
        bias_grad[c] = b.AddTensor("cell" + std::to_string(c) + ".bias.grad", 6 * 1024, TensorKind::kGradient);
      else
        sum_reads.push_back(bias_grad[c]);
      sum_writes.push_back(bias_grad[c]);
      b.AddKernel("backward." + n + ".accumulate", sum_reads, sum_writes, 0.6);
    }
  for (int c = 0; c < kCells; ++c) {
    std::vector<uint32_t> reads, writes;
    for (const auto& share : waiting[c]) sum_into(c, share, reads, writes);
    b.AddKernel("backward.cell" + std::to_string(c) + ".accumulate.last", reads, writes, 0.6);
  }

  for (int c = 0; c < kCells; ++c) {
    const std::string n = "cell" + std::to_string(c);
    b.AddKernel("optimizer." + n,
                {weight_grad[c][0], weight_grad[c][1], bias_grad[c], weight[c][0], weight[c][1], bias[c],
                 momentum[c][0], momentum[c][1], bias_momentum[c]},
                {weight[c][0], weight[c][1], bias[c], momentum[c][0], momentum[c][1], bias_momentum[c]}, 0.6);
  }
  b.AddKernel("optimizer.head", {head_grad, head, head_momentum}, {head, head_momentum}, 0.6);

  const std::string source = "synthetic:rnn-like steps=" + std::to_string(steps) +
                             " base_bytes=" + std::to_string(o.base_bytes) + " seed=" + std::to_string(o.seed);
  return b.Build("rnn-like-" + std::to_string(steps), source, o.batch_size);
}

// Pre-norm transformer encoder blocks over a batch of token sequences, a
// classifier over the vocabulary, trained with AdamW: two optimizer states
// per parameter, where the other shapes keep one. Each block keeps, for
// backward, its attention probabilities (heads x tokens^2, the largest
// activation at long sequences) and an MLP hidden activation four times the
// residual stream; its biases and norm gains are a few kilobytes each.
// Sizes follow a small ViT or BERT at batch 32.
Workload GenerateTransformer(const SyntheticOptions& o) {
  const int blocks = o.layers;
  Builder b(o.seed);
  std::uniform_real_distribution<double> jitter(0.8, 1.25);
  const double base = static_cast<double>(o.base_bytes);
  const uint64_t stream_bytes = static_cast<uint64_t>(base * 0.25);
  const uint64_t qkv_bytes = 3 * stream_bytes;
  const uint64_t hidden_bytes = 4 * stream_bytes;
  constexpr uint64_t kVectorBytes = 3 * 1024;  // a bias or a norm gain: one float per channel

  struct Param {
    uint32_t value, first_moment, second_moment;
    uint32_t grad = UINT32_MAX;
  };
  std::vector<Param> params;
  auto add_param = [&](const std::string& name, uint64_t bytes) {
    Param p;
    p.value = b.AddTensor(name, bytes, TensorKind::kParameter, true);
    p.first_moment = b.AddTensor(name + ".exp_avg", bytes, TensorKind::kOptimizerState, true);
    p.second_moment = b.AddTensor(name + ".exp_avg_sq", bytes, TensorKind::kOptimizerState, true);
    params.push_back(p);
    return params.size() - 1;
  };
  auto grad_of = [&](size_t p) {
    Param& x = params[p];
    if (x.grad == UINT32_MAX)
      x.grad = b.AddTensor(b.tensor_name(x.value) + ".grad", b.tensor_bytes(x.value), TensorKind::kGradient);
    return x.grad;
  };
  auto value = [&](size_t p) { return params[p].value; };

  const size_t embedding = add_param("embedding.weight", static_cast<uint64_t>(base * 0.3 * jitter(b.rng())));
  const size_t position = add_param("embedding.position", stream_bytes / 32 + 64);
  struct Block {
    size_t ln1_gain, ln1_bias, qkv, qkv_bias, proj, proj_bias, ln2_gain, ln2_bias, fc1, fc1_bias, fc2, fc2_bias;
    uint32_t x, h1, qkv_out, probs, ctx, x2, h2, u, g;
  };
  std::vector<Block> blk(blocks);
  for (int l = 0; l < blocks; ++l) {
    const std::string n = "block" + std::to_string(l);
    Block& k = blk[l];
    k.ln1_gain = add_param(n + ".norm1.weight", kVectorBytes);
    k.ln1_bias = add_param(n + ".norm1.bias", kVectorBytes);
    k.qkv = add_param(n + ".attn.qkv.weight", static_cast<uint64_t>(base * 0.15 * jitter(b.rng())));
    k.qkv_bias = add_param(n + ".attn.qkv.bias", 3 * kVectorBytes);
    k.proj = add_param(n + ".attn.proj.weight", static_cast<uint64_t>(base * 0.05 * jitter(b.rng())));
    k.proj_bias = add_param(n + ".attn.proj.bias", kVectorBytes);
    k.ln2_gain = add_param(n + ".norm2.weight", kVectorBytes);
    k.ln2_bias = add_param(n + ".norm2.bias", kVectorBytes);
    k.fc1 = add_param(n + ".mlp.fc1.weight", static_cast<uint64_t>(base * 0.2 * jitter(b.rng())));
    k.fc1_bias = add_param(n + ".mlp.fc1.bias", 4 * kVectorBytes);
    k.fc2 = add_param(n + ".mlp.fc2.weight", static_cast<uint64_t>(base * 0.2 * jitter(b.rng())));
    k.fc2_bias = add_param(n + ".mlp.fc2.bias", kVectorBytes);
  }
  const size_t final_gain = add_param("norm.weight", kVectorBytes);
  const size_t final_bias = add_param("norm.bias", kVectorBytes);
  const size_t head = add_param("head.weight", static_cast<uint64_t>(base * 0.3 * jitter(b.rng())));

  // Forward. Norms and the softmax are memory bound, the projections are
  // matrix products; each norm and the softmax write a scratch they read
  // again in the same kernel.
  const uint32_t tokens = b.AddTensor("input.tokens", stream_bytes / 64 + 64, TensorKind::kInput);
  uint32_t x = b.AddTensor("embedding.out", stream_bytes, TensorKind::kActivation);
  b.AddKernel("forward.embedding", {tokens, value(embedding), value(position)}, {x}, 0.8);
  auto scratch = [&](const std::string& name, uint64_t bytes) {
    return b.AddTensor(name, bytes, TensorKind::kTemporary);
  };
  for (int l = 0; l < blocks; ++l) {
    const std::string n = "block" + std::to_string(l);
    Block& k = blk[l];
    k.x = x;
    k.h1 = b.AddTensor(n + ".norm1.out", stream_bytes, TensorKind::kActivation);
    uint32_t stats = scratch(n + ".norm1.stats", 512);
    b.AddKernel("forward." + n + ".norm1", {x, value(k.ln1_gain), value(k.ln1_bias), stats}, {k.h1, stats}, 0.8);
    k.qkv_out = b.AddTensor(n + ".attn.qkv.out", qkv_bytes, TensorKind::kActivation);
    b.AddKernel("forward." + n + ".attn.qkv", {k.h1, value(k.qkv), value(k.qkv_bias)}, {k.qkv_out}, 3.0);
    const uint64_t probs_bytes = static_cast<uint64_t>(base * 0.5 * jitter(b.rng()));
    k.probs = b.AddTensor(n + ".attn.probs", probs_bytes, TensorKind::kActivation);
    const uint32_t scores = scratch(n + ".attn.scores", probs_bytes);
    b.AddKernel("forward." + n + ".attn.softmax", {k.qkv_out, scores}, {scores, k.probs}, 1.5);
    k.ctx = b.AddTensor(n + ".attn.context", stream_bytes, TensorKind::kActivation);
    b.AddKernel("forward." + n + ".attn.context", {k.probs, k.qkv_out}, {k.ctx}, 2.0);
    k.x2 = b.AddTensor(n + ".attn.residual", stream_bytes, TensorKind::kActivation);
    b.AddKernel("forward." + n + ".attn.proj", {k.ctx, value(k.proj), value(k.proj_bias), x}, {k.x2}, 3.0);
    k.h2 = b.AddTensor(n + ".norm2.out", stream_bytes, TensorKind::kActivation);
    stats = scratch(n + ".norm2.stats", 512);
    b.AddKernel("forward." + n + ".norm2", {k.x2, value(k.ln2_gain), value(k.ln2_bias), stats}, {k.h2, stats}, 0.8);
    k.u = b.AddTensor(n + ".mlp.fc1.out", hidden_bytes, TensorKind::kActivation);
    b.AddKernel("forward." + n + ".mlp.fc1", {k.h2, value(k.fc1), value(k.fc1_bias)}, {k.u}, 3.0);
    k.g = b.AddTensor(n + ".mlp.gelu.out", hidden_bytes, TensorKind::kActivation);
    b.AddKernel("forward." + n + ".mlp.gelu", {k.u}, {k.g}, 0.8);
    x = b.AddTensor(n + ".out", stream_bytes, TensorKind::kActivation);
    b.AddKernel("forward." + n + ".mlp.fc2", {k.g, value(k.fc2), value(k.fc2_bias), k.x2}, {x}, 3.0);
  }
  const uint32_t final_out = b.AddTensor("norm.out", stream_bytes, TensorKind::kActivation);
  uint32_t stats = scratch("norm.stats", 512);
  b.AddKernel("forward.norm", {x, value(final_gain), value(final_bias), stats}, {final_out, stats}, 0.8);
  const uint32_t logits = b.AddTensor("head.out", static_cast<uint64_t>(base * 0.4), TensorKind::kActivation);
  b.AddKernel("forward.head", {final_out, value(head)}, {logits}, 3.0);
  const uint32_t logits_grad = b.AddTensor("loss.grad", b.tensor_bytes(logits), TensorKind::kGradient);
  b.AddKernel("loss", {logits}, {logits_grad}, 0.5);

  // Backward. A residual's gradient flows past its block into the norm's
  // backward, which adds it, so each block's incoming gradient is read twice.
  uint32_t upstream = b.AddTensor("norm.out.grad", stream_bytes, TensorKind::kGradient);
  b.AddKernel("backward.head", {logits_grad, final_out, value(head)}, {upstream, grad_of(head)}, 3.0);
  uint32_t dx = b.AddTensor("norm.in.grad", stream_bytes, TensorKind::kGradient);
  b.AddKernel("backward.norm", {upstream, x, value(final_gain)}, {dx, grad_of(final_gain), grad_of(final_bias)}, 0.8);
  auto gradient = [&](const std::string& name, uint64_t bytes) {
    return b.AddTensor(name, bytes, TensorKind::kGradient);
  };
  for (int l = blocks - 1; l >= 0; --l) {
    const std::string n = "block" + std::to_string(l);
    const Block& k = blk[l];
    const uint32_t dg = gradient(n + ".mlp.gelu.out.grad", hidden_bytes);
    b.AddKernel("backward." + n + ".mlp.fc2", {dx, k.g, value(k.fc2)}, {dg, grad_of(k.fc2), grad_of(k.fc2_bias)}, 3.0);
    const uint32_t du = gradient(n + ".mlp.fc1.out.grad", hidden_bytes);
    b.AddKernel("backward." + n + ".mlp.gelu", {dg, k.u}, {du}, 0.8);
    const uint32_t dh2 = gradient(n + ".norm2.out.grad", stream_bytes);
    b.AddKernel("backward." + n + ".mlp.fc1", {du, k.h2, value(k.fc1)}, {dh2, grad_of(k.fc1), grad_of(k.fc1_bias)}, 3.0);
    const uint32_t dx2 = gradient(n + ".attn.residual.grad", stream_bytes);
    b.AddKernel("backward." + n + ".norm2", {dh2, k.x2, value(k.ln2_gain), dx},
                {dx2, grad_of(k.ln2_gain), grad_of(k.ln2_bias)}, 0.8);
    const uint32_t dctx = gradient(n + ".attn.context.grad", stream_bytes);
    b.AddKernel("backward." + n + ".attn.proj", {dx2, k.ctx, value(k.proj)},
                {dctx, grad_of(k.proj), grad_of(k.proj_bias)}, 3.0);
    const uint32_t dprobs = gradient(n + ".attn.probs.grad", b.tensor_bytes(k.probs));
    const uint32_t dvalues = gradient(n + ".attn.values.grad", qkv_bytes);
    b.AddKernel("backward." + n + ".attn.context", {dctx, k.probs, k.qkv_out}, {dprobs, dvalues}, 2.0);
    const uint32_t dqkv = gradient(n + ".attn.qkv.out.grad", qkv_bytes);
    b.AddKernel("backward." + n + ".attn.softmax", {dprobs, k.probs, k.qkv_out, dvalues}, {dqkv}, 1.5);
    const uint32_t dh1 = gradient(n + ".norm1.out.grad", stream_bytes);
    b.AddKernel("backward." + n + ".attn.qkv", {dqkv, k.h1, value(k.qkv)}, {dh1, grad_of(k.qkv), grad_of(k.qkv_bias)},
                3.0);
    const uint32_t dx_in = gradient(n + ".in.grad", stream_bytes);
    b.AddKernel("backward." + n + ".norm1", {dh1, k.x, value(k.ln1_gain), dx2},
                {dx_in, grad_of(k.ln1_gain), grad_of(k.ln1_bias)}, 0.8);
    dx = dx_in;
  }
  b.AddKernel("backward.embedding", {dx, tokens}, {grad_of(embedding), grad_of(position)}, 0.8);

  // AdamW, one step per block and one for the embedding, the final norm and
  // the head together: every gradient is live from its backward kernel to
  // its step.
  auto step = [&](const std::string& name, const std::vector<size_t>& ps) {
    std::vector<uint32_t> reads, writes;
    for (size_t p : ps) {
      const Param& x = params[p];
      reads.insert(reads.end(), {x.grad, x.value, x.first_moment, x.second_moment});
      writes.insert(writes.end(), {x.value, x.first_moment, x.second_moment});
    }
    b.AddKernel(name, reads, writes, 0.6);
  };
  for (int l = 0; l < blocks; ++l) {
    const Block& k = blk[l];
    step("optimizer.block" + std::to_string(l), {k.ln1_gain, k.ln1_bias, k.qkv, k.qkv_bias, k.proj, k.proj_bias,
                                                 k.ln2_gain, k.ln2_bias, k.fc1, k.fc1_bias, k.fc2, k.fc2_bias});
  }
  step("optimizer.embedding", {embedding, position});
  step("optimizer.head", {final_gain, final_bias, head});

  const std::string source = "synthetic:transformer-like blocks=" + std::to_string(blocks) +
                             " base_bytes=" + std::to_string(o.base_bytes) + " seed=" + std::to_string(o.seed);
  return b.Build("transformer-like-" + std::to_string(blocks), source, o.batch_size);
}

}  // namespace

SyntheticShape ParseSyntheticShape(const std::string& name) {
  if (name == "vgg" || name == "vgg-like") return SyntheticShape::kVggLike;
  if (name == "resnet" || name == "resnet-like") return SyntheticShape::kResnetLike;
  if (name == "mobilenet" || name == "mobilenet-like") return SyntheticShape::kMobilenetLike;
  if (name == "tiny") return SyntheticShape::kTiny;
  if (name == "rnn" || name == "rnn-like") return SyntheticShape::kRnnLike;
  if (name == "transformer" || name == "transformer-like") return SyntheticShape::kTransformerLike;
  throw std::invalid_argument("unknown synthetic shape '" + name + "' (vgg, resnet, mobilenet, tiny, rnn, transformer)");
}

const char* SyntheticShapeName(SyntheticShape shape) {
  switch (shape) {
    case SyntheticShape::kVggLike: return "vgg-like";
    case SyntheticShape::kResnetLike: return "resnet-like";
    case SyntheticShape::kMobilenetLike: return "mobilenet-like";
    case SyntheticShape::kTiny: return "tiny";
    case SyntheticShape::kRnnLike: return "rnn-like";
    case SyntheticShape::kTransformerLike: return "transformer-like";
  }
  return "unknown";
}

Workload GenerateSynthetic(const SyntheticOptions& o) {
  if (o.layers < 1 || o.layers > 4096) throw std::invalid_argument("synthetic: layers must be in [1, 4096]");
  if (o.base_bytes < 64) throw std::invalid_argument("synthetic: base_bytes must be at least 64");
  if (o.shape == SyntheticShape::kRnnLike) {
    // Every step adds ten kernels and keeps its states live until its
    // backward: at 4,096 steps the graph's live sets alone took 2.4 GB.
    if (o.layers > 1024) throw std::invalid_argument("synthetic: rnn takes at most 1024 steps");
    return GenerateRecurrent(o);
  }
  if (o.shape == SyntheticShape::kTransformerLike) {
    if (o.layers > 1024) throw std::invalid_argument("synthetic: transformer takes at most 1024 blocks");
    return GenerateTransformer(o);
  }
  Builder b(o.seed);
  const std::vector<Layer> layers = LayersFor(o, b.rng());
  const int L = o.layers;
  const std::string s = SyntheticShapeName(o.shape);
  const bool tiny = o.shape == SyntheticShape::kTiny;

  uint32_t input = b.AddTensor("input", layers[0].activation_bytes, TensorKind::kInput);
  std::vector<uint32_t> weight(L), momentum(L), act(L), grad_w(L);
  std::vector<std::vector<uint32_t>> small(L), small_state(L);
  for (int l = 0; l < L; ++l) {
    const std::string n = std::to_string(l);
    weight[l] = b.AddTensor("layer" + n + ".weight", layers[l].weight_bytes, TensorKind::kParameter, true);
    if (!tiny)
      momentum[l] = b.AddTensor("layer" + n + ".momentum", layers[l].weight_bytes, TensorKind::kOptimizerState, true);
    for (int i = 0; i < layers[l].small_params; ++i) {
      small[l].push_back(b.AddTensor("layer" + n + ".bn" + std::to_string(i), 256 + 256 * (l % 8),
                                     TensorKind::kParameter, true));
      small_state[l].push_back(b.AddTensor("layer" + n + ".bn" + std::to_string(i) + ".momentum",
                                           256 + 256 * (l % 8), TensorKind::kOptimizerState, true));
    }
  }

  // Forward: each layer reads its input and weights, writes an activation
  // kept for backward and a short-lived workspace.
  for (int l = 0; l < L; ++l) {
    const std::string n = std::to_string(l);
    act[l] = b.AddTensor("layer" + n + ".out", layers[l].activation_bytes, TensorKind::kActivation);
    std::vector<uint32_t> reads = {l == 0 ? input : act[l - 1], weight[l]};
    for (uint32_t p : small[l]) reads.push_back(p);
    if (layers[l].skip_from >= 0) reads.push_back(act[layers[l].skip_from]);
    std::vector<uint32_t> writes = {act[l]};
    if (!tiny) {
      uint32_t workspace = b.AddTensor("layer" + n + ".workspace", layers[l].activation_bytes / 4 + 512,
                                       TensorKind::kTemporary);
      writes.push_back(workspace);
      // Batch statistics: tiny temporaries, read again in the same kernel.
      uint32_t stats = b.AddTensor("layer" + n + ".stats", 512, TensorKind::kTemporary);
      writes.push_back(stats);
      reads.push_back(stats);
    }
    b.AddKernel("forward." + n, reads, writes, layers[l].intensity);
  }

  // Loss, then backward from the last layer to the first.
  uint32_t grad_out = b.AddTensor("loss.grad", layers[L - 1].activation_bytes, TensorKind::kGradient);
  b.AddKernel("loss", {act[L - 1]}, {grad_out}, 0.5);
  std::vector<uint32_t> skip_grad(L, UINT32_MAX);
  uint32_t upstream = grad_out;
  for (int l = L - 1; l >= 0; --l) {
    const std::string n = std::to_string(l);
    grad_w[l] = b.AddTensor("layer" + n + ".weight.grad", layers[l].weight_bytes, TensorKind::kGradient);
    std::vector<uint32_t> reads = {upstream, act[l], l == 0 ? input : act[l - 1], weight[l]};
    for (uint32_t p : small[l]) reads.push_back(p);
    if (skip_grad[l] != UINT32_MAX) reads.push_back(skip_grad[l]);
    std::vector<uint32_t> writes = {grad_w[l]};
    if (l > 0) {
      uint32_t down = b.AddTensor("layer" + n + ".in.grad", layers[l - 1].activation_bytes, TensorKind::kGradient);
      writes.push_back(down);
      upstream = down;
    }
    if (layers[l].skip_from >= 0) {
      skip_grad[layers[l].skip_from + 1 < L ? layers[l].skip_from + 1 : L - 1] =
          b.AddTensor("layer" + n + ".skip.grad", layers[layers[l].skip_from].activation_bytes,
                      TensorKind::kGradient);
      writes.push_back(skip_grad[layers[l].skip_from + 1 < L ? layers[l].skip_from + 1 : L - 1]);
    }
    b.AddKernel("backward." + n, reads, writes, layers[l].intensity);
  }

  // Optimizer step per layer: SGD with momentum.
  for (int l = 0; l < L; ++l) {
    const std::string n = std::to_string(l);
    std::vector<uint32_t> reads = {grad_w[l], weight[l]};
    std::vector<uint32_t> writes = {weight[l]};
    if (!tiny) {
      reads.push_back(momentum[l]);
      writes.push_back(momentum[l]);
    }
    for (size_t i = 0; i < small[l].size(); ++i) {
      writes.push_back(small[l][i]);
      writes.push_back(small_state[l][i]);
    }
    b.AddKernel("optimizer." + n, reads, writes, 0.6);
  }

  std::string source = "synthetic:" + s + " layers=" + std::to_string(L) +
                       " base_bytes=" + std::to_string(o.base_bytes) + " seed=" + std::to_string(o.seed);
  return b.Build(s + "-" + std::to_string(L), source, o.batch_size);
}

}  // namespace tensortier
