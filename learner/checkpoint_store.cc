#include "learner/checkpoint_store.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/files.h"
#include "common/framed_file.h"
#include "common/log.h"

namespace tensortier {
namespace {

constexpr FileFrame kFrame{"TTCKPT", kCheckpointFormatVersion, "learner checkpoint"};  // "TTCKPT02"
// The frame framed_file.h would call "of another format version": this one
// deserves the why and what to do, since every run directory of the release
// before has it.
constexpr FileFrame kPositionalFrame{"TTCKPT", 1, "learner checkpoint"};
constexpr const char* kPrefix = "learner-";
constexpr const char* kSuffix = ".ttckpt";

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, size_t keep) : dir_(std::move(dir)), keep_(std::max<size_t>(keep, 1)) {}

uint64_t CheckpointStore::SequenceOf(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return 0;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return 0;
  return std::stoull(digits);
}

std::vector<std::string> CheckpointStore::List() const {
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const uint64_t seq = SequenceOf(entry.path().string());
    if (seq > 0) found.emplace_back(seq, entry.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::string CheckpointStore::Write(uint64_t sequence, const std::string& payload) {
  MakeDirectories(dir_);
  char name[64];
  std::snprintf(name, sizeof name, "%s%012llu%s", kPrefix, static_cast<unsigned long long>(sequence), kSuffix);
  const std::string path = dir_ + "/" + name;
  WriteFileAtomically(path, FramePayload(kFrame, payload));
  std::vector<std::string> all = List();
  for (size_t i = keep_; i < all.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(all[i], ec);
  }
  return path;
}

std::string CheckpointStore::ReadVerified(const std::string& path) {
  std::string file;
  try {
    file = ReadFile(path);
  } catch (const std::exception& e) {
    throw CheckpointError(e.what());
  }
  if (IsFrameVersion(kPositionalFrame, file))
    throw CheckpointError(path + ": learner checkpoint format version 1 (before the Cap'n Proto schema); this build "
                          "reads version " + std::to_string(kCheckpointFormatVersion) +
                          ": start a new run directory or resume with the release that wrote it");
  try {
    return VerifiedPayload(kFrame, file, path);
  } catch (const std::runtime_error& e) {
    throw CheckpointError(e.what());
  }
}

}  // namespace tensortier
