// Writes three TorchScript CNN/transformer modules that are not in the zoo
// (models/zoo.h) and that nothing in the MDP or the policies was tuned on,
// for issue #15's "TorchScript models from outside the zoo":
//   densenet_like.pt  dense blocks: every layer reads the concatenation of all before it
//   unet_like.pt      encoder-decoder with skip connections across the bottleneck
//   vit_like.pt       patch embedding and pre-norm self-attention blocks
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write three TorchScript modules from outside the zoo (densenet_like, unet_like, vit_like)"};
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
        {"densenet_like", DenseNetLike}, {"unet_like", UNetLike}, {"vit_like", VitLike}};
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
