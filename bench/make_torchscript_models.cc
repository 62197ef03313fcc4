// Writes six TorchScript CNN/transformer/recurrent modules that are not in the zoo
// (models/zoo.h) and that nothing in the MDP or the policies was tuned on,
// for issue #15's "TorchScript models from outside the zoo":
//   densenet_like.pt  dense blocks: every layer reads the concatenation of all before it
//   unet_like.pt      encoder-decoder with skip connections across the bottleneck
//   vit_like.pt       patch embedding and pre-norm self-attention blocks
//   mixer_like.pt     MLP-Mixer: token-mixing and channel-mixing MLPs over 64 patch tokens
//   convnext_like.pt  depthwise 7x7 convolutions, group norm, inverted bottlenecks
//   rowgru_like.pt    two GRU layers unrolled over the image's pooled rows
//   collstm_like.pt   one LSTM layer (fused gate weights) unrolled over the
//                     image's pooled columns, with an attention-style pooling
//                     over its hidden states
// Each maps [B, 3, S, S] (S a multiple of 16) to 10 logits, as
// `tensortier profile --torchscript PATH` expects. The modules are written
// in TorchScript source (no Python needed) and their parameters drawn from a
// fixed seed, so the files are the same every run.
#include <torch/script.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

struct Builder {
  torch::jit::Module module;
  int next = 0;
  explicit Builder(const std::string& name) : module(name) {}
  // A parameter with He-scaled values; returns its attribute name.
  std::string Param(std::vector<int64_t> shape, int64_t fan_in) {
    const std::string name = "p" + std::to_string(next++);
    torch::Tensor t = torch::randn(shape) * std::sqrt(2.0 / static_cast<double>(fan_in));
    module.register_parameter(name, t, false);
    return "self." + name;
  }
  std::string Zeros(std::vector<int64_t> shape) {
    const std::string name = "p" + std::to_string(next++);
    module.register_parameter(name, torch::zeros(shape), false);
    return "self." + name;
  }
  std::string Ones(std::vector<int64_t> shape) {
    const std::string name = "p" + std::to_string(next++);
    module.register_parameter(name, torch::ones(shape), false);
    return "self." + name;
  }
  // "y = relu(conv(x))" with a k x k kernel.
  std::string Conv(const std::string& y, const std::string& x, int64_t in, int64_t out, int64_t k, int64_t stride,
                   bool relu = true) {
    const std::string w = Param({out, in, k, k}, in * k * k), b = Zeros({out});
    const std::string pad = std::to_string(k / 2), s = std::to_string(stride);
    std::string conv = "torch.conv2d(" + x + ", " + w + ", " + b + ", [" + s + ", " + s + "], [" + pad + ", " + pad + "])";
    return "        " + y + " = " + (relu ? "torch.relu(" + conv + ")" : conv) + "\n";
  }
  std::string Linear(const std::string& y, const std::string& x, int64_t in, int64_t out) {
    return "        " + y + " = torch.matmul(" + x + ", " + Param({in, out}, in) + ") + " + Zeros({out}) + "\n";
  }
  // Every model's head: 10 logits from its pooled features `h`, `width`
  // wide, after `body`; defines forward and hands the module over.
  torch::jit::Module WithHead(std::string body, int64_t width) {
    body += Linear("y", "h", width, 10);
    body += "        return y\n";
    module.define("def forward(self, x):\n" + body);
    return module;
  }
};

torch::jit::Module DenseNetLike() {
  Builder b("DenseNetLike");
  std::string s;
  int64_t channels = 16;
  s += b.Conv("h", "x", 3, channels, 3, 1);
  const int64_t growth = 12;
  for (int block = 0; block < 3; ++block) {
    for (int layer = 0; layer < 4; ++layer) {
      s += b.Conv("g", "h", channels, growth, 3, 1);
      s += "        h = torch.cat([h, g], 1)\n";
      channels += growth;
    }
    if (block < 2) {  // transition: 1x1 conv and 2x2 average pool
      s += b.Conv("h", "h", channels, channels / 2, 1, 1);
      channels /= 2;
      s += "        h = torch.avg_pool2d(h, [2, 2])\n";
    }
  }
  s += "        h = h.mean([2, 3])\n";
  return b.WithHead(s, channels);
}

torch::jit::Module UNetLike() {
  Builder b("UNetLike");
  std::string s;
  const std::vector<int64_t> widths = {16, 32, 64};
  int64_t in = 3;
  for (size_t level = 0; level < widths.size(); ++level) {
    const std::string e = "e" + std::to_string(level);
    s += b.Conv(e, level == 0 ? "x" : "d", in, widths[level], 3, 1);
    s += b.Conv(e, e, widths[level], widths[level], 3, 1);
    s += "        d = torch.max_pool2d(" + e + ", [2, 2])\n";
    in = widths[level];
  }
  s += b.Conv("m", "d", in, 128, 3, 1);
  in = 128;
  for (int level = static_cast<int>(widths.size()) - 1; level >= 0; --level) {
    const std::string e = "e" + std::to_string(level);
    s += "        m = m.repeat_interleave(2, 2).repeat_interleave(2, 3)\n";
    s += "        m = torch.cat([m, " + e + "], 1)\n";
    s += b.Conv("m", "m", in + widths[level], widths[level], 3, 1);
    in = widths[level];
  }
  s += "        h = m.mean([2, 3])\n";
  return b.WithHead(s, in);
}

torch::jit::Module VitLike() {
  Builder b("VitLike");
  const int64_t dim = 64, heads = 4, blocks = 4, hidden = 128;
  std::string s;
  s += b.Conv("p", "x", 3, dim, 4, 4, false);  // 4x4 patches (padding 2 trims below)
  s += "        t = p.flatten(2).transpose(1, 2)\n";
  for (int block = 0; block < blocks; ++block) {
    const std::string g1 = b.Ones({dim}), b1 = b.Zeros({dim}), g2 = b.Ones({dim}), b2 = b.Zeros({dim});
    s += "        n = torch.layer_norm(t, [" + std::to_string(dim) + "], " + g1 + ", " + b1 + ")\n";
    s += b.Linear("qkv", "n", dim, 3 * dim);
    s += "        q, k, v = qkv.chunk(3, -1)\n";
    s += "        q = q.unflatten(-1, [" + std::to_string(heads) + ", " + std::to_string(dim / heads) +
         "]).transpose(1, 2)\n";
    s += "        k = k.unflatten(-1, [" + std::to_string(heads) + ", " + std::to_string(dim / heads) +
         "]).transpose(1, 2)\n";
    s += "        v = v.unflatten(-1, [" + std::to_string(heads) + ", " + std::to_string(dim / heads) +
         "]).transpose(1, 2)\n";
    s += "        a = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * " +
         std::to_string(1.0 / std::sqrt(static_cast<double>(dim / heads))) + ", -1)\n";
    s += "        o = torch.matmul(a, v).transpose(1, 2).flatten(2)\n";
    s += b.Linear("o", "o", dim, dim);
    s += "        t = t + o\n";
    s += "        n = torch.layer_norm(t, [" + std::to_string(dim) + "], " + g2 + ", " + b2 + ")\n";
    s += b.Linear("f", "n", dim, hidden);
    s += "        f = torch.gelu(f)\n";
    s += b.Linear("f", "f", hidden, dim);
    s += "        t = t + f\n";
  }
  s += "        h = t.mean(1)\n";
  return b.WithHead(s, dim);
}

// MLP-Mixer-like: 4x4 patches pooled to an 8x8 grid of 64 tokens, then
// blocks that mix across tokens and across channels with GELU MLPs.
torch::jit::Module MixerLike() {
  Builder b("MixerLike");
  const int64_t dim = 96, tokens = 64, token_hidden = 128, channel_hidden = 384, blocks = 6;
  std::string s;
  s += b.Conv("h", "x", 3, dim, 4, 4, false);
  s += "        h = torch.adaptive_avg_pool2d(h, [8, 8])\n";
  s += "        h = torch.flatten(h, 2).transpose(1, 2)\n";  // [B, tokens, dim]
  for (int block = 0; block < blocks; ++block) {
    s += "        u = torch.layer_norm(h, [" + std::to_string(dim) + "]).transpose(1, 2)\n";
    s += "        u = torch.matmul(torch.gelu(torch.matmul(u, " + b.Param({tokens, token_hidden}, tokens) + ")), " +
         b.Param({token_hidden, tokens}, token_hidden) + ")\n";
    s += "        h = h + u.transpose(1, 2)\n";
    s += "        v = torch.layer_norm(h, [" + std::to_string(dim) + "])\n";
    s += "        v = torch.matmul(torch.gelu(torch.matmul(v, " + b.Param({dim, channel_hidden}, dim) + ")), " +
         b.Param({channel_hidden, dim}, channel_hidden) + ")\n";
    s += "        h = h + v\n";
  }
  s += "        h = torch.mean(h, 1)\n";
  return b.WithHead(s, dim);
}

// ConvNeXt-like: a 4x4 stem, three stages of depthwise 7x7 convolutions,
// group norm and a 4x inverted bottleneck, 2x2 downsampling between them.
torch::jit::Module ConvNextLike() {
  Builder b("ConvNextLike");
  const std::vector<int64_t> widths = {32, 64, 128};
  const std::vector<int> depths = {2, 3, 2};
  std::string s = b.Conv("h", "x", 3, widths[0], 4, 4, false);
  for (size_t stage = 0; stage < widths.size(); ++stage) {
    const int64_t d = widths[stage];
    if (stage > 0)
      s += "        h = torch.conv2d(h, " + b.Param({d, widths[stage - 1], 2, 2}, widths[stage - 1] * 4) + ", " +
           b.Zeros({d}) + ", [2, 2])\n";
    for (int block = 0; block < depths[stage]; ++block) {
      s += "        u = torch.conv2d(h, " + b.Param({d, 1, 7, 7}, 49) + ", " + b.Zeros({d}) + ", [1, 1], [3, 3], [1, 1], " +
           std::to_string(d) + ")\n";
      s += "        u = torch.group_norm(u, 1)\n";
      s += "        u = torch.gelu(torch.conv2d(u, " + b.Param({4 * d, d, 1, 1}, d) + ", " + b.Zeros({4 * d}) + "))\n";
      s += "        u = torch.conv2d(u, " + b.Param({d, 4 * d, 1, 1}, 4 * d) + ", " + b.Zeros({d}) + ")\n";
      s += "        h = h + u\n";
    }
  }
  s += "        h = torch.mean(h, [2, 3])\n";
  return b.WithHead(s, widths.back());
}

// A recurrent network: a strided convolution, the image's 8 pooled rows as
// a sequence, and two GRU layers unrolled over it (the same weights read at
// every step), the last hidden state to the head.
torch::jit::Module RowGruLike() {
  Builder b("RowGruLike");
  const int64_t channels = 48, hidden = 128, steps = 8, in = channels * 8;
  std::string s = b.Conv("f", "x", 3, channels, 3, 2);
  s += "        f = torch.adaptive_avg_pool2d(f, [8, 8])\n";
  s += "        f = f.permute(0, 2, 1, 3).reshape(x.size(0), " + std::to_string(steps) + ", " + std::to_string(in) + ")\n";
  s += "        h1 = torch.zeros(x.size(0), " + std::to_string(hidden) + ")\n";
  s += "        h2 = torch.zeros(x.size(0), " + std::to_string(hidden) + ")\n";
  const std::string z1 = b.Param({in + hidden, hidden}, in + hidden), r1 = b.Param({in + hidden, hidden}, in + hidden),
                    n1 = b.Param({in + hidden, hidden}, in + hidden);
  const std::string z2 = b.Param({2 * hidden, hidden}, 2 * hidden), r2 = b.Param({2 * hidden, hidden}, 2 * hidden),
                    n2 = b.Param({2 * hidden, hidden}, 2 * hidden);
  for (int64_t t = 0; t < steps; ++t) {
    const std::string xt = "f[:, " + std::to_string(t) + ", :]";
    s += "        c = torch.cat([" + xt + ", h1], 1)\n";
    s += "        z = torch.sigmoid(torch.matmul(c, " + z1 + "))\n";
    s += "        r = torch.sigmoid(torch.matmul(c, " + r1 + "))\n";
    s += "        n = torch.tanh(torch.matmul(torch.cat([" + xt + ", r * h1], 1), " + n1 + "))\n";
    s += "        h1 = (1 - z) * n + z * h1\n";
    s += "        c = torch.cat([h1, h2], 1)\n";
    s += "        z = torch.sigmoid(torch.matmul(c, " + z2 + "))\n";
    s += "        r = torch.sigmoid(torch.matmul(c, " + r2 + "))\n";
    s += "        n = torch.tanh(torch.matmul(torch.cat([h1, r * h2], 1), " + n2 + "))\n";
    s += "        h2 = (1 - z) * n + z * h2\n";
  }
  s += "        h = h2\n";
  return b.WithHead(s, hidden);
}


// A patch embedding, then one LSTM layer with fused gate weights unrolled
// over the pooled columns; the hidden states of every step are kept and
// pooled with learned scores (each step's state is read again at the end).
torch::jit::Module ColLstmLike() {
  Builder b("ColLstmLike");
  const int64_t channels = 32, hidden = 96, steps = 12, in = channels * 4;
  std::string s = b.Conv("f", "x", 3, channels, 4, 4);
  s += "        f = torch.adaptive_avg_pool2d(f, [4, " + std::to_string(steps) + "])\n";
  s += "        f = f.permute(0, 3, 1, 2).reshape(x.size(0), " + std::to_string(steps) + ", " + std::to_string(in) + ")\n";
  s += "        h = torch.zeros(x.size(0), " + std::to_string(hidden) + ")\n";
  s += "        cell = torch.zeros(x.size(0), " + std::to_string(hidden) + ")\n";
  const std::string w = b.Param({in + hidden, 4 * hidden}, in + hidden), bias = b.Zeros({4 * hidden});
  const std::string score = b.Param({hidden, 1}, hidden);
  s += "        states = []\n";
  for (int64_t t = 0; t < steps; ++t) {
    const std::string xt = "f[:, " + std::to_string(t) + ", :]";
    s += "        g = torch.matmul(torch.cat([" + xt + ", h], 1), " + w + ") + " + bias + "\n";
    s += "        i, fg, o, u = g.chunk(4, 1)\n";
    s += "        cell = torch.sigmoid(fg) * cell + torch.sigmoid(i) * torch.tanh(u)\n";
    s += "        h = torch.sigmoid(o) * torch.tanh(cell)\n";
    s += "        states.append(h)\n";
  }
  s += "        hs = torch.stack(states, 1)\n";
  s += "        a = torch.softmax(torch.matmul(hs, " + score + "), 1)\n";
  s += "        h = (a * hs).sum(1)\n";
  return b.WithHead(s, hidden);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write seven TorchScript modules from outside the zoo (densenet_like, unet_like, vit_like, mixer_like, "
               "convnext_like, rowgru_like, collstm_like)"};
  std::string out = ".";
  int64_t check_size = 32;
  app.add_option("--out", out, "Directory for the .pt files");
  app.add_option("--check-image-size", check_size, "Image size of the forward pass that checks each module")
      ->check(CLI::Range(16, 1024));
  CLI11_PARSE(app, argc, argv);
  try {
    std::filesystem::create_directories(out);
    torch::manual_seed(7);
    const std::vector<std::pair<std::string, torch::jit::Module (*)()>> models = {
        {"densenet_like", DenseNetLike}, {"unet_like", UNetLike}, {"vit_like", VitLike},
        // Session thirty-one's modules (docs/results/learning.md), after the
        // first three so that those keep their parameters.
        {"mixer_like", MixerLike},       {"convnext_like", ConvNextLike}, {"rowgru_like", RowGruLike},
        // Session thirty-two's, written before any network was trained on
        // the recurrent synthetic shape.
        {"collstm_like", ColLstmLike}};
    for (const auto& [name, make] : models) {
      torch::jit::Module m = make();
      const torch::Tensor y = m.forward({torch::randn({2, 3, check_size, check_size})}).toTensor();
      if (y.sizes() != torch::IntArrayRef({2, 10})) throw std::runtime_error(name + ": output is not [2, 10]");
      const std::string path = (std::filesystem::path(out) / (name + ".pt")).string();
      m.save(path);
      std::printf("%s  (%zu parameters)\n", path.c_str(), m.parameters().size());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_torchscript_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
