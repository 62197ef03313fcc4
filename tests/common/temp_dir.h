// An empty directory of the test's own under the system's temporary
// directory: the process id keeps parallel test binaries apart.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace tensortier::testing {

inline std::string TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tensortier-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace tensortier::testing
