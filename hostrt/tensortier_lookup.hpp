// C++ wrapper over the TensorTier host runtime's C API (tensortier_lookup.h).
// Header only, C++11, standard library only.
//
//   tensortier::lookup::Lookup policy;
//   std::string why;
//   if (!tensortier::lookup::Lookup::TryOpen(path, &policy, &why)) { keep the default allocator; }
//   tensortier::lookup::PlanView plan = policy.FindPlan(signature, batch, dram_budget_bytes);
//   if (plan) tier = plan.InitialTier(tensor); else tier = policy.Decide(features, n);
#ifndef TENSORTIER_LOOKUP_HPP_
#define TENSORTIER_LOOKUP_HPP_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tensortier_lookup.h"

namespace tensortier {
namespace lookup {

// A refused file or a failed query; code() is a TT_LOOKUP_ERR_* value.
class LookupError : public std::runtime_error {
 public:
  LookupError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

enum class Tier : int { kDram = TT_LOOKUP_TIER_DRAM, kSlow = TT_LOOKUP_TIER_SLOW };

// One plan of an open file; valid() is false when the key had none. Cheap to
// copy; must not outlive its Lookup.
class PlanView {
 public:
  PlanView() {}
  PlanView(const tt_lookup* handle, int32_t id) : handle_(handle), id_(id) {}

  bool valid() const { return handle_ != nullptr && id_ >= 0; }
  explicit operator bool() const { return valid(); }
  int32_t id() const { return id_; }

  tt_lookup_plan_info info() const {
    tt_lookup_plan_info out = tt_lookup_plan_info();
    Check(tt_lookup_plan_info_at(handle_, id_, &out));
    return out;
  }
  // Tier tensor `tensor` is allocated in.
  Tier InitialTier(uint32_t tensor) const {
    return static_cast<Tier>(Check(tt_lookup_plan_tier_at(handle_, id_, tensor)));
  }
  // The migrations that start when kernel `after_kernel` ends.
  std::vector<tt_lookup_migration> MigrationsAfter(int32_t after_kernel) const {
    std::vector<tt_lookup_migration> out;
    MigrationsAfter(after_kernel, &out);
    return out;
  }
  // As above into a reused buffer (no allocation once it is large enough).
  void MigrationsAfter(int32_t after_kernel, std::vector<tt_lookup_migration>* out) const {
    int32_t n = Check(tt_lookup_plan_migrations_at(handle_, id_, after_kernel, out->data(), out->size()));
    if (static_cast<size_t>(n) > out->size()) {
      out->resize(static_cast<size_t>(n));
      n = Check(tt_lookup_plan_migrations_at(handle_, id_, after_kernel, out->data(), out->size()));
    }
    out->resize(static_cast<size_t>(n));
  }

 private:
  static int32_t Check(int32_t rc) {
    if (rc < 0) throw LookupError(rc, std::string("tensortier lookup: ") + tt_lookup_status_name(rc));
    return rc;
  }
  const tt_lookup* handle_ = nullptr;
  int32_t id_ = -1;
};

// An open, validated lookup file. Move-only; const methods are thread-safe.
class Lookup {
 public:
  Lookup() {}
  ~Lookup() { tt_lookup_close(handle_); }
  Lookup(Lookup&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  Lookup& operator=(Lookup&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;

  // Throw LookupError naming the file and the problem.
  static Lookup Open(const std::string& path) {
    Lookup l;
    char err[512];
    int rc = tt_lookup_open(path.c_str(), &l.handle_, err, sizeof err);
    if (rc != TT_LOOKUP_OK) throw LookupError(rc, err);
    return l;
  }
  static Lookup OpenForModel(const std::string& path, uint64_t model_signature) {
    Lookup l;
    char err[512];
    int rc = tt_lookup_open_for_model(path.c_str(), model_signature, &l.handle_, err, sizeof err);
    if (rc != TT_LOOKUP_OK) throw LookupError(rc, err);
    return l;
  }
  // For hosts that fall back to their defaults: false and the reason instead of a throw.
  static bool TryOpen(const std::string& path, Lookup* out, std::string* error = nullptr) {
    try {
      *out = Open(path);
      return true;
    } catch (const LookupError& e) {
      if (error) *error = e.what();
      return false;
    }
  }

  bool is_open() const { return handle_ != nullptr; }
  const tt_lookup* handle() const { return handle_; }

  uint64_t primary_signature() const { return tt_lookup_primary_signature(handle_); }
  uint32_t plan_count() const { return tt_lookup_plan_count(handle_); }
  bool has_generalised() const { return tt_lookup_has_generalised(handle_) != 0; }
  size_t observation_size() const { return tt_lookup_observation_size(handle_); }
  std::string info_text() const { return tt_lookup_info_text(handle_); }

  PlanView FindPlan(uint64_t model_signature, uint32_t batch_size, uint64_t dram_budget_bytes) const {
    return PlanView(handle_, tt_lookup_find_plan(handle_, model_signature, batch_size, dram_budget_bytes));
  }
  PlanView PlanAt(int32_t id) const {
    return id >= 0 && static_cast<uint32_t>(id) < plan_count() ? PlanView(handle_, id) : PlanView();
  }

  // The generalised lookup's action: 0 DRAM, 1 slow; negative on error (no
  // generalised part, wrong feature count). No throw: this is the hot path.
  int Decide(const float* features, size_t n) const { return tt_lookup_decide(handle_, features, n); }
  int Decide(const std::vector<float>& features) const { return Decide(features.data(), features.size()); }
  int DecideTable(const float* features, size_t n) const { return tt_lookup_decide_table(handle_, features, n); }
  uint32_t NetworkLayers() const { return tt_lookup_network_layers(handle_); }

 private:
  tt_lookup* handle_ = nullptr;
};

}  // namespace lookup
}  // namespace tensortier

#endif  // TENSORTIER_LOOKUP_HPP_
