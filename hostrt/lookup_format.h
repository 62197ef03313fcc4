// The lookup file's binary layout (docs/lookup-format.md), shared by the
// host runtime that reads it and the exporter that writes it. Internal: not
// installed; hosts see only tensortier_lookup.h(pp). C++11, standard library
// only. Every multi-byte field is little-endian; offsets are from the start
// of the file (header, directory) or of the section (inside sections).
#ifndef TENSORTIER_HOSTRT_LOOKUP_FORMAT_H_
#define TENSORTIER_HOSTRT_LOOKUP_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace tensortier {
namespace lookup_format {

constexpr char kMagic[8] = {'T', 'T', 'L', 'O', 'O', 'K', 'U', 'P'};
constexpr uint32_t kFormatVersion = 1;

// Header: 64 bytes at offset 0.
constexpr size_t kHeaderBytes = 64;
constexpr size_t kOffMagic = 0;              // 8 bytes
constexpr size_t kOffVersion = 8;            // u32
constexpr size_t kOffHeaderBytes = 12;       // u32, = kHeaderBytes
constexpr size_t kOffFileBytes = 16;         // u64, the whole file
constexpr size_t kOffPayloadCrc = 24;        // u32, CRC-32 of bytes [kHeaderBytes, file_bytes)
constexpr size_t kOffSectionCount = 28;      // u32
constexpr size_t kOffPrimarySignature = 32;  // u64, the workload the policy was trained on
constexpr size_t kOffObservationSize = 40;   // u32, floats per observation (0 = no generalised part)
constexpr size_t kOffFlags = 44;             // u32, kFlag*
constexpr size_t kOffCreatedUnix = 48;       // u64, seconds since the epoch
constexpr size_t kOffReserved = 56;          // u32, 0
constexpr size_t kOffHeaderCrc = 60;         // u32, CRC-32 of header bytes [0, 60)

constexpr uint32_t kFlagHasPlans = 1u << 0;
constexpr uint32_t kFlagHasGeneralised = 1u << 1;
constexpr uint32_t kFlagHasNetwork = 1u << 2;

// Section directory: section_count entries of 24 bytes right after the header.
constexpr size_t kDirEntryBytes = 24;  // u32 kind, u32 reserved, u64 offset, u64 bytes
enum SectionKind : uint32_t {
  kSectionPlans = 1,
  kSectionGeneralised = 2,
  kSectionInfo = 3,  // UTF-8 "key: value" lines, for people (tensortier inspect)
  kSectionNetwork = 4,  // the policy's network itself, for models no plan table holds
};
constexpr uint32_t kMaxSections = 16;

// Plans section: u32 plan_count, u32 reserved, then plan_count entries.
constexpr size_t kPlansHeadBytes = 8;
constexpr size_t kPlanEntryBytes = 48;
// entry: u64 model_signature, u64 dram_budget_bytes, u32 batch_size,
// u32 num_tensors, u32 num_kernels, u32 num_migrations, u32 mode,
// u32 reserved, u64 data_offset (from the section start, 8-aligned).
// data: tiers bitmap (ceil(T/64) u64; bit t set = tensor t starts in the slow
// tier), migration index ((K + 2) u32, padded to 8 bytes: migrations after
// kernel k are [index[k + 1], index[k + 2]), k = -1 .. K-1), migrations
// (num_migrations x {i32 after_kernel, u32 tensor | to_tier << 31}).
constexpr size_t kMigrationBytes = 8;
constexpr uint32_t kMigrationTierBit = 1u << 31;

// Generalised section head: 24 bytes, then feature entries, constants, remap
// tables, the action bitmap.
constexpr size_t kGenHeadBytes = 24;
// head: u32 observation_size, u32 feature_count, u32 cell_count,
//       u32 fine_bins, u32 constant_count, u32 reserved
constexpr size_t kFeatureEntryBytes = 16;
// feature: u16 observation_index, u16 bins, f32 lo, f32 scale, u32 stride
// A feature's bin: fine = clamp(int((x - lo) * scale), 0, fine_bins - 1),
// bin = remap[feature][fine] (< bins). The cell is sum(bin * stride): a
// mixed-radix number, strides being the products of the earlier features'
// bin counts, so cell_count = product of bins and no key space is wasted on
// bin counts that are not powers of two. Action = bit `cell` of the bitmap.
constexpr uint32_t kMaxCells = 1u << 24;   // 2 MiB bitmap: far above the 64 KiB goal
constexpr uint32_t kMaxFineBins = 65536;
constexpr uint32_t kMaxBinsPerFeature = 256;  // remap entries are u8

// Network section (only beside a generalised section, whose observations it
// reads): head 16 bytes, u32 input_size (= the observation size), u32
// layer_count, u32 reserved x 2; then layer_count entries of 8 bytes (u32
// in, u32 out); then per layer f32 weights [out][in] row-major and f32
// biases [out]. Fully connected layers with ReLU between them and none after
// the last; the action is the argmax of the last layer's 2 outputs, the
// lowest on a tie (DQN's Q-values, SAC's actor logits).
constexpr size_t kNetHeadBytes = 16;
constexpr size_t kNetLayerBytes = 8;
constexpr uint32_t kMaxNetLayers = 16;
constexpr uint32_t kMaxNetWidth = 4096;

// The forward pass of one layer's output unit, written once here so that the
// exporter (which checks the file) and the runtime sum in the same order:
// eight lanes, as DqnAgent's host forward pass does, so that both answer
// alike even at near ties.
inline float NetDot(const float* w, const float* x, uint32_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += w[i + k] * x[i + k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += w[i] * x[i];
  return s;
}

// Constants in the generalised section (f64), in this order. The host needs
// them to compute the observation it passes to tt_lookup_decide for a model
// the learner never saw (docs/mdp.md, envs/heat.h); the quantiser's own
// normalisation (lo, scale, remap) is in the feature entries.
enum ConstantIndex : uint32_t {
  kConstHeatWr = 0,            // Algorithm 1 starting weights
  kConstHeatWf,
  kConstHeatWs,
  kConstHeatWl,
  kConstHeatThreshold,
  kConstHeatBandLow,           // hot bytes in [low, high] x L_D stop the adjustment
  kConstHeatBandHigh,
  kConstHeatStep,              // multiplicative weight step (1.02)
  kConstHeatSizeSwitch,        // live >= this x L_D adjusts w_s, else w_r
  kConstHeatMaxIterations,
  kConstPendingCap,            // observation 11 is min(cap, undecided / L_D) / cap
  kConstNewTensorTier,         // observation 0 for a tensor not yet allocated
  kConstTrainedDramLimit,      // L_D of the run the policy was trained in (bytes)
  kConstCount
};

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32), table driven.
uint32_t Crc32(const void* data, size_t bytes, uint32_t crc = 0);

// Little-endian field access (the runtime refuses big-endian hosts).
inline uint16_t LoadU16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t LoadU32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t LoadU64(const unsigned char* p) {
  return static_cast<uint64_t>(LoadU32(p)) | (static_cast<uint64_t>(LoadU32(p + 4)) << 32);
}

// The fine bin of one feature value. Written once here so that the exporter
// (which fills the table) and the runtime (which reads it) cannot disagree by
// a rounding: NaN and values below lo go to bin 0, values at or above the top
// to the last bin.
inline uint32_t FineIndex(float x, float lo, float scale, float top) {
  float v = (x - lo) * scale;
  v = v > 0.0f ? v : 0.0f;  // also maps NaN to 0
  v = v < top ? v : top;
  return static_cast<uint32_t>(v);
}

}  // namespace lookup_format
}  // namespace tensortier

#endif  // TENSORTIER_HOSTRT_LOOKUP_FORMAT_H_
