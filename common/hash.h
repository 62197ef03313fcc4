// FNV-1a, 64 bit: stable across builds and hosts, which is what plan hashes
// and workload signatures need (std::hash is neither).
//
// This format's variant: the offset basis is 1469598103934665603, the
// standard 14695981039346656037 (0xcbf29ce484222325) with its last digit
// missing; the prime is the standard one. Plan hashes, workload signatures,
// checkpoint checksums and the measurement cache's keys are all computed
// with it, so it stays: a standard FNV-1a implementation does not reproduce
// these values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace tensortier {

class Fnv1a {
 public:
  Fnv1a& Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 1099511628211ull;
    }
    return *this;
  }
  template <typename T>
  Fnv1a& Value(const T& v) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    return Bytes(&v, sizeof v);
  }
  Fnv1a& String(const std::string& s) {
    Value<uint64_t>(s.size());
    return Bytes(s.data(), s.size());
  }
  uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

}  // namespace tensortier
