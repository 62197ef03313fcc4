#include "agents/torch_helpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <ATen/Parallel.h>

namespace tensortier {
namespace agents_internal {
namespace {

std::string Describe(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + s;
}

}  // namespace

[[noreturn]] void BadConfig(const char* who, const std::string& what) {
  throw std::invalid_argument(std::string(who) + ": " + what);
}

Json ParseObject(const char* who, const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    BadConfig(who, std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) BadConfig(who, "expected a JSON object, got " + Describe(j));
  return j;
}

int AsInt(const char* who, const std::string& key, const Json& v) {
  if (!v.is_number_integer()) BadConfig(who, "'" + key + "' must be an integer, got " + Describe(v));
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int>::max()))
      BadConfig(who, "'" + key + "' is out of range: " + v.dump());
    return static_cast<int>(u);
  }
  int64_t i = v.get<int64_t>();
  if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max())
    BadConfig(who, "'" + key + "' is out of range: " + v.dump());
  return static_cast<int>(i);
}

double AsDouble(const char* who, const std::string& key, const Json& v) {
  if (!v.is_number()) BadConfig(who, "'" + key + "' must be a number, got " + Describe(v));
  return v.get<double>();
}

uint64_t AsU64(const char* who, const std::string& key, const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  BadConfig(who, "'" + key + "' must be a non-negative integer, got " + Describe(v));
}

bool AsBool(const char* who, const std::string& key, const Json& v) {
  if (!v.is_boolean()) BadConfig(who, "'" + key + "' must be true or false, got " + Describe(v));
  return v.get<bool>();
}

std::string AsString(const char* who, const std::string& key, const Json& v) {
  if (!v.is_string()) BadConfig(who, "'" + key + "' must be a string, got " + Describe(v));
  return v.get<std::string>();
}

std::vector<int> AsIntList(const char* who, const std::string& key, const Json& v) {
  if (!v.is_array()) BadConfig(who, "'" + key + "' must be an array of integers, got " + Describe(v));
  std::vector<int> out;
  for (const auto& h : v) out.push_back(AsInt(who, key + "[]", h));
  return out;
}

void CheckPositive(const char* who, const char* key, double v) {
  if (!(v > 0) || !std::isfinite(v)) BadConfig(who, std::string(key) + " must be positive");
}

void CheckHidden(const char* who, const std::vector<int>& hidden) {
  if (hidden.empty()) BadConfig(who, "hidden must list at least one layer size");
  for (int h : hidden)
    if (h < 1) BadConfig(who, "hidden layer sizes must be at least 1");
}

void CheckDevice(const char* who, const std::string& device) {
  if (!ValidDevice(device)) BadConfig(who, "device '" + device + "' is not one of auto, cpu, cuda, cuda:N");
}

bool ValidDevice(const std::string& device) {
  if (device == "auto" || device == "cpu" || device == "cuda") return true;
  return device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 8 &&
         std::all_of(device.begin() + 5, device.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void InitTorchThreads() {
  thread_local bool done = false;
  if (done) return;
  at::init_num_threads();
  done = true;
}

torch::Device ResolveDevice(const char* who, const std::string& name) {
  InitTorchThreads();
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "auto")
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (!torch::cuda::is_available())
    throw std::runtime_error(std::string(who) + ": device '" + name +
                             "' was requested but CUDA is not available to this LibTorch build "
                             "or machine (use \"auto\" or \"cpu\")");
  int index = name.size() > 5 ? std::stoi(name.substr(5)) : 0;
  int count = static_cast<int>(torch::cuda::device_count());
  if (index >= count)
    throw std::runtime_error(std::string(who) + ": device '" + name + "' does not exist (" +
                             std::to_string(count) + " CUDA device(s))");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::vector<int64_t> MlpShape(int in, const std::vector<int>& hidden, int out) {
  std::vector<int64_t> shape{in};
  for (int h : hidden) shape.push_back(h);
  shape.push_back(out);
  return shape;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "-" : "") + std::to_string(shape[i]);
  return s;
}

void WriteNetwork(torch::serialize::OutputArchive& ar, const std::vector<int64_t>& shape,
                  const std::vector<torch::Tensor>& params) {
  ar.write("shape", torch::tensor(shape, torch::kInt64), /*is_buffer=*/true);
  for (size_t i = 0; i + 1 < shape.size(); ++i) {
    torch::serialize::OutputArchive layer(ar.compilation_unit());
    layer.write("weight", params[2 * i].detach().to(torch::kCPU).clone());
    layer.write("bias", params[2 * i + 1].detach().to(torch::kCPU).clone());
    ar.write("fc" + std::to_string(i), layer);
  }
}

std::vector<torch::Tensor> ReadNetwork(torch::serialize::InputArchive& ar, const std::vector<int64_t>& shape,
                                       const std::string& what, FiniteCheck finite) {
  torch::Tensor stored;
  if (!ar.try_read("shape", stored, /*is_buffer=*/true) || stored.dim() != 1 ||
      stored.scalar_type() != torch::kInt64)
    throw std::runtime_error(what + " has no network shape record");
  stored = stored.to(torch::kCPU).contiguous();
  std::vector<int64_t> got(stored.data_ptr<int64_t>(), stored.data_ptr<int64_t>() + stored.numel());
  if (got != shape)
    throw std::runtime_error(what + " holds a network of shape " + ShapeText(got) +
                             " but this agent's network is " + ShapeText(shape));
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i + 1 < shape.size(); ++i) {
    std::string name = "fc" + std::to_string(i);
    torch::serialize::InputArchive layer;
    if (!ar.try_read(name, layer)) throw std::runtime_error(what + " lacks layer " + name);
    for (const char* field : {"weight", "bias"}) {
      torch::Tensor t;
      if (!layer.try_read(field, t)) throw std::runtime_error(what + " lacks " + name + "." + field);
      std::vector<int64_t> want = std::string(field) == "weight" ? std::vector<int64_t>{shape[i + 1], shape[i]}
                                                                 : std::vector<int64_t>{shape[i + 1]};
      if (t.sizes().vec() != want || t.scalar_type() != torch::kFloat32)
        throw std::runtime_error(what + ": " + name + "." + field + " has shape " + ShapeText(t.sizes().vec()) +
                                 " (" + std::string(c10::toString(t.scalar_type())) + "), expected " +
                                 ShapeText(want) + " (Float)");
      torch::Tensor v = t.detach().to(torch::kCPU).contiguous();
      if (finite == FiniteCheck::kRequire && !torch::isfinite(v).all().item<bool>())
        throw std::runtime_error(what + ": " + name + "." + field + " holds non-finite values");
      out.push_back(v);
    }
  }
  return out;
}

std::string SaveArchive(torch::serialize::OutputArchive& ar) {
  std::ostringstream os;
  ar.save_to(os);
  return os.str();
}

void WriteStateHeader(torch::serialize::OutputArchive& ar, const char* format, const std::string& config_json,
                      uint64_t updates) {
  ar.write("format", c10::IValue(std::string(format)));
  ar.write("version", c10::IValue(kStateArchiveVersion));
  ar.write("config", c10::IValue(config_json));
  ar.write("updates", c10::IValue(static_cast<int64_t>(updates)));
}

c10::IValue ReadValue(torch::serialize::InputArchive& ar, const char* key, const std::string& what) {
  c10::IValue v;
  if (!ar.try_read(key, v)) throw std::runtime_error(what + " lacks '" + key + "'");
  return v;
}

StateHeader ReadStateHeader(torch::serialize::InputArchive& ar, const std::string& what, const char* format) {
  c10::IValue f = ReadValue(ar, "format", what);
  if (!f.isString() || f.toStringRef() != format) throw std::runtime_error(what + " is not a " + format + " state");
  c10::IValue version = ReadValue(ar, "version", what);
  if (!version.isInt() || version.toInt() != kStateArchiveVersion)
    throw std::runtime_error(what + " has an unsupported version");
  StateHeader h;
  c10::IValue u = ReadValue(ar, "updates", what);
  if (!u.isInt() || u.toInt() < 0) throw std::runtime_error(what + " has an invalid update counter");
  h.updates = u.toInt();
  c10::IValue config = ReadValue(ar, "config", what);
  if (!config.isString()) throw std::runtime_error(what + " has no config record");
  h.config_json = config.toStringRef();
  return h;
}

std::string StateConfigJson(const std::string& bytes, const std::string& what, const char* format) {
  return WithTorchErrors(what, [&] {
    torch::serialize::InputArchive ar;
    ar.load_from(bytes.data(), bytes.size(), torch::Device(torch::kCPU));
    return ReadStateHeader(ar, what, format).config_json;
  });
}

}  // namespace agents_internal
}  // namespace tensortier
