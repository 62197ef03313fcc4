// The host runtime: reads and validates a lookup file once, then answers
// queries from the in-memory copy without further checks (every index a query
// can reach was range-checked at open).
#include "hostrt/tensortier_lookup.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "hostrt/lookup_format.h"

namespace lf = tensortier::lookup_format;

namespace {

struct Feature {
  uint32_t index;        // into the observation
  uint32_t stride;       // of its bin in the cell number
  float lo, scale, top;  // top = fine_bins - 1
  const uint8_t* remap;  // fine bin -> bin, fine_bins entries
  uint32_t bins;
};

struct Plan {
  uint64_t signature;
  uint64_t budget;
  uint32_t batch, tensors, kernels, migrations, mode;
  const uint64_t* tiers;            // bit t = slow
  const unsigned char* index;       // (kernels + 2) u32
  const unsigned char* records;     // migrations x 8 bytes
};

uint64_t MixKey(uint64_t signature, uint32_t batch, uint64_t budget) {
  // splitmix64 finaliser over the three fields: signatures are already
  // hashes, but budgets and batches are small round numbers.
  uint64_t x = signature ^ (budget * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(batch) << 40);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

uint32_t LoadU32At(const unsigned char* base, size_t i) { return lf::LoadU32(base + 4 * i); }

bool IsLittleEndian() {
  const uint32_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

}  // namespace

struct tt_lookup {
  std::vector<uint64_t> storage;  // the file, 8-byte aligned
  const unsigned char* bytes = nullptr;
  uint64_t file_bytes = 0;
  uint64_t primary_signature = 0;
  uint32_t observation_size = 0;

  std::vector<Plan> plans;
  std::vector<int32_t> slots;  // open addressing over plans; -1 = empty
  uint64_t slot_mask = 0;

  bool has_generalised = false;
  uint32_t gen_observation_size = 0;
  uint32_t cell_count = 0;
  uint32_t fine_bins = 0;
  uint64_t gen_bytes = 0;
  std::vector<Feature> features;
  std::vector<double> constants;
  const uint64_t* table = nullptr;

  // The policy's network (kSectionNetwork), copied out of the file: a
  // decision for a model without a plan table is its forward pass.
  struct NetLayer {
    uint32_t in, out;
    size_t weight, bias;  // offsets into net_params
  };
  std::vector<NetLayer> net_layers;
  std::vector<float> net_params;
  uint32_t net_max_width = 0;
  uint64_t net_bytes = 0;

  std::string info;

  int32_t Find(uint64_t signature, uint32_t batch, uint64_t budget) const {
    if (slots.empty()) return TT_LOOKUP_ERR_NOT_FOUND;
    for (uint64_t s = MixKey(signature, batch, budget) & slot_mask;; s = (s + 1) & slot_mask) {
      int32_t p = slots[s];
      if (p < 0) return TT_LOOKUP_ERR_NOT_FOUND;
      const Plan& q = plans[static_cast<size_t>(p)];
      if (q.signature == signature && q.batch == batch && q.budget == budget) return p;
    }
  }
};

namespace {

// Collects the first problem found while validating.
class Loader {
 public:
  Loader(tt_lookup& h, std::string name) : h_(h), name_(std::move(name)) {}

  int Fail(int code, const std::string& what) {
    if (error_.empty()) {
      code_ = code;
      error_ = "lookup file '" + name_ + "': " + what;
    }
    return code;
  }
  const std::string& error() const { return error_; }

  int Load();

 private:
  int LoadPlans(const unsigned char* s, uint64_t bytes);
  int LoadGeneralised(const unsigned char* s, uint64_t bytes);
  int LoadNetwork(const unsigned char* s, uint64_t bytes);

  tt_lookup& h_;
  std::string name_;
  std::string error_;
  int code_ = TT_LOOKUP_OK;
};

int Loader::Load() {
  const unsigned char* b = h_.bytes;
  const uint64_t size = h_.file_bytes;
  if (size < sizeof lf::kMagic)
    return Fail(TT_LOOKUP_ERR_TRUNCATED, "truncated: " + std::to_string(size) + " bytes, too short to be a lookup file");
  if (std::memcmp(b, lf::kMagic, sizeof lf::kMagic) != 0)
    return Fail(TT_LOOKUP_ERR_BAD_MAGIC, "not a TensorTier lookup file (bad magic; expected \"TTLOOKUP\")");
  if (size < lf::kHeaderBytes)
    return Fail(TT_LOOKUP_ERR_TRUNCATED, "truncated: " + std::to_string(size) + " bytes, shorter than the " +
                                             std::to_string(lf::kHeaderBytes) + "-byte header");
  if (!IsLittleEndian())
    return Fail(TT_LOOKUP_ERR_MALFORMED, "this runtime reads lookup files on little-endian hosts only");
  const uint32_t version = lf::LoadU32(b + lf::kOffVersion);
  if (version != lf::kFormatVersion)
    return Fail(TT_LOOKUP_ERR_VERSION, "wrong format version " + std::to_string(version) +
                                           "; this runtime reads version " + std::to_string(lf::kFormatVersion) +
                                           " (export the policy again with a matching tensortier, or update the runtime)");
  const uint32_t stored_header_crc = lf::LoadU32(b + lf::kOffHeaderCrc);
  const uint32_t header_crc = lf::Crc32(b, lf::kOffHeaderCrc);
  if (stored_header_crc != header_crc)
    return Fail(TT_LOOKUP_ERR_CHECKSUM, "corrupt header: checksum mismatch (stored " + Hex32(stored_header_crc) +
                                            ", computed " + Hex32(header_crc) + ")");
  if (lf::LoadU32(b + lf::kOffHeaderBytes) != lf::kHeaderBytes)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "header size " + std::to_string(lf::LoadU32(b + lf::kOffHeaderBytes)) +
                                             " is not " + std::to_string(lf::kHeaderBytes));
  const uint64_t declared = lf::LoadU64(b + lf::kOffFileBytes);
  if (declared > size)
    return Fail(TT_LOOKUP_ERR_TRUNCATED, "truncated: the header says " + std::to_string(declared) +
                                             " bytes, the file has " + std::to_string(size));
  if (declared < size)
    return Fail(TT_LOOKUP_ERR_MALFORMED, std::to_string(size - declared) +
                                             " unexpected bytes after the end the header gives (" +
                                             std::to_string(declared) + " bytes)");
  const uint32_t stored_crc = lf::LoadU32(b + lf::kOffPayloadCrc);
  const uint32_t crc = lf::Crc32(b + lf::kHeaderBytes, static_cast<size_t>(size - lf::kHeaderBytes));
  if (stored_crc != crc)
    return Fail(TT_LOOKUP_ERR_CHECKSUM, "corrupt payload: checksum mismatch (stored " + Hex32(stored_crc) +
                                            ", computed " + Hex32(crc) + ")");

  h_.primary_signature = lf::LoadU64(b + lf::kOffPrimarySignature);
  h_.observation_size = lf::LoadU32(b + lf::kOffObservationSize);
  const uint32_t flags = lf::LoadU32(b + lf::kOffFlags);
  const uint32_t sections = lf::LoadU32(b + lf::kOffSectionCount);
  if (sections > lf::kMaxSections)
    return Fail(TT_LOOKUP_ERR_MALFORMED, std::to_string(sections) + " sections (at most " +
                                             std::to_string(lf::kMaxSections) + ")");
  const uint64_t dir_end = lf::kHeaderBytes + static_cast<uint64_t>(sections) * lf::kDirEntryBytes;
  if (dir_end > size) return Fail(TT_LOOKUP_ERR_MALFORMED, "the section directory runs past the end of the file");
  bool seen[5] = {false, false, false, false, false};
  const unsigned char* network = nullptr;
  uint64_t network_bytes = 0;
  for (uint32_t i = 0; i < sections; ++i) {
    const unsigned char* e = b + lf::kHeaderBytes + i * lf::kDirEntryBytes;
    const uint32_t kind = lf::LoadU32(e);
    const uint64_t offset = lf::LoadU64(e + 8);
    const uint64_t bytes = lf::LoadU64(e + 16);
    if (offset < dir_end || offset % 8 != 0 || bytes > size || offset > size - bytes)
      return Fail(TT_LOOKUP_ERR_MALFORMED, "section " + std::to_string(i) + " (kind " + std::to_string(kind) +
                                               ") lies outside the file or is misaligned");
    if (kind >= 1 && kind <= 4) {
      if (seen[kind]) return Fail(TT_LOOKUP_ERR_MALFORMED, "section kind " + std::to_string(kind) + " appears twice");
      seen[kind] = true;
    }
    int rc = TT_LOOKUP_OK;
    if (kind == lf::kSectionPlans) rc = LoadPlans(b + offset, bytes);
    else if (kind == lf::kSectionGeneralised) rc = LoadGeneralised(b + offset, bytes);
    else if (kind == lf::kSectionInfo) h_.info.assign(reinterpret_cast<const char*>(b + offset), bytes);
    else if (kind == lf::kSectionNetwork) network = b + offset, network_bytes = bytes;  // read after the table's
    // Unknown kinds are skipped: a later minor addition may add sections.
    if (rc != TT_LOOKUP_OK) return rc;
  }
  if (((flags & lf::kFlagHasPlans) != 0) != seen[lf::kSectionPlans] ||
      ((flags & lf::kFlagHasGeneralised) != 0) != seen[lf::kSectionGeneralised] ||
      ((flags & lf::kFlagHasNetwork) != 0) != seen[lf::kSectionNetwork])
    return Fail(TT_LOOKUP_ERR_MALFORMED, "the header's flags do not match the sections present");
  if (network) {
    if (!seen[lf::kSectionGeneralised])
      return Fail(TT_LOOKUP_ERR_MALFORMED, "a network section without the generalised lookup it belongs to");
    const int rc = LoadNetwork(network, network_bytes);
    if (rc != TT_LOOKUP_OK) return rc;
  }
  if (!seen[lf::kSectionPlans] && !seen[lf::kSectionGeneralised])
    return Fail(TT_LOOKUP_ERR_MALFORMED, "holds neither plan tables nor a generalised lookup");
  return TT_LOOKUP_OK;
}

int Loader::LoadPlans(const unsigned char* s, uint64_t bytes) {
  if (bytes < lf::kPlansHeadBytes) return Fail(TT_LOOKUP_ERR_MALFORMED, "plans section shorter than its head");
  const uint32_t count = lf::LoadU32(s);
  if (count > (bytes - lf::kPlansHeadBytes) / lf::kPlanEntryBytes)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "plans section lists " + std::to_string(count) + " plans but is " +
                                             std::to_string(bytes) + " bytes long");
  h_.plans.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* e = s + lf::kPlansHeadBytes + static_cast<uint64_t>(i) * lf::kPlanEntryBytes;
    Plan p;
    p.signature = lf::LoadU64(e);
    p.budget = lf::LoadU64(e + 8);
    p.batch = lf::LoadU32(e + 16);
    p.tensors = lf::LoadU32(e + 20);
    p.kernels = lf::LoadU32(e + 24);
    p.migrations = lf::LoadU32(e + 28);
    p.mode = lf::LoadU32(e + 32);
    const uint64_t data = lf::LoadU64(e + 40);
    const std::string which = "plan " + std::to_string(i) + " (model " + Hex(p.signature) + ")";
    if (p.mode > 1) return Fail(TT_LOOKUP_ERR_MALFORMED, which + " has unknown migration mode " + std::to_string(p.mode));
    if (p.tensors > (1u << 31) - 1 || p.kernels > (1u << 30) || p.migrations > (1u << 30))
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + " has implausible sizes");
    const uint64_t tier_bytes = (static_cast<uint64_t>(p.tensors) + 63) / 64 * 8;
    const uint64_t index_bytes = ((static_cast<uint64_t>(p.kernels) + 2) * 4 + 7) / 8 * 8;
    const uint64_t need = tier_bytes + index_bytes + static_cast<uint64_t>(p.migrations) * lf::kMigrationBytes;
    if (data % 8 != 0 || data > bytes || need > bytes - data)
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + " lies outside the plans section");
    p.tiers = reinterpret_cast<const uint64_t*>(s + data);
    p.index = s + data + tier_bytes;
    p.records = p.index + index_bytes;
    // Check the migration index and records once, so queries need not.
    if (LoadU32At(p.index, 0) != 0 || LoadU32At(p.index, p.kernels + 1) != p.migrations)
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + " has an inconsistent migration index");
    for (uint32_t j = 0; j <= p.kernels; ++j) {
      const uint32_t from = LoadU32At(p.index, j), to = LoadU32At(p.index, j + 1);
      if (from > to || to > p.migrations)
        return Fail(TT_LOOKUP_ERR_MALFORMED, which + " has an inconsistent migration index");
      for (uint32_t m = from; m < to; ++m) {
        const int32_t after = static_cast<int32_t>(lf::LoadU32(p.records + 8 * static_cast<uint64_t>(m)));
        const uint32_t tensor = lf::LoadU32(p.records + 8 * static_cast<uint64_t>(m) + 4) & ~lf::kMigrationTierBit;
        if (after != static_cast<int32_t>(j) - 1 || tensor >= p.tensors)
          return Fail(TT_LOOKUP_ERR_MALFORMED, which + ": migration " + std::to_string(m) + " is out of range");
      }
    }
    h_.plans.push_back(p);
  }
  size_t slots = 1;
  while (slots < 2 * static_cast<size_t>(count)) slots *= 2;
  h_.slots.assign(slots, -1);
  h_.slot_mask = slots - 1;
  for (uint32_t i = 0; i < count; ++i) {
    const Plan& p = h_.plans[i];
    if (h_.Find(p.signature, p.batch, p.budget) >= 0)
      return Fail(TT_LOOKUP_ERR_MALFORMED, "two plans for model " + Hex(p.signature) + ", batch " +
                                               std::to_string(p.batch) + ", DRAM budget " + std::to_string(p.budget));
    uint64_t slot = MixKey(p.signature, p.batch, p.budget) & h_.slot_mask;
    while (h_.slots[slot] >= 0) slot = (slot + 1) & h_.slot_mask;
    h_.slots[slot] = static_cast<int32_t>(i);
  }
  return TT_LOOKUP_OK;
}

int Loader::LoadGeneralised(const unsigned char* s, uint64_t bytes) {
  if (bytes < lf::kGenHeadBytes) return Fail(TT_LOOKUP_ERR_MALFORMED, "generalised section shorter than its head");
  const uint32_t obs = lf::LoadU32(s);
  const uint32_t nfeat = lf::LoadU32(s + 4);
  const uint32_t cells = lf::LoadU32(s + 8);
  const uint32_t fine = lf::LoadU32(s + 12);
  const uint32_t nconst = lf::LoadU32(s + 16);
  if (obs == 0 || obs > 4096 || obs != h_.observation_size)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "generalised section: observation size " + std::to_string(obs) +
                                             " does not match the header's " + std::to_string(h_.observation_size));
  if (nfeat > obs || cells == 0 || cells > lf::kMaxCells || fine == 0 || fine > lf::kMaxFineBins || nconst > 4096)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "generalised section: implausible sizes (features " + std::to_string(nfeat) +
                                             ", cells " + std::to_string(cells) + ", fine bins " +
                                             std::to_string(fine) + ")");
  const uint64_t feat_end = lf::kGenHeadBytes + static_cast<uint64_t>(nfeat) * lf::kFeatureEntryBytes;
  const uint64_t const_end = feat_end + static_cast<uint64_t>(nconst) * 8;
  const uint64_t remap_end = const_end + (static_cast<uint64_t>(nfeat) * fine + 7) / 8 * 8;
  const uint64_t table_words = (static_cast<uint64_t>(cells) + 63) / 64;
  if (bytes != remap_end + table_words * 8)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "generalised section is " + std::to_string(bytes) + " bytes, its layout needs " +
                                             std::to_string(remap_end + table_words * 8));
  if (const_end % 8 != 0) return Fail(TT_LOOKUP_ERR_MALFORMED, "generalised section: misaligned constants");
  uint64_t product = 1;  // the strides must be the running products of the bin counts
  std::vector<bool> used_index(obs, false);
  for (uint32_t i = 0; i < nfeat; ++i) {
    const unsigned char* e = s + lf::kGenHeadBytes + static_cast<uint64_t>(i) * lf::kFeatureEntryBytes;
    Feature f;
    f.index = lf::LoadU16(e);
    f.bins = lf::LoadU16(e + 2);
    std::memcpy(&f.lo, e + 4, 4);
    std::memcpy(&f.scale, e + 8, 4);
    f.stride = lf::LoadU32(e + 12);
    f.top = static_cast<float>(fine - 1);
    f.remap = s + const_end + static_cast<uint64_t>(i) * fine;
    const std::string which = "generalised section: feature " + std::to_string(i);
    if (f.index >= obs || used_index[f.index])
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + " names observation index " + std::to_string(f.index));
    used_index[f.index] = true;
    if (f.bins < 2 || f.bins > lf::kMaxBinsPerFeature || f.stride != product)
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + " has " + std::to_string(f.bins) + " bins at stride " +
                                               std::to_string(f.stride) + " (expected stride " +
                                               std::to_string(product) + ")");
    product *= f.bins;
    if (product > cells)
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + ": the features' bins exceed the " + std::to_string(cells) + " cells");
    if (!std::isfinite(f.lo) || !std::isfinite(f.scale) || !(f.scale > 0))
      return Fail(TT_LOOKUP_ERR_MALFORMED, which + " has a non-finite range");
    for (uint32_t j = 0; j < fine; ++j)
      if (f.remap[j] >= f.bins) return Fail(TT_LOOKUP_ERR_MALFORMED, which + " maps to a bin beyond its count");
    h_.features.push_back(f);
  }
  if (product != cells)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "generalised section: the features' bins make " + std::to_string(product) +
                                             " cells, the head says " + std::to_string(cells));
  h_.constants.resize(nconst);
  for (uint32_t i = 0; i < nconst; ++i) std::memcpy(&h_.constants[i], s + feat_end + 8 * i, 8);
  h_.table = reinterpret_cast<const uint64_t*>(s + remap_end);
  h_.has_generalised = true;
  h_.gen_observation_size = obs;
  h_.cell_count = cells;
  h_.fine_bins = fine;
  h_.gen_bytes = bytes;
  return TT_LOOKUP_OK;
}

int Loader::LoadNetwork(const unsigned char* s, uint64_t bytes) {
  if (bytes < lf::kNetHeadBytes) return Fail(TT_LOOKUP_ERR_MALFORMED, "network section shorter than its head");
  const uint32_t input = lf::LoadU32(s);
  const uint32_t layers = lf::LoadU32(s + 4);
  if (input != h_.gen_observation_size)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "network section: input size " + std::to_string(input) +
                                             " does not match the observation size " +
                                             std::to_string(h_.gen_observation_size));
  if (layers == 0 || layers > lf::kMaxNetLayers)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "network section: " + std::to_string(layers) + " layers (1 to " +
                                             std::to_string(lf::kMaxNetLayers) + ")");
  const uint64_t params_at = lf::kNetHeadBytes + static_cast<uint64_t>(layers) * lf::kNetLayerBytes;
  if (bytes < params_at) return Fail(TT_LOOKUP_ERR_MALFORMED, "network section shorter than its layer list");
  uint64_t params = 0;
  uint32_t in = input;
  for (uint32_t l = 0; l < layers; ++l) {
    const unsigned char* e = s + lf::kNetHeadBytes + static_cast<uint64_t>(l) * lf::kNetLayerBytes;
    const uint32_t layer_in = lf::LoadU32(e), layer_out = lf::LoadU32(e + 4);
    if (layer_in != in || layer_out == 0 || layer_out > lf::kMaxNetWidth || (l + 1 == layers && layer_out != 2))
      return Fail(TT_LOOKUP_ERR_MALFORMED, "network section: layer " + std::to_string(l) + " maps " +
                                               std::to_string(layer_in) + " to " + std::to_string(layer_out) +
                                               " (expected " + std::to_string(in) + " inputs" +
                                               (l + 1 == layers ? std::string(", 2 outputs") : std::string()) + ")");
    tt_lookup::NetLayer n;
    n.in = layer_in;
    n.out = layer_out;
    n.weight = static_cast<size_t>(params);
    params += static_cast<uint64_t>(layer_in) * layer_out;
    n.bias = static_cast<size_t>(params);
    params += layer_out;
    h_.net_layers.push_back(n);
    h_.net_max_width = layer_out > h_.net_max_width ? layer_out : h_.net_max_width;
    in = layer_out;
  }
  if (bytes != params_at + 4 * params)
    return Fail(TT_LOOKUP_ERR_MALFORMED, "network section is " + std::to_string(bytes) + " bytes, its layers need " +
                                             std::to_string(params_at + 4 * params));
  h_.net_params.resize(static_cast<size_t>(params));
  std::memcpy(h_.net_params.data(), s + params_at, static_cast<size_t>(4 * params));
  for (float v : h_.net_params)
    if (!std::isfinite(v)) return Fail(TT_LOOKUP_ERR_MALFORMED, "network section: a weight is not finite");
  h_.net_bytes = bytes;
  return TT_LOOKUP_OK;
}

void WriteError(char* errbuf, size_t errlen, const std::string& text) {
  if (errbuf == nullptr || errlen == 0) return;
  size_t n = text.size() < errlen - 1 ? text.size() : errlen - 1;
  std::memcpy(errbuf, text.data(), n);
  errbuf[n] = '\0';
}

int OpenBytes(std::vector<uint64_t>&& storage, uint64_t bytes, const std::string& name, tt_lookup** out,
              char* errbuf, size_t errlen) {
  tt_lookup* h = new (std::nothrow) tt_lookup;
  if (h == nullptr) {
    WriteError(errbuf, errlen, "lookup file '" + name + "': out of memory");
    return TT_LOOKUP_ERR_NO_MEMORY;
  }
  h->storage.swap(storage);
  h->bytes = reinterpret_cast<const unsigned char*>(h->storage.data());
  h->file_bytes = bytes;
  Loader loader(*h, name);
  int rc;
  try {
    rc = loader.Load();
  } catch (const std::bad_alloc&) {
    rc = loader.Fail(TT_LOOKUP_ERR_NO_MEMORY, "out of memory while loading");
  }
  if (rc != TT_LOOKUP_OK) {
    WriteError(errbuf, errlen, loader.error());
    delete h;
    return rc;
  }
  WriteError(errbuf, errlen, "");
  *out = h;
  return TT_LOOKUP_OK;
}

}  // namespace

extern "C" {

int tt_lookup_open(const char* path, tt_lookup** out, char* errbuf, size_t errlen) {
  if (out == nullptr || path == nullptr) {
    WriteError(errbuf, errlen, "tt_lookup_open: null argument");
    return TT_LOOKUP_ERR_ARGUMENT;
  }
  *out = nullptr;
  try {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) {
      WriteError(errbuf, errlen, "lookup file '" + std::string(path) + "': cannot open: " + std::strerror(errno));
      return TT_LOOKUP_ERR_IO;
    }
    std::vector<uint64_t> storage;
    uint64_t size = 0;
    // Read in chunks: the size is not trusted before the header says it.
    std::vector<char> chunk(1 << 16);
    std::string all;
    size_t got;
    while ((got = std::fread(chunk.data(), 1, chunk.size(), f)) > 0) all.append(chunk.data(), got);
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) {
      WriteError(errbuf, errlen, "lookup file '" + std::string(path) + "': read error");
      return TT_LOOKUP_ERR_IO;
    }
    size = all.size();
    storage.assign((size + 7) / 8 + 1, 0);
    if (size > 0) std::memcpy(storage.data(), all.data(), size);
    return OpenBytes(std::move(storage), size, path, out, errbuf, errlen);
  } catch (const std::bad_alloc&) {
    WriteError(errbuf, errlen, "lookup file '" + std::string(path) + "': out of memory");
    return TT_LOOKUP_ERR_NO_MEMORY;
  }
}

int tt_lookup_open_memory(const void* data, size_t bytes, const char* path_for_messages, tt_lookup** out,
                          char* errbuf, size_t errlen) {
  if (out == nullptr || (data == nullptr && bytes > 0)) {
    WriteError(errbuf, errlen, "tt_lookup_open_memory: null argument");
    return TT_LOOKUP_ERR_ARGUMENT;
  }
  *out = nullptr;
  try {
    std::vector<uint64_t> storage((bytes + 7) / 8 + 1, 0);
    if (bytes > 0) std::memcpy(storage.data(), data, bytes);
    return OpenBytes(std::move(storage), bytes, path_for_messages ? path_for_messages : "<memory>", out, errbuf,
                     errlen);
  } catch (const std::bad_alloc&) {
    WriteError(errbuf, errlen, "lookup file: out of memory");
    return TT_LOOKUP_ERR_NO_MEMORY;
  }
}

int tt_lookup_open_for_model(const char* path, uint64_t model_signature, tt_lookup** out, char* errbuf,
                             size_t errlen) {
  int rc = tt_lookup_open(path, out, errbuf, errlen);
  if (rc != TT_LOOKUP_OK) return rc;
  const tt_lookup* h = *out;
  if (h->primary_signature == model_signature) return TT_LOOKUP_OK;
  for (const Plan& p : h->plans)
    if (p.signature == model_signature) return TT_LOOKUP_OK;
  std::string held;
  for (const Plan& p : h->plans)
    if (held.find(Hex(p.signature)) == std::string::npos) held += (held.empty() ? "" : ", ") + Hex(p.signature);
  WriteError(errbuf, errlen,
             "lookup file '" + std::string(path) + "': wrong model signature: it was exported for model " +
                 Hex(h->primary_signature) + (held.empty() ? "" : " (plans for " + held + ")") + ", not for " +
                 Hex(model_signature));
  tt_lookup_close(*out);
  *out = nullptr;
  return TT_LOOKUP_ERR_SIGNATURE;
}

void tt_lookup_close(tt_lookup* handle) { delete handle; }

const char* tt_lookup_status_name(int code) {
  switch (code) {
    case TT_LOOKUP_OK: return "ok";
    case TT_LOOKUP_ERR_IO: return "i/o error";
    case TT_LOOKUP_ERR_TRUNCATED: return "truncated";
    case TT_LOOKUP_ERR_BAD_MAGIC: return "not a lookup file";
    case TT_LOOKUP_ERR_VERSION: return "wrong format version";
    case TT_LOOKUP_ERR_CHECKSUM: return "checksum mismatch (corrupt)";
    case TT_LOOKUP_ERR_MALFORMED: return "malformed";
    case TT_LOOKUP_ERR_SIGNATURE: return "wrong model signature";
    case TT_LOOKUP_ERR_NOT_FOUND: return "not found";
    case TT_LOOKUP_ERR_ARGUMENT: return "invalid argument";
    case TT_LOOKUP_ERR_NO_MEMORY: return "out of memory";
    default: return "unknown error";
  }
}

uint64_t tt_lookup_primary_signature(const tt_lookup* h) { return h ? h->primary_signature : 0; }
uint32_t tt_lookup_plan_count(const tt_lookup* h) { return h ? static_cast<uint32_t>(h->plans.size()) : 0; }
int tt_lookup_has_generalised(const tt_lookup* h) { return h && h->has_generalised ? 1 : 0; }
uint32_t tt_lookup_observation_size(const tt_lookup* h) { return h ? h->gen_observation_size : 0; }
uint64_t tt_lookup_file_bytes(const tt_lookup* h) { return h ? h->file_bytes : 0; }

int tt_lookup_plan_info_at(const tt_lookup* h, int32_t plan, tt_lookup_plan_info* out) {
  if (h == nullptr || out == nullptr || plan < 0 || static_cast<size_t>(plan) >= h->plans.size())
    return TT_LOOKUP_ERR_ARGUMENT;
  const Plan& p = h->plans[static_cast<size_t>(plan)];
  out->model_signature = p.signature;
  out->dram_budget_bytes = p.budget;
  out->batch_size = p.batch;
  out->num_tensors = p.tensors;
  out->num_kernels = p.kernels;
  out->num_migrations = p.migrations;
  out->async_copies = p.mode;
  return TT_LOOKUP_OK;
}

int tt_lookup_generalised_info_get(const tt_lookup* h, tt_lookup_generalised_info* out) {
  if (h == nullptr || out == nullptr) return TT_LOOKUP_ERR_ARGUMENT;
  if (!h->has_generalised) return TT_LOOKUP_ERR_NOT_FOUND;
  out->observation_size = h->gen_observation_size;
  out->feature_count = static_cast<uint32_t>(h->features.size());
  out->cell_count = h->cell_count;
  out->fine_bins = h->fine_bins;
  out->section_bytes = h->gen_bytes;
  return TT_LOOKUP_OK;
}

int tt_lookup_feature_info_at(const tt_lookup* h, uint32_t index, tt_lookup_feature_info* out) {
  if (h == nullptr || out == nullptr || index >= h->features.size()) return TT_LOOKUP_ERR_ARGUMENT;
  const Feature& f = h->features[index];
  out->observation_index = f.index;
  out->bins = f.bins;
  out->stride = f.stride;
  out->lo = f.lo;
  out->scale = f.scale;
  return TT_LOOKUP_OK;
}

double tt_lookup_constant(const tt_lookup* h, uint32_t index) {
  if (h == nullptr || index >= h->constants.size()) return std::numeric_limits<double>::quiet_NaN();
  return h->constants[index];
}

const char* tt_lookup_info_text(const tt_lookup* h) { return h ? h->info.c_str() : ""; }

int32_t tt_lookup_find_plan(const tt_lookup* h, uint64_t model_signature, uint32_t batch_size,
                            uint64_t dram_budget_bytes) {
  if (h == nullptr) return TT_LOOKUP_ERR_ARGUMENT;
  return h->Find(model_signature, batch_size, dram_budget_bytes);
}

int tt_lookup_plan_tier_at(const tt_lookup* h, int32_t plan, uint32_t tensor) {
  if (h == nullptr || plan < 0 || static_cast<size_t>(plan) >= h->plans.size()) return TT_LOOKUP_ERR_ARGUMENT;
  const Plan& p = h->plans[static_cast<size_t>(plan)];
  if (tensor >= p.tensors) return TT_LOOKUP_ERR_ARGUMENT;
  return static_cast<int>((p.tiers[tensor >> 6] >> (tensor & 63)) & 1u);
}

int tt_lookup_plan_initial_tier(const tt_lookup* h, uint64_t model_signature, uint32_t batch_size,
                                uint64_t dram_budget_bytes, uint32_t tensor) {
  int32_t plan = tt_lookup_find_plan(h, model_signature, batch_size, dram_budget_bytes);
  return plan < 0 ? plan : tt_lookup_plan_tier_at(h, plan, tensor);
}

int32_t tt_lookup_plan_migrations_at(const tt_lookup* h, int32_t plan, int32_t after_kernel, tt_lookup_migration* out,
                                     size_t capacity) {
  if (h == nullptr || plan < 0 || static_cast<size_t>(plan) >= h->plans.size() || (out == nullptr && capacity > 0))
    return TT_LOOKUP_ERR_ARGUMENT;
  const Plan& p = h->plans[static_cast<size_t>(plan)];
  if (after_kernel < -1 || after_kernel >= static_cast<int64_t>(p.kernels)) return TT_LOOKUP_ERR_ARGUMENT;
  const uint32_t j = static_cast<uint32_t>(after_kernel + 1);
  const uint32_t from = LoadU32At(p.index, j), to = LoadU32At(p.index, j + 1);
  for (uint32_t m = from; m < to && m - from < capacity; ++m) {
    const uint32_t packed = lf::LoadU32(p.records + 8 * static_cast<uint64_t>(m) + 4);
    tt_lookup_migration& r = out[m - from];
    r.after_kernel = after_kernel;
    r.tensor = packed & ~lf::kMigrationTierBit;
    r.to_tier = (packed & lf::kMigrationTierBit) ? TT_LOOKUP_TIER_SLOW : TT_LOOKUP_TIER_DRAM;
  }
  return static_cast<int32_t>(to - from);
}

int32_t tt_lookup_plan_migrations(const tt_lookup* h, uint64_t model_signature, uint32_t batch_size,
                                  uint64_t dram_budget_bytes, int32_t after_kernel, tt_lookup_migration* out,
                                  size_t capacity) {
  int32_t plan = tt_lookup_find_plan(h, model_signature, batch_size, dram_budget_bytes);
  return plan < 0 ? plan : tt_lookup_plan_migrations_at(h, plan, after_kernel, out, capacity);
}

int64_t tt_lookup_cell(const tt_lookup* h, const float* features, size_t n) {
  if (h == nullptr || features == nullptr) return TT_LOOKUP_ERR_ARGUMENT;
  if (!h->has_generalised) return TT_LOOKUP_ERR_NOT_FOUND;
  if (n != h->gen_observation_size) return TT_LOOKUP_ERR_ARGUMENT;
  uint32_t cell = 0;
  for (const Feature& f : h->features)
    cell += static_cast<uint32_t>(f.remap[lf::FineIndex(features[f.index], f.lo, f.scale, f.top)]) * f.stride;
  return cell;
}

int tt_lookup_decide(const tt_lookup* h, const float* features, size_t n) {
  if (h == nullptr || features == nullptr) return TT_LOOKUP_ERR_ARGUMENT;
  if (!h->has_generalised) return TT_LOOKUP_ERR_NOT_FOUND;
  if (n != h->gen_observation_size) return TT_LOOKUP_ERR_ARGUMENT;
  if (h->net_layers.empty()) return tt_lookup_decide_table(h, features, n);
  // The network's forward pass, as the agent computes it (lookup_format.h).
  thread_local std::vector<float> scratch;
  if (scratch.size() < 2 * static_cast<size_t>(h->net_max_width)) scratch.resize(2 * h->net_max_width);
  const float* in = features;
  float* bufs[2] = {scratch.data(), scratch.data() + h->net_max_width};
  const float* params = h->net_params.data();
  for (size_t l = 0; l < h->net_layers.size(); ++l) {
    const tt_lookup::NetLayer& layer = h->net_layers[l];
    const bool last = l + 1 == h->net_layers.size();
    float* out = bufs[l % 2];
    for (uint32_t o = 0; o < layer.out; ++o) {
      const float v = lf::NetDot(params + layer.weight + static_cast<size_t>(o) * layer.in, in, layer.in) +
                      params[layer.bias + o];
      out[o] = last ? v : (v > 0.0f ? v : 0.0f);
    }
    in = out;
  }
  return in[1] > in[0] ? 1 : 0;  // argmax, the lowest action on a tie (and on NaN)
}

uint32_t tt_lookup_network_layers(const tt_lookup* h) {
  return h == nullptr ? 0 : static_cast<uint32_t>(h->net_layers.size());
}

int tt_lookup_decide_table(const tt_lookup* h, const float* features, size_t n) {
  if (h == nullptr || features == nullptr) return TT_LOOKUP_ERR_ARGUMENT;
  if (!h->has_generalised) return TT_LOOKUP_ERR_NOT_FOUND;
  if (n != h->gen_observation_size) return TT_LOOKUP_ERR_ARGUMENT;
  // One bin per feature, independent of each other (the CPU overlaps them),
  // then one bit. Every bin was checked at open, so the cell is in range.
  uint32_t cell = 0;
  const Feature* f = h->features.data();
  const Feature* end = f + h->features.size();
  for (; f != end; ++f)
    cell += static_cast<uint32_t>(f->remap[lf::FineIndex(features[f->index], f->lo, f->scale, f->top)]) * f->stride;
  return static_cast<int>((h->table[cell >> 6] >> (cell & 63)) & 1u);
}

}  // extern "C"
