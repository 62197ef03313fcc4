// The model zoo in LibTorch C++ (torch::nn), after torchvision's
// definitions, plus the small-input (CIFAR-style) variants used below 64
// pixels. Training task: SGD with momentum (or Adam) on one synthetic batch.
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/script.h>

#include <filesystem>
#include <stdexcept>

#include "models/optimizer_state.h"
#include "models/training_task.h"

namespace tensortier {

namespace {

namespace nn = torch::nn;
using torch::Tensor;

struct ZooNet : nn::Module {
  virtual Tensor forward(Tensor x) = 0;
};

nn::Conv2d Conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0, bool bias = true,
                int64_t groups = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(bias).groups(groups));
}

// ---------------------------------------------------------------- AlexNet
// torchvision AlexNet. Small inputs: 3x3 stride-1 first convolution, 2x2
// adaptive pooling and 1024-wide hidden layers instead of 6x6 and 4096.
struct AlexNet : ZooNet {
  nn::Sequential features, classifier;
  nn::AdaptiveAvgPool2d pool{nullptr};
  AlexNet(int64_t classes, bool small) {
    features = register_module(
        "features",
        nn::Sequential(small ? Conv(3, 64, 3, 1, 1) : Conv(3, 64, 11, 4, 2), nn::ReLU(true),
                       nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)), Conv(64, 192, 5, 1, 2), nn::ReLU(true),
                       nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)), Conv(192, 384, 3, 1, 1), nn::ReLU(true),
                       Conv(384, 256, 3, 1, 1), nn::ReLU(true), Conv(256, 256, 3, 1, 1), nn::ReLU(true),
                       nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2))));
    const int64_t side = small ? 2 : 6, hidden = small ? 1024 : 4096;
    pool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({side, side})));
    classifier = register_module(
        "classifier", nn::Sequential(nn::Dropout(0.5), nn::Linear(256 * side * side, hidden), nn::ReLU(true),
                                     nn::Dropout(0.5), nn::Linear(hidden, hidden), nn::ReLU(true),
                                     nn::Linear(hidden, classes)));
  }
  Tensor forward(Tensor x) override {
    return classifier->forward(torch::flatten(pool->forward(features->forward(x)), 1));
  }
};

// ---------------------------------------------------------------- VGG
// torchvision VGG16/19 (configurations D and E, no batch norm). Small
// inputs: 1x1 pooling and a 512-wide classifier (the CIFAR VGG head).
struct Vgg : ZooNet {
  nn::Sequential features, classifier;
  nn::AdaptiveAvgPool2d pool{nullptr};
  Vgg(int depth, int64_t classes, bool small) {
    std::vector<int> cfg = depth == 16
                               ? std::vector<int>{64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0,
                                                  512, 512, 512, 0}
                               : std::vector<int>{64, 64, 0, 128, 128, 0, 256, 256, 256, 256, 0,
                                                  512, 512, 512, 512, 0, 512, 512, 512, 512, 0};
    nn::Sequential f;
    int64_t in = 3;
    for (int c : cfg) {
      if (c == 0) {
        f->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)));
      } else {
        f->push_back(Conv(in, c, 3, 1, 1));
        f->push_back(nn::ReLU(true));
        in = c;
      }
    }
    features = register_module("features", f);
    const int64_t side = small ? 1 : 7, hidden = small ? 512 : 4096;
    pool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({side, side})));
    classifier = register_module(
        "classifier", nn::Sequential(nn::Linear(512 * side * side, hidden), nn::ReLU(true), nn::Dropout(0.5),
                                     nn::Linear(hidden, hidden), nn::ReLU(true), nn::Dropout(0.5),
                                     nn::Linear(hidden, classes)));
  }
  Tensor forward(Tensor x) override {
    return classifier->forward(torch::flatten(pool->forward(features->forward(x)), 1));
  }
};

// ---------------------------------------------------------------- ResNet
struct BlockBase : nn::Module {
  virtual Tensor forward(Tensor x) = 0;
};

struct BasicBlock : BlockBase {
  static constexpr int64_t kExpansion = 1;
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential downsample{nullptr};
  BasicBlock(int64_t in, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", Conv(in, planes, 3, stride, 1, false));
    bn1 = register_module("bn1", nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", Conv(planes, planes, 3, 1, 1, false));
    bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    if (stride != 1 || in != planes)
      downsample = register_module("downsample",
                                   nn::Sequential(Conv(in, planes, 1, stride, 0, false), nn::BatchNorm2d(planes)));
  }
  Tensor forward(Tensor x) override {
    Tensor out = torch::relu(bn1->forward(conv1->forward(x)));
    out = bn2->forward(conv2->forward(out));
    out = out + (downsample ? downsample->forward(x) : x);
    return torch::relu(out);
  }
};

struct Bottleneck : BlockBase {
  static constexpr int64_t kExpansion = 4;
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  nn::Sequential downsample{nullptr};
  Bottleneck(int64_t in, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", Conv(in, planes, 1, 1, 0, false));
    bn1 = register_module("bn1", nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", Conv(planes, planes, 3, stride, 1, false));
    bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    conv3 = register_module("conv3", Conv(planes, planes * 4, 1, 1, 0, false));
    bn3 = register_module("bn3", nn::BatchNorm2d(planes * 4));
    if (stride != 1 || in != planes * 4)
      downsample = register_module(
          "downsample", nn::Sequential(Conv(in, planes * 4, 1, stride, 0, false), nn::BatchNorm2d(planes * 4)));
  }
  Tensor forward(Tensor x) override {
    Tensor out = torch::relu(bn1->forward(conv1->forward(x)));
    out = torch::relu(bn2->forward(conv2->forward(out)));
    out = bn3->forward(conv3->forward(out));
    out = out + (downsample ? downsample->forward(x) : x);
    return torch::relu(out);
  }
};

// torchvision ResNet. Small inputs: 3x3 stride-1 stem without max pooling.
struct ResNet : ZooNet {
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::vector<std::shared_ptr<BlockBase>> blocks;
  nn::Linear fc{nullptr};
  bool small;
  template <typename Block>
  void Build(const std::vector<int>& layers, int64_t classes) {
    int64_t in = 64;
    for (size_t l = 0; l < layers.size(); ++l) {
      const int64_t planes = 64 << l;
      for (int b = 0; b < layers[l]; ++b) {
        const int64_t stride = (b == 0 && l > 0) ? 2 : 1;
        auto block = std::make_shared<Block>(in, planes, stride);
        blocks.push_back(register_module("layer" + std::to_string(l + 1) + "_" + std::to_string(b), block));
        in = planes * Block::kExpansion;
      }
    }
    fc = register_module("fc", nn::Linear(in, classes));
  }
  ResNet(int depth, int64_t classes, bool small_input) : small(small_input) {
    conv1 = register_module("conv1", small ? Conv(3, 64, 3, 1, 1, false) : Conv(3, 64, 7, 2, 3, false));
    bn1 = register_module("bn1", nn::BatchNorm2d(64));
    if (depth == 18) Build<BasicBlock>({2, 2, 2, 2}, classes);
    else if (depth == 34) Build<BasicBlock>({3, 4, 6, 3}, classes);
    else if (depth == 50) Build<Bottleneck>({3, 4, 6, 3}, classes);
    else if (depth == 101) Build<Bottleneck>({3, 4, 23, 3}, classes);
    else Build<Bottleneck>({3, 8, 36, 3}, classes);
  }
  Tensor forward(Tensor x) override {
    x = torch::relu(bn1->forward(conv1->forward(x)));
    if (!small) x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& b : blocks) x = b->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1});
    return fc->forward(torch::flatten(x, 1));
  }
};

// ---------------------------------------------------------------- MobileNetV2
struct InvertedResidual : nn::Module {
  nn::Sequential conv;
  bool use_res;
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expand) {
    const int64_t hidden = in * expand;
    use_res = stride == 1 && in == out;
    nn::Sequential s;
    if (expand != 1) {
      s->push_back(Conv(in, hidden, 1, 1, 0, false));
      s->push_back(nn::BatchNorm2d(hidden));
      s->push_back(nn::ReLU6(true));
    }
    s->push_back(Conv(hidden, hidden, 3, stride, 1, false, hidden));
    s->push_back(nn::BatchNorm2d(hidden));
    s->push_back(nn::ReLU6(true));
    s->push_back(Conv(hidden, out, 1, 1, 0, false));
    s->push_back(nn::BatchNorm2d(out));
    conv = register_module("conv", s);
  }
  Tensor forward(Tensor x) { return use_res ? x + conv->forward(x) : conv->forward(x); }
};

// torchvision MobileNetV2 (width 1.0). Small inputs: stride 1 in the stem
// and in the 24-channel stage (the CIFAR variant).
struct MobileNetV2 : ZooNet {
  nn::Sequential features, classifier;
  MobileNetV2(int64_t classes, bool small) {
    struct Setting { int64_t t, c, n, s; };
    std::vector<Setting> settings = {{1, 16, 1, 1},  {6, 24, 2, small ? 1 : 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                     {6, 96, 3, 1},  {6, 160, 3, 2},            {6, 320, 1, 1}};
    nn::Sequential f;
    f->push_back(Conv(3, 32, 3, small ? 1 : 2, 1, false));
    f->push_back(nn::BatchNorm2d(32));
    f->push_back(nn::ReLU6(true));
    int64_t in = 32;
    for (const Setting& st : settings)
      for (int64_t i = 0; i < st.n; ++i) {
        f->push_back(InvertedResidual(in, st.c, i == 0 ? st.s : 1, st.t));
        in = st.c;
      }
    f->push_back(Conv(in, 1280, 1, 1, 0, false));
    f->push_back(nn::BatchNorm2d(1280));
    f->push_back(nn::ReLU6(true));
    features = register_module("features", f);
    classifier = register_module("classifier", nn::Sequential(nn::Dropout(0.2), nn::Linear(1280, classes)));
  }
  Tensor forward(Tensor x) override {
    x = torch::adaptive_avg_pool2d(features->forward(x), {1, 1});
    return classifier->forward(torch::flatten(x, 1));
  }
};


// ---------------------------------------------------------------- Inception v3
// torchvision Inception3 without the auxiliary classifier (its loss term is
// optional there). Small inputs (< 75 px): stride 1 in the first convolution
// and no first max pooling, so 32 px inputs reach Mixed_7c at 2x2.
struct BasicConv : nn::Module {
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  BasicConv(int64_t in, int64_t out, std::vector<int64_t> k, int64_t stride = 1, std::vector<int64_t> pad = {0, 0}) {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(out).eps(0.001)));
  }
  Tensor forward(Tensor x) { return torch::relu(bn->forward(conv->forward(x))); }
};
using BC = std::shared_ptr<BasicConv>;

struct Mixed : nn::Module {
  virtual Tensor forward(Tensor x) = 0;
  BC Add(const std::string& n, int64_t in, int64_t out, std::vector<int64_t> k, int64_t stride = 1,
         std::vector<int64_t> pad = {0, 0}) {
    return register_module(n, std::make_shared<BasicConv>(in, out, k, stride, pad));
  }
};

struct InceptionA : Mixed {
  BC b1, b5_1, b5_2, d1, d2, d3, bp;
  InceptionA(int64_t in, int64_t pool) {
    b1 = Add("branch1x1", in, 64, {1, 1});
    b5_1 = Add("branch5x5_1", in, 48, {1, 1});
    b5_2 = Add("branch5x5_2", 48, 64, {5, 5}, 1, {2, 2});
    d1 = Add("branch3x3dbl_1", in, 64, {1, 1});
    d2 = Add("branch3x3dbl_2", 64, 96, {3, 3}, 1, {1, 1});
    d3 = Add("branch3x3dbl_3", 96, 96, {3, 3}, 1, {1, 1});
    bp = Add("branch_pool", in, pool, {1, 1});
  }
  Tensor forward(Tensor x) override {
    return torch::cat({b1->forward(x), b5_2->forward(b5_1->forward(x)), d3->forward(d2->forward(d1->forward(x))),
                       bp->forward(torch::avg_pool2d(x, 3, 1, 1))},
                      1);
  }
};

struct InceptionB : Mixed {
  BC b3, d1, d2, d3;
  explicit InceptionB(int64_t in) {
    b3 = Add("branch3x3", in, 384, {3, 3}, 2);
    d1 = Add("branch3x3dbl_1", in, 64, {1, 1});
    d2 = Add("branch3x3dbl_2", 64, 96, {3, 3}, 1, {1, 1});
    d3 = Add("branch3x3dbl_3", 96, 96, {3, 3}, 2);
  }
  Tensor forward(Tensor x) override {
    return torch::cat({b3->forward(x), d3->forward(d2->forward(d1->forward(x))), torch::max_pool2d(x, 3, 2)}, 1);
  }
};

struct InceptionC : Mixed {
  BC b1, s1, s2, s3, d1, d2, d3, d4, d5, bp;
  InceptionC(int64_t in, int64_t c7) {
    b1 = Add("branch1x1", in, 192, {1, 1});
    s1 = Add("branch7x7_1", in, c7, {1, 1});
    s2 = Add("branch7x7_2", c7, c7, {1, 7}, 1, {0, 3});
    s3 = Add("branch7x7_3", c7, 192, {7, 1}, 1, {3, 0});
    d1 = Add("branch7x7dbl_1", in, c7, {1, 1});
    d2 = Add("branch7x7dbl_2", c7, c7, {7, 1}, 1, {3, 0});
    d3 = Add("branch7x7dbl_3", c7, c7, {1, 7}, 1, {0, 3});
    d4 = Add("branch7x7dbl_4", c7, c7, {7, 1}, 1, {3, 0});
    d5 = Add("branch7x7dbl_5", c7, 192, {1, 7}, 1, {0, 3});
    bp = Add("branch_pool", in, 192, {1, 1});
  }
  Tensor forward(Tensor x) override {
    Tensor d = d5->forward(d4->forward(d3->forward(d2->forward(d1->forward(x)))));
    return torch::cat({b1->forward(x), s3->forward(s2->forward(s1->forward(x))), d,
                       bp->forward(torch::avg_pool2d(x, 3, 1, 1))},
                      1);
  }
};

struct InceptionD : Mixed {
  BC a1, a2, b1, b2, b3, b4;
  explicit InceptionD(int64_t in) {
    a1 = Add("branch3x3_1", in, 192, {1, 1});
    a2 = Add("branch3x3_2", 192, 320, {3, 3}, 2);
    b1 = Add("branch7x7x3_1", in, 192, {1, 1});
    b2 = Add("branch7x7x3_2", 192, 192, {1, 7}, 1, {0, 3});
    b3 = Add("branch7x7x3_3", 192, 192, {7, 1}, 1, {3, 0});
    b4 = Add("branch7x7x3_4", 192, 192, {3, 3}, 2);
  }
  Tensor forward(Tensor x) override {
    return torch::cat({a2->forward(a1->forward(x)), b4->forward(b3->forward(b2->forward(b1->forward(x)))),
                       torch::max_pool2d(x, 3, 2)},
                      1);
  }
};

struct InceptionE : Mixed {
  BC b1, s1, s2a, s2b, d1, d2, d3a, d3b, bp;
  explicit InceptionE(int64_t in) {
    b1 = Add("branch1x1", in, 320, {1, 1});
    s1 = Add("branch3x3_1", in, 384, {1, 1});
    s2a = Add("branch3x3_2a", 384, 384, {1, 3}, 1, {0, 1});
    s2b = Add("branch3x3_2b", 384, 384, {3, 1}, 1, {1, 0});
    d1 = Add("branch3x3dbl_1", in, 448, {1, 1});
    d2 = Add("branch3x3dbl_2", 448, 384, {3, 3}, 1, {1, 1});
    d3a = Add("branch3x3dbl_3a", 384, 384, {1, 3}, 1, {0, 1});
    d3b = Add("branch3x3dbl_3b", 384, 384, {3, 1}, 1, {1, 0});
    bp = Add("branch_pool", in, 192, {1, 1});
  }
  Tensor forward(Tensor x) override {
    Tensor s = s1->forward(x);
    Tensor d = d2->forward(d1->forward(x));
    return torch::cat({b1->forward(x), torch::cat({s2a->forward(s), s2b->forward(s)}, 1),
                       torch::cat({d3a->forward(d), d3b->forward(d)}, 1), bp->forward(torch::avg_pool2d(x, 3, 1, 1))},
                      1);
  }
};

struct InceptionV3 : ZooNet {
  BC c1a, c2a, c2b, c3b, c4a;
  std::vector<std::shared_ptr<Mixed>> mixed;
  nn::Dropout dropout{nullptr};
  nn::Linear fc{nullptr};
  bool small;
  InceptionV3(int64_t classes, bool small_input) : small(small_input) {
    c1a = register_module("Conv2d_1a_3x3", std::make_shared<BasicConv>(3, 32, std::vector<int64_t>{3, 3}, small ? 1 : 2));
    c2a = register_module("Conv2d_2a_3x3", std::make_shared<BasicConv>(32, 32, std::vector<int64_t>{3, 3}));
    c2b = register_module("Conv2d_2b_3x3",
                          std::make_shared<BasicConv>(32, 64, std::vector<int64_t>{3, 3}, 1, std::vector<int64_t>{1, 1}));
    c3b = register_module("Conv2d_3b_1x1", std::make_shared<BasicConv>(64, 80, std::vector<int64_t>{1, 1}));
    c4a = register_module("Conv2d_4a_3x3", std::make_shared<BasicConv>(80, 192, std::vector<int64_t>{3, 3}));
    auto add = [&](const std::string& n, std::shared_ptr<Mixed> m) { mixed.push_back(register_module(n, m)); };
    add("Mixed_5b", std::make_shared<InceptionA>(192, 32));
    add("Mixed_5c", std::make_shared<InceptionA>(256, 64));
    add("Mixed_5d", std::make_shared<InceptionA>(288, 64));
    add("Mixed_6a", std::make_shared<InceptionB>(288));
    add("Mixed_6b", std::make_shared<InceptionC>(768, 128));
    add("Mixed_6c", std::make_shared<InceptionC>(768, 160));
    add("Mixed_6d", std::make_shared<InceptionC>(768, 160));
    add("Mixed_6e", std::make_shared<InceptionC>(768, 192));
    add("Mixed_7a", std::make_shared<InceptionD>(768));
    add("Mixed_7b", std::make_shared<InceptionE>(1280));
    add("Mixed_7c", std::make_shared<InceptionE>(2048));
    dropout = register_module("dropout", nn::Dropout(0.5));
    fc = register_module("fc", nn::Linear(2048, classes));
  }
  Tensor forward(Tensor x) override {
    x = c2b->forward(c2a->forward(c1a->forward(x)));
    if (!small) x = torch::max_pool2d(x, 3, 2);
    x = torch::max_pool2d(c4a->forward(c3b->forward(x)), 3, 2);
    for (auto& m : mixed) x = m->forward(x);
    x = torch::flatten(torch::adaptive_avg_pool2d(x, {1, 1}), 1);
    return fc->forward(dropout->forward(x));
  }
};

std::shared_ptr<ZooNet> MakeNet(const ModelOptions& o) {
  if (o.name == "inception_v3") return std::make_shared<InceptionV3>(o.num_classes, o.image_size < 75);
  const bool small = o.image_size < 64;
  const int64_t c = o.num_classes;
  if (o.name == "alexnet") return std::make_shared<AlexNet>(c, small);
  if (o.name == "vgg16") return std::make_shared<Vgg>(16, c, small);
  if (o.name == "vgg19") return std::make_shared<Vgg>(19, c, small);
  if (o.name == "resnet18") return std::make_shared<ResNet>(18, c, small);
  if (o.name == "resnet34") return std::make_shared<ResNet>(34, c, small);
  if (o.name == "resnet50") return std::make_shared<ResNet>(50, c, small);
  if (o.name == "resnet101") return std::make_shared<ResNet>(101, c, small);
  if (o.name == "resnet152") return std::make_shared<ResNet>(152, c, small);
  if (o.name == "mobilenet_v2") return std::make_shared<MobileNetV2>(c, small);
  std::string known;
  for (const auto& n : ZooModelNames()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model '" + o.name + "' (zoo: " + known + ", or torchscript)");
}

// ---------------------------------------------------------------- tasks
class TaskBase : public TrainingTask {
 public:
  explicit TaskBase(const ModelOptions& o) : options_(o) {}
  const ModelOptions& options() const override { return options_; }
  int64_t steps_done() const override { return steps_; }

  double Step() override {
    torch::manual_seed(options_.seed + 1000003ull * static_cast<uint64_t>(steps_ + 1));
    optimizer_->zero_grad();
    Tensor logits = Forward(input_);
    Tensor loss = torch::nn::functional::cross_entropy(logits, target_);
    loss.backward();
    optimizer_->step();
    ++steps_;
    return loss.item<double>();
  }

  std::vector<at::Tensor> Parameters() override { return params_; }

  std::vector<PersistentTensor> PersistentTensors() override {
    std::vector<PersistentTensor> v;
    for (size_t i = 0; i < params_.size(); ++i) v.push_back({"param:" + param_names_[i], PersistentRole::kParameter, params_[i]});
    for (auto& b : Buffers()) v.push_back({"buffer:" + b.first, PersistentRole::kBuffer, b.second});
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i].grad().defined())
        v.push_back({"grad:" + param_names_[i], PersistentRole::kGradient, params_[i].grad()});
    auto& state = optimizer_->state();
    for (size_t i = 0; i < params_.size(); ++i) {
      auto it = FindOptimizerState(state, params_[i]);
      if (it == state.end()) continue;
      if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
        if (s->momentum_buffer().defined())
          v.push_back({"sgd.momentum:" + param_names_[i], PersistentRole::kOptimizerState, s->momentum_buffer()});
      } else if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
        if (a->exp_avg().defined())
          v.push_back({"adam.exp_avg:" + param_names_[i], PersistentRole::kOptimizerState, a->exp_avg()});
        if (a->exp_avg_sq().defined())
          v.push_back({"adam.exp_avg_sq:" + param_names_[i], PersistentRole::kOptimizerState, a->exp_avg_sq()});
        if (a->max_exp_avg_sq().defined())
          v.push_back({"adam.max_exp_avg_sq:" + param_names_[i], PersistentRole::kOptimizerState, a->max_exp_avg_sq()});
      }
    }
    v.push_back({"input", PersistentRole::kInput, input_});
    v.push_back({"target", PersistentRole::kTarget, target_});
    return v;
  }

 protected:
  virtual Tensor Forward(const Tensor& x) = 0;
  virtual std::vector<std::pair<std::string, Tensor>> Buffers() = 0;

  // Called by subclasses once parameters exist.
  void Init(std::vector<std::pair<std::string, Tensor>> named_params) {
    for (auto& p : named_params) {
      if (!p.second.requires_grad()) continue;
      param_names_.push_back(p.first);
      params_.push_back(p.second);
    }
    if (params_.empty())
      throw std::invalid_argument("model '" + (options_.torchscript_path.empty() ? options_.name : options_.torchscript_path) +
                                  "' has no trainable parameters");
    if (options_.optimizer == "sgd") {
      optimizer_ = std::make_unique<torch::optim::SGD>(
          params_, torch::optim::SGDOptions(options_.learning_rate).momentum(options_.momentum));
    } else if (options_.optimizer == "adam") {
      optimizer_ = std::make_unique<torch::optim::Adam>(params_, torch::optim::AdamOptions(options_.learning_rate));
    } else {
      throw std::invalid_argument("unknown optimizer '" + options_.optimizer + "' (sgd, adam)");
    }
    torch::manual_seed(options_.seed + 7);
    input_ = torch::randn({options_.batch_size, 3, options_.image_size, options_.image_size});
    target_ = torch::randint(options_.num_classes, {options_.batch_size}, torch::kLong);
  }

  ModelOptions options_;
  int64_t steps_ = 0;
  std::vector<std::string> param_names_;
  std::vector<Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  Tensor input_, target_;
};

class ZooTask : public TaskBase {
 public:
  explicit ZooTask(const ModelOptions& o) : TaskBase(o) {
    torch::manual_seed(o.seed);
    net_ = MakeNet(o);
    net_->train();
    std::vector<std::pair<std::string, Tensor>> named;
    for (auto& p : net_->named_parameters()) named.emplace_back(p.key(), p.value());
    Init(named);
  }

 protected:
  Tensor Forward(const Tensor& x) override { return net_->forward(x); }
  std::vector<std::pair<std::string, Tensor>> Buffers() override {
    std::vector<std::pair<std::string, Tensor>> v;
    for (auto& b : net_->named_buffers()) v.emplace_back(b.key(), b.value());
    return v;
  }

 private:
  std::shared_ptr<ZooNet> net_;
};

class TorchScriptTask : public TaskBase {
 public:
  explicit TorchScriptTask(const ModelOptions& o) : TaskBase(o) {
    if (o.torchscript_path.empty()) throw std::invalid_argument("torchscript model needs torchscript_path");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(o.torchscript_path, ec))
      throw std::invalid_argument("TorchScript module '" + o.torchscript_path + "' not found (looked for " +
                                  std::filesystem::absolute(o.torchscript_path, ec).string() +
                                  "): put the module back there or profile it again from where it is now");
    try {
      module_ = torch::jit::load(o.torchscript_path);
    } catch (const c10::Error& e) {
      throw std::invalid_argument("cannot load TorchScript module '" + o.torchscript_path +
                                  "': " + e.what_without_backtrace());
    }
    module_.train();
    std::vector<std::pair<std::string, Tensor>> named;
    // Every parameter of the module is trained (a module saved without
    // autograd information comes back with requires_grad off).
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      if (!p.value.requires_grad()) p.value.requires_grad_(true);
      named.emplace_back(p.name, p.value);
    }
    Init(named);
  }

 protected:
  // A model brought by a user: what it returns is checked before the loss
  // sees it, and LibTorch's errors are said without their C++ backtrace.
  Tensor Forward(const Tensor& x) override {
    c10::IValue out;
    try {
      out = module_.forward({x});
    } catch (const c10::Error& e) {
      throw FailedOn(x, e.what_without_backtrace());
    } catch (const std::runtime_error& e) {  // the interpreter's errors (torch::jit::JITException)
      throw FailedOn(x, e.what());
    }
    if (!out.isTensor())
      throw std::invalid_argument("TorchScript module '" + options_.torchscript_path + "' returned a " +
                                  out.tagKind() + ": its forward(x) must return one tensor of [batch, classes] logits");
    Tensor logits = out.toTensor();
    const int64_t batch = x.size(0);
    if (logits.dim() != 2 || logits.size(0) != batch || !logits.is_floating_point())
      throw std::invalid_argument("TorchScript module '" + options_.torchscript_path + "' returned " +
                                  ShapeOf(logits) + ": its forward(x) must return floating-point logits of [" +
                                  std::to_string(batch) + ", classes]");
    if (logits.size(1) < options_.num_classes)
      throw std::invalid_argument("TorchScript module '" + options_.torchscript_path + "' returns " +
                                  std::to_string(logits.size(1)) + " logits per sample but the training targets are drawn from " +
                                  std::to_string(options_.num_classes) + " classes: pass --classes " +
                                  std::to_string(logits.size(1)));
    return logits;
  }
  std::invalid_argument FailedOn(const Tensor& x, const std::string& why) const {
    return std::invalid_argument("TorchScript module '" + options_.torchscript_path + "' failed on an input of " +
                                 ShapeOf(x) + " (--batch, 3 channels, --image-size): " + why);
  }
  static std::string ShapeOf(const Tensor& t) {
    std::string s = "[";
    for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
    return s + "] " + std::string(c10::toString(t.scalar_type()));
  }
  std::vector<std::pair<std::string, Tensor>> Buffers() override {
    std::vector<std::pair<std::string, Tensor>> v;
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) v.emplace_back(b.name, b.value);
    return v;
  }

 private:
  torch::jit::Module module_;
};

}  // namespace

std::vector<std::string> ZooModelNames() {
  return {"alexnet", "vgg16", "vgg19", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "mobilenet_v2", "inception_v3"};
}

std::unique_ptr<TrainingTask> MakeTrainingTask(const ModelOptions& o) {
  if (o.batch_size <= 0) throw std::invalid_argument("batch_size must be positive");
  if (o.num_classes <= 1) throw std::invalid_argument("num_classes must be at least 2");
  const int64_t min_side = (o.name == "vgg16" || o.name == "vgg19" || o.name == "inception_v3") ? 32 : 16;
  if (o.name != "torchscript" && o.image_size < min_side)
    throw std::invalid_argument("image_size " + std::to_string(o.image_size) + " is too small for " + o.name +
                                " (minimum " + std::to_string(min_side) + ")");
  if (o.name == "torchscript") return std::make_unique<TorchScriptTask>(o);
  return std::make_unique<ZooTask>(o);
}

}  // namespace tensortier
