// Fuzz target: the host runtime's lookup reader (hostrt/tensortier_lookup.h,
// tt_lookup_open_memory) and every query on what it accepts. The bytes are
// tried twice: as given (checksums must catch corruption), and with both
// CRCs recomputed so that mutations reach the structural checks behind them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hostrt/lookup_format.h"
#include "hostrt/tensortier_lookup.h"

namespace {

namespace lf = tensortier::lookup_format;

void StoreU32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

void Exercise(const tt_lookup* h, const uint8_t* data, size_t size) {
  (void)tt_lookup_primary_signature(h);
  (void)tt_lookup_file_bytes(h);
  (void)tt_lookup_info_text(h);
  const uint32_t plans = tt_lookup_plan_count(h);
  for (uint32_t p = 0; p < plans && p < 8; ++p) {
    tt_lookup_plan_info info;
    if (tt_lookup_plan_info_at(h, static_cast<int32_t>(p), &info) != TT_LOOKUP_OK) continue;
    (void)tt_lookup_find_plan(h, info.model_signature, info.batch_size, info.dram_budget_bytes);
    for (uint32_t t = 0; t <= info.num_tensors && t < 256; ++t)
      (void)tt_lookup_plan_tier_at(h, static_cast<int32_t>(p), t);
    tt_lookup_migration out[16];
    for (int32_t k = -1; k <= static_cast<int32_t>(info.num_kernels) && k < 256; ++k)
      (void)tt_lookup_plan_migrations_at(h, static_cast<int32_t>(p), k, out, 16);
    (void)tt_lookup_plan_migrations_at(h, static_cast<int32_t>(p), 0, nullptr, 0);
  }
  (void)tt_lookup_plan_tier_at(h, static_cast<int32_t>(plans), 0);
  (void)tt_lookup_plan_tier_at(h, -1, 0);
  if (tt_lookup_has_generalised(h)) {
    tt_lookup_generalised_info g;
    if (tt_lookup_generalised_info_get(h, &g) == TT_LOOKUP_OK) {
      for (uint32_t f = 0; f <= g.feature_count && f < 64; ++f) {
        tt_lookup_feature_info fi;
        (void)tt_lookup_feature_info_at(h, f, &fi);
      }
    }
    const uint32_t n = tt_lookup_observation_size(h);
    if (n < 4096) {
      // Observations from the input's bytes (any float, NaN and inf included).
      std::vector<float> obs(n, 0.0f);
      for (size_t i = 0; i < n && (i + 1) * sizeof(float) <= size; ++i) std::memcpy(&obs[i], data + i * 4, 4);
      (void)tt_lookup_decide(h, obs.data(), obs.size());
      (void)tt_lookup_decide_table(h, obs.data(), obs.size());
      (void)tt_lookup_network_layers(h);
      (void)tt_lookup_cell(h, obs.data(), obs.size());
      (void)tt_lookup_decide(h, obs.data(), obs.size() + 1);  // wrong feature count
    }
    for (uint32_t c = 0; c < 40; ++c) (void)tt_lookup_constant(h, c);
  }
}

void Try(const uint8_t* data, size_t size) {
  tt_lookup* h = nullptr;
  char err[256];
  const int rc = tt_lookup_open_memory(data, size, "fuzz", &h, err, sizeof err);
  (void)tt_lookup_status_name(rc);
  if (rc == TT_LOOKUP_OK) Exercise(h, data, size);
  tt_lookup_close(h);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Try(data, size);
  if (size >= lf::kHeaderBytes) {
    std::vector<unsigned char> fixed(data, data + size);
    StoreU32(fixed.data() + lf::kOffPayloadCrc, lf::Crc32(fixed.data() + lf::kHeaderBytes, size - lf::kHeaderBytes));
    StoreU32(fixed.data() + lf::kOffHeaderCrc, lf::Crc32(fixed.data(), lf::kOffHeaderCrc));
    Try(fixed.data(), fixed.size());
  }
  return 0;
}
