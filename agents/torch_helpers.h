// Internal to agents/: what the LibTorch agents (DQN, SAC, heat weights)
// share: config JSON readers, device selection, network archives and the
// header of an agent's state archive. Not a public header: it pulls in
// LibTorch and nlohmann/json.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tensortier {
namespace agents_internal {

using Json = nlohmann::json;

// ---------------------------------------------------------------------------
// Config JSON. `who` prefixes every message ("DqnConfig: ...").

[[noreturn]] void BadConfig(const char* who, const std::string& what);  // throws std::invalid_argument
Json ParseObject(const char* who, const std::string& text);
int AsInt(const char* who, const std::string& key, const Json& v);
double AsDouble(const char* who, const std::string& key, const Json& v);
uint64_t AsU64(const char* who, const std::string& key, const Json& v);
bool AsBool(const char* who, const std::string& key, const Json& v);
std::string AsString(const char* who, const std::string& key, const Json& v);
std::vector<int> AsIntList(const char* who, const std::string& key, const Json& v);
void CheckPositive(const char* who, const char* key, double v);  // finite and > 0
void CheckHidden(const char* who, const std::vector<int>& hidden);  // one layer or more, each >= 1

// A config's JSON form from one list of (key, member): ToJson writes every
// member, FromJson reads the keys present (the others keep their defaults)
// and refuses unknown keys and values of the wrong type.
template <typename Config>
class ConfigJson {
 public:
  using Member = std::variant<int Config::*, double Config::*, uint64_t Config::*, bool Config::*,
                              std::string Config::*, std::vector<int> Config::*>;
  ConfigJson(const char* who, std::initializer_list<std::pair<const char*, Member>> fields)
      : who_(who), fields_(fields) {}

  std::string Write(const Config& c) const {
    Json j = Json::object();
    for (const auto& [key, member] : fields_) std::visit([&](auto m) { j[key] = c.*m; }, member);
    return j.dump(2);
  }

  // Unvalidated: the caller checks the values.
  Config Read(const std::string& text) const {
    Json j = ParseObject(who_, text);
    Config c;
    for (const auto& [key, v] : j.items()) {
      const Member* member = Find(key);
      if (!member) BadConfig(who_, "unknown key '" + key + "'");
      std::visit([&](auto m) { Assign(key, v, &(c.*m)); }, *member);
    }
    return c;
  }

 private:
  const Member* Find(const std::string& key) const {
    for (const auto& [k, member] : fields_)
      if (key == k) return &member;
    return nullptr;
  }
  void Assign(const std::string& key, const Json& v, int* out) const { *out = AsInt(who_, key, v); }
  void Assign(const std::string& key, const Json& v, double* out) const { *out = AsDouble(who_, key, v); }
  void Assign(const std::string& key, const Json& v, uint64_t* out) const { *out = AsU64(who_, key, v); }
  void Assign(const std::string& key, const Json& v, bool* out) const { *out = AsBool(who_, key, v); }
  void Assign(const std::string& key, const Json& v, std::string* out) const { *out = AsString(who_, key, v); }
  void Assign(const std::string& key, const Json& v, std::vector<int>* out) const {
    *out = AsIntList(who_, key, v);
  }

  const char* who_;
  std::vector<std::pair<const char*, Member>> fields_;
};

// ---------------------------------------------------------------------------
// Devices: "auto" (CUDA when present), "cpu", "cuda", "cuda:N".

bool ValidDevice(const std::string& device);
void CheckDevice(const char* who, const std::string& device);  // BadConfig unless ValidDevice
// Throws std::runtime_error (prefixed by `who`) when CUDA is asked for and
// missing, or the device index does not exist. `name` must be ValidDevice.
// Calls InitTorchThreads first: an agent is made before its first update.
torch::Device ResolveDevice(const char* who, const std::string& name);

// LibTorch sets a thread's OpenMP thread count (the BLAS library's, when it
// is built with OpenMP) on that thread's first parallel operation, lazily;
// the matrix products before it run on OpenMP's default threads and sum in
// another order. So the first network a process trained differed in its
// last bits from the same network trained after another, and the greedy
// plans then drifted apart (pretrain --seeds' second seed against the same
// seed alone; docs/results/learning.md, session thirty-nine). Once per
// thread, before its first update (at::init_num_threads).
void InitTorchThreads();

// ---------------------------------------------------------------------------
// Networks: Linear-ReLU-...-Linear of layer widths `shape`.

std::vector<int64_t> MlpShape(int in, const std::vector<int>& hidden, int out);
std::string ShapeText(const std::vector<int64_t>& shape);  // "12-128-128-2"

// Writes a network as nested archives fc0/{weight,bias}, ... plus its shape;
// `params` are weight, bias, weight, ... in layer order.
void WriteNetwork(torch::serialize::OutputArchive& ar, const std::vector<int64_t>& shape,
                  const std::vector<torch::Tensor>& params);
enum class FiniteCheck { kNone, kRequire };
// Reads a network written by WriteNetwork, checked against `shape` (and,
// with kRequire, for NaN and infinities); CPU tensors in parameter order.
// Throws std::runtime_error starting with `what`.
std::vector<torch::Tensor> ReadNetwork(torch::serialize::InputArchive& ar, const std::vector<int64_t>& shape,
                                       const std::string& what, FiniteCheck finite = FiniteCheck::kNone);

std::string SaveArchive(torch::serialize::OutputArchive& ar);

// Runs `fn`, turning LibTorch errors into std::runtime_error.
template <typename Fn>
auto WithTorchErrors(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw std::runtime_error(what + ": " + e.what_without_backtrace());
  } catch (const std::runtime_error&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

// ---------------------------------------------------------------------------
// An agent's state archive starts with "format" (which agent), "version",
// "config" (its settings as JSON) and "updates".

constexpr int64_t kStateArchiveVersion = 1;

void WriteStateHeader(torch::serialize::OutputArchive& ar, const char* format, const std::string& config_json,
                      uint64_t updates);
struct StateHeader {
  std::string config_json;
  int64_t updates = 0;
};
// Throws std::runtime_error starting with `what` when the archive is not
// `format`'s, of another version, or lacks a field.
StateHeader ReadStateHeader(torch::serialize::InputArchive& ar, const std::string& what, const char* format);
// The config JSON in the header of state `bytes` (read on the CPU).
std::string StateConfigJson(const std::string& bytes, const std::string& what, const char* format);
// Config::FromJson, with a bad config reported as std::runtime_error about `what`.
template <typename Config>
Config ParseStateConfig(const std::string& json, const std::string& what) {
  try {
    return Config::FromJson(json);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(what + " has an invalid config: " + e.what());
  }
}
// A required value of the archive; throws std::runtime_error when missing.
c10::IValue ReadValue(torch::serialize::InputArchive& ar, const char* key, const std::string& what);

}  // namespace agents_internal
}  // namespace tensortier
