#include "common/framed_file.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/hash.h"

namespace tensortier {
namespace {

// The 8 bytes of magic and version: "TTCKPT" and 1 give "TTCKPT01".
std::string Magic(const FileFrame& frame, int version) {
  const char digits[2] = {static_cast<char>('0' + version / 10 % 10), static_cast<char>('0' + version % 10)};
  return std::string(frame.magic, 6) + std::string(digits, 2);
}

uint64_t Checksum(const char* data, size_t n) { return Fnv1a().Bytes(data, n).digest(); }

}  // namespace

std::string FramePayload(const FileFrame& frame, const std::string& payload) {
  std::string file;
  file.reserve(kFrameHeaderBytes + payload.size());
  file.append(Magic(frame, frame.version));
  const uint64_t length = payload.size(), sum = Checksum(payload.data(), payload.size());
  file.append(reinterpret_cast<const char*>(&length), sizeof length);
  file.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  file.append(payload);
  return file;
}

bool HasFrameMagic(const FileFrame& frame, const std::string& file) {
  return file.size() >= 6 && std::memcmp(file.data(), frame.magic, 6) == 0;
}

bool IsFrameVersion(const FileFrame& frame, const std::string& file) {
  return file.compare(0, 8, Magic(frame, frame.version)) == 0;
}

std::string VerifiedPayload(const FileFrame& frame, const std::string& file, const std::string& path) {
  if (file.size() < kFrameHeaderBytes || !HasFrameMagic(frame, file))
    throw std::runtime_error(path + ": not a " + frame.what + " (bad magic or shorter than its header)");
  if (!IsFrameVersion(frame, file))
    throw std::runtime_error(path + ": a " + frame.what + " of format version \"" + file.substr(6, 2) +
                             "\"; this build reads version " + Magic(frame, frame.version).substr(6, 2));
  uint64_t length = 0, sum = 0;
  std::memcpy(&length, file.data() + 8, 8);
  std::memcpy(&sum, file.data() + 16, 8);
  const uint64_t have = file.size() - kFrameHeaderBytes;
  if (length > have)
    throw std::runtime_error(path + ": truncated: header says " + std::to_string(length) + " payload bytes, file has " +
                             std::to_string(have));
  if (length < have)
    throw std::runtime_error(path + ": " + std::to_string(have - length) + " bytes appended after the " +
                             std::to_string(length) + " payload bytes its header announces");
  if (Checksum(file.data() + kFrameHeaderBytes, length) != sum) throw std::runtime_error(path + ": checksum mismatch");
  return file.substr(kFrameHeaderBytes);
}

}  // namespace tensortier
