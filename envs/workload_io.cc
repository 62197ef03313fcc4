#include "envs/workload_io.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "common/files.h"
#include "envs/workload_capnp.h"

namespace tensortier {
namespace {

constexpr size_t kMagicBytes = 8;
constexpr char kWorkloadMagic[kMagicBytes + 1] = "TTWKLD01";
constexpr char kPlanMagic[kMagicBytes + 1] = "TTPLAN01";

// Files are trusted no more than frames: the limits only have to let every
// honest file through. The conversion reads each word about once, so a
// multiple of the message size bounds the work an adversarial file can cause.
constexpr uint64_t kTraversalWordsPerMessageWord = 8;
constexpr uint64_t kMinTraversalWords = 1024;
constexpr int kNestingLimit = 16;

// `magic` + `value` converted by `convert` into a message with root `Root`:
// what Parse reads back.
template <typename Root, typename Value>
std::string Serialize(const char* magic, const Value& value, void (*convert)(const Value&, typename Root::Builder)) {
  capnp::MallocMessageBuilder message;
  convert(value, message.initRoot<Root>());
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  std::string out(magic, kMagicBytes);
  out.append(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  return out;
}

// Returns the message after the magic, copied into word-aligned memory (a
// std::string gives no alignment guarantee and capnp needs one).
kj::Array<capnp::word> CheckedPayload(const std::string& bytes, const char* magic) {
  if (bytes.size() < kMagicBytes)
    throw std::runtime_error("truncated: " + std::to_string(bytes.size()) +
                             " bytes, shorter than the magic");
  if (std::memcmp(bytes.data(), magic, kMagicBytes) != 0)
    throw std::runtime_error("bad magic, expected \"" + std::string(magic) + "\"");
  size_t payload_bytes = bytes.size() - kMagicBytes;
  if (payload_bytes % sizeof(capnp::word) != 0)
    throw std::runtime_error("truncated: message of " + std::to_string(payload_bytes) +
                             " bytes is not a whole number of words");
  auto words = kj::heapArray<capnp::word>(payload_bytes / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data() + kMagicBytes, payload_bytes);
  size_t expected_words = capnp::expectedSizeInWordsFromPrefix(words);
  if (expected_words > words.size())
    throw std::runtime_error("truncated: message needs " +
                             std::to_string(expected_words * sizeof(capnp::word)) +
                             " bytes after the magic, found " + std::to_string(payload_bytes));
  return words;
}

capnp::ReaderOptions ReaderOptionsFor(size_t message_words) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords =
      kMinTraversalWords + kTraversalWordsPerMessageWord * static_cast<uint64_t>(message_words);
  options.nestingLimit = kNestingLimit;
  return options;
}

// Parses `bytes` as `magic` + a message with root `Root` and converts it with
// `convert`. Every failure, whatever its type, becomes a runtime_error
// prefixed with `what`.
template <typename Root, typename Result>
Result Parse(const std::string& bytes, const char* magic, const std::string& what,
             Result (*convert)(typename Root::Reader)) {
  try {
    kj::Array<capnp::word> words = CheckedPayload(bytes, magic);
    capnp::FlatArrayMessageReader reader(words, ReaderOptionsFor(words.size()));
    if (reader.getEnd() != words.end())
      throw std::runtime_error(
          std::to_string((words.end() - reader.getEnd()) * sizeof(capnp::word)) +
          " unexpected bytes after the message");
    return convert(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    throw std::runtime_error(what + ": corrupt message: " + e.getDescription().cStr());
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

}  // namespace

std::string SerializeWorkload(const Workload& w) {
  return Serialize<schema::Workload>(kWorkloadMagic, w, WorkloadToCapnp);
}

Workload ParseWorkload(const std::string& bytes) {
  return Parse<schema::Workload>(bytes, kWorkloadMagic, "workload", WorkloadFromCapnp);
}

std::string SerializePlan(const PlacementPlan& plan) {
  return Serialize<schema::PlacementPlan>(kPlanMagic, plan, PlanToCapnp);
}

PlacementPlan ParsePlan(const std::string& bytes) {
  return Parse<schema::PlacementPlan>(bytes, kPlanMagic, "plan", PlanFromCapnp);
}

void WriteWorkloadFile(const Workload& w, const std::string& path) {
  WriteFileAtomically(path, SerializeWorkload(w));
}

Workload ReadWorkloadFile(const std::string& path) {
  return Parse<schema::Workload>(ReadFile(path), kWorkloadMagic, "workload file '" + path + "'",
                                 WorkloadFromCapnp);
}

void WritePlanFile(const PlacementPlan& plan, const std::string& path) {
  WriteFileAtomically(path, SerializePlan(plan));
}

PlacementPlan ReadPlanFile(const std::string& path) {
  return Parse<schema::PlacementPlan>(ReadFile(path), kPlanMagic, "plan file '" + path + "'",
                                      PlanFromCapnp);
}

}  // namespace tensortier
