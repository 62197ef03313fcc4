// CRC-32 (IEEE 802.3 polynomial, reflected; the same value as zlib's crc32),
// table driven; the table is built on first use (C++11 has no constexpr loops).
#include "hostrt/lookup_format.h"

namespace tensortier {
namespace lookup_format {
namespace {

struct Crc32Table {
  uint32_t entry[256];
  Crc32Table() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      entry[i] = c;
    }
  }
};

}  // namespace

uint32_t Crc32(const void* data, size_t bytes, uint32_t crc) {
  static const Crc32Table table;  // thread-safe initialisation (C++11)
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < bytes; ++i) c = table.entry[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace lookup_format
}  // namespace tensortier
