// File helpers that never leave a half-written file behind.
#pragma once

#include <cstdint>
#include <string>

namespace tensortier {

// Writes `contents` to `path` through a temporary file in the same
// directory: write, fsync, rename. A crash leaves the old file or the new
// one, never a torn one. Throws std::runtime_error with errno text.
void WriteFileAtomically(const std::string& path, const std::string& contents);

// Reads a whole file; throws std::runtime_error naming the path on failure
// or when it is larger than max_bytes.
std::string ReadFile(const std::string& path, uint64_t max_bytes = 1ull << 31);

// Creates a directory and its parents; throws on failure.
void MakeDirectories(const std::string& path);

}  // namespace tensortier
