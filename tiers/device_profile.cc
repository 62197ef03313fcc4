#include "tiers/device_profile.h"

#include <algorithm>
#include <stdexcept>

namespace tensortier {

namespace {

constexpr double kGB = 1e9;

// The DRAM every device is emulated against: 10 GB/s (single-thread memcpy
// on these hosts), page miss 0.22 us read / 0.47 us write (DeepTM Fig. 1a).
DeviceProfile OverHostDram() {
  DeviceProfile p;
  p.dram_read_bytes_per_second = 10 * kGB;
  p.dram_write_bytes_per_second = 10 * kGB;
  p.dram_read_latency_ns = 220;
  p.dram_write_latency_ns = 470;
  return p;
}

// Sources and reasoning: docs/emulation.md. Keep the two in step.
std::vector<DeviceProfile> MakeProfiles() {
  std::vector<DeviceProfile> v;
  {
    DeviceProfile p = OverHostDram();
    p.name = "optane-dcpmm";
    p.description =
        "Intel Optane DC PMM (1st gen), one DIMM: 6.6 GB/s read, 2.3 GB/s write "
        "(Izraelevitz et al. 2019); page miss 5.57 us read / 14.49 us write vs DRAM "
        "0.22 / 0.47 us (DeepTM Fig. 1a); DRAM reference 10 GB/s (single-thread "
        "memcpy on these hosts)";
    p.read_bytes_per_second = 6.6 * kGB;
    p.write_bytes_per_second = 2.3 * kGB;
    p.read_latency_ns = 5570;
    p.write_latency_ns = 14490;
    v.push_back(p);
  }
  {
    DeviceProfile p = OverHostDram();
    p.name = "cxl";
    p.description =
        "CXL Type-3 memory expander (first generation, one x8 link): load latency "
        "about 2.2x local DRAM (Pond, ASPLOS'23; TPP, ASPLOS'23: 170-250 ns vs ~100 ns), "
        "per-stream bandwidth about 0.6x local DRAM (Sun et al., MICRO'23); DRAM "
        "reference as for optane-dcpmm. Representative, not one measured device";
    p.read_bytes_per_second = 6.0 * kGB;
    p.write_bytes_per_second = 5.5 * kGB;
    p.read_latency_ns = 220 * 2.2;
    p.write_latency_ns = 470 * 2.2;
    v.push_back(p);
  }
  return v;
}

const std::vector<DeviceProfile>& Profiles() {
  static const std::vector<DeviceProfile> profiles = MakeProfiles();
  return profiles;
}

double Positive(double x) { return x > 0 ? x : 0; }

}  // namespace

double DeviceProfile::ExtraLatencyNs(uint32_t reads, uint32_t writes) const {
  return reads * Positive(read_latency_ns - dram_read_latency_ns) +
         writes * Positive(write_latency_ns - dram_write_latency_ns);
}

double DeviceProfile::ExtraTransferNs(uint64_t bytes, uint32_t reads, uint32_t writes) const {
  const double b = static_cast<double>(bytes);
  return reads * Positive(b * 1e9 / read_bytes_per_second - b * 1e9 / dram_read_bytes_per_second) +
         writes * Positive(b * 1e9 / write_bytes_per_second - b * 1e9 / dram_write_bytes_per_second);
}

double DeviceProfile::ExtraAccessNs(uint64_t bytes, uint32_t reads, uint32_t writes) const {
  return ExtraLatencyNs(reads, writes) + ExtraTransferNs(bytes, reads, writes);
}

double DeviceProfile::CopyToDeviceNs(uint64_t bytes) const {
  return write_latency_ns + static_cast<double>(bytes) * 1e9 / write_bytes_per_second;
}

double DeviceProfile::CopyFromDeviceNs(uint64_t bytes) const {
  return read_latency_ns + static_cast<double>(bytes) * 1e9 / read_bytes_per_second;
}

const DeviceProfile& FindDeviceProfile(const std::string& name) {
  for (const DeviceProfile& p : Profiles())
    if (p.name == name) return p;
  std::string known;
  for (const DeviceProfile& p : Profiles()) known += (known.empty() ? "" : ", ") + p.name;
  throw std::invalid_argument("unknown emulated device profile '" + name + "' (known: " + known + ")");
}

std::vector<std::string> DeviceProfileNames() {
  std::vector<std::string> names;
  for (const DeviceProfile& p : Profiles()) names.push_back(p.name);
  return names;
}

}  // namespace tensortier
