// The learner's checkpoint files. One file per checkpoint,
//   "TTCKPT02" | payload length (u64 LE) | FNV-1a 64 of the payload (u64 LE) | payload
// (common/framed_file.h), the payload a LearnerCheckpoint message
// (learner/checkpoint.capnp, read through learner/checkpoint_message.h),
// written with WriteFileAtomically (temporary file, fsync, rename), named
// learner-<sequence>.ttckpt, and only the newest `keep` are kept: a crash
// while writing leaves the previous ones intact, and a file that is torn or
// corrupt anyway (bad magic, length or checksum) is skipped in favour of
// the one before it. Version 01 (a positional byte stream, before the
// schema) is refused saying so.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensortier {

constexpr int kCheckpointFormatVersion = 2;

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string dir, size_t keep = 2);
  const std::string& dir() const { return dir_; }

  // Writes checkpoint `sequence`, then removes all but the newest `keep`.
  // Returns its path.
  std::string Write(uint64_t sequence, const std::string& payload);
  // Checkpoint files present, newest (highest sequence) first.
  std::vector<std::string> List() const;
  // The verified payload of one file; throws CheckpointError saying why not.
  static std::string ReadVerified(const std::string& path);
  static uint64_t SequenceOf(const std::string& path);  // 0 if the name is not a checkpoint's

 private:
  std::string dir_;
  size_t keep_;
};

}  // namespace tensortier
