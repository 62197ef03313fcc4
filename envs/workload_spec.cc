#include "envs/workload_spec.h"

#include <stdexcept>
#include <vector>

#include "envs/synthetic.h"
#include "envs/workload_io.h"

namespace tensortier {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

uint64_t ParseNumber(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    unsigned long long v = std::stoull(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing characters");
    return v;
  } catch (const std::exception&) {
    throw std::invalid_argument("workload spec: " + what + " '" + text + "' is not a number");
  }
}

}  // namespace

Workload LoadWorkloadSpec(const std::string& spec) {
  const std::string prefix = "synthetic:";
  if (spec.rfind(prefix, 0) != 0) return ReadWorkloadFile(spec);
  std::vector<std::string> parts = Split(spec.substr(prefix.size()), ':');
  if (parts.size() > 3) throw std::invalid_argument("workload spec '" + spec + "': synthetic:SHAPE[:LAYERS[:BASE_BYTES]]");
  SyntheticOptions o;
  o.shape = ParseSyntheticShape(parts[0]);
  if (parts.size() > 1) o.layers = static_cast<int>(ParseNumber(parts[1], "layers"));
  if (parts.size() > 2) o.base_bytes = ParseNumber(parts[2], "base bytes");
  return GenerateSynthetic(o);
}

}  // namespace tensortier
