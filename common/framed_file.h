// A frame around a file's payload that lets a reader tell a good file from
// a torn, corrupt, appended-to or other-version one before parsing it:
//   magic (6 bytes) | format version (2 decimal digits) | payload length (u64 LE) |
//   FNV-1a 64 of the payload (u64 LE) | payload
// The learner's checkpoints ("TTCKPT" 02) and the agents' ("TTAGNT" 01)
// use it.
#pragma once

#include <cstddef>
#include <string>

namespace tensortier {

struct FileFrame {
  const char* magic;  // 6 characters
  int version;        // 0..99
  const char* what;   // "learner checkpoint", for messages
};

constexpr size_t kFrameHeaderBytes = 8 + 8 + 8;

std::string FramePayload(const FileFrame& frame, const std::string& payload);

// Whether `file` starts with the frame's magic (of any version).
bool HasFrameMagic(const FileFrame& frame, const std::string& file);
// Whether `file` starts with the frame's magic and version.
bool IsFrameVersion(const FileFrame& frame, const std::string& file);

// The verified payload of `file` (read from `path`). Throws
// std::runtime_error: "<path>: not a <what> (...)", "...: <what> format
// version N; this build reads version M", "...: truncated: ...",
// "...: N bytes appended after the payload", "...: checksum mismatch".
std::string VerifiedPayload(const FileFrame& frame, const std::string& file, const std::string& path);

}  // namespace tensortier
