// The file readers' fuzz targets: bad bytes must be refused with
// std::runtime_error (anything else escaping is a finding); what is accepted
// must then be usable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace tensortier {

// What `parse` makes of the bytes, or nothing when it refuses them.
template <typename T>
std::optional<T> ParsedOrRefused(const uint8_t* data, size_t size, T (*parse)(const std::string&)) {
  try {
    return parse(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

}  // namespace tensortier
