// The learner's checkpoint files. One file per checkpoint,
//   "TTCKPT01" | payload length (u64 LE) | FNV-1a 64 of the payload (u64 LE) | payload
// (common/framed_file.h)
// written with WriteFileAtomically (temporary file, fsync, rename), named
// learner-<sequence>.ttckpt, and only the newest `keep` are kept: a crash
// while writing leaves the previous ones intact, and a file that is torn or
// corrupt anyway (bad magic, length or checksum) is skipped in favour of
// the one before it.
//
// ByteWriter / ByteReader are the payload's plain little-endian encoding;
// the reader throws CheckpointError on any overrun, so a payload that
// passed the checksum but is of another layout still cannot crash a load.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensortier {

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

class ByteWriter {
 public:
  template <typename T>
  void Pod(const T& v) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void U64(uint64_t v) { Pod(v); }
  void F64(double v) { Pod(v); }
  void Bool(bool v) { Pod<uint8_t>(v ? 1 : 0); }
  void String(const std::string& s) {
    U64(s.size());
    out_.append(s);
  }
  template <typename T>
  void PodVector(const std::vector<T>& v) {
    U64(v.size());
    if (!v.empty()) out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : p_(in.data()), end_(in.data() + in.size()) {}
  template <typename T>
  T Pod() {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    Need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  uint64_t U64() { return Pod<uint64_t>(); }
  double F64() { return Pod<double>(); }
  bool Bool() { return Pod<uint8_t>() != 0; }
  std::string String() {
    const uint64_t n = U64();
    Need(n);
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> PodVector() {
    const uint64_t n = U64();
    if (n > static_cast<uint64_t>(end_ - p_) / sizeof(T)) throw CheckpointError("checkpoint payload overrun");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), p_, n * sizeof(T));
    p_ += n * sizeof(T);
    return v;
  }
  bool done() const { return p_ == end_; }

 private:
  void Need(uint64_t n) const {
    if (n > static_cast<uint64_t>(end_ - p_)) throw CheckpointError("checkpoint payload overrun");
  }
  const char* p_;
  const char* end_;
};

}  // namespace tensortier
