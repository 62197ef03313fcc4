// Timing model of a slow memory device, used to EMULATE it on a host that
// does not have it (see docs/emulation.md). Nothing here touches memory.
//
// The model is per access stream: a kernel that reads a tensor of n bytes
// once pays  read_latency_ns + n / read_bytes_per_second  on the device, and
// the same with the write numbers for a write. The emulator adds to a kernel
// the difference between that cost and the same cost on DRAM (the
// `dram_*` reference numbers), because the kernel's measured time already
// contains the DRAM part. Differences are clamped at zero per term: the
// emulation never makes anything faster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tensortier {

struct DeviceProfile {
  std::string name;         // "optane-dcpmm", "cxl"
  std::string description;  // one line, with the sources
  // The emulated device.
  double read_bytes_per_second = 0;
  double write_bytes_per_second = 0;
  double read_latency_ns = 0;   // per access stream (one page miss)
  double write_latency_ns = 0;
  // DRAM reference: what the host's kernels already paid for the same access.
  double dram_read_bytes_per_second = 0;
  double dram_write_bytes_per_second = 0;
  double dram_read_latency_ns = 0;
  double dram_write_latency_ns = 0;

  // Extra time, over DRAM, of `reads` reads and `writes` writes of a buffer
  // of `bytes` bytes that lives on the device.
  // = ExtraLatencyNs(reads, writes) + ExtraTransferNs(bytes, reads, writes).
  double ExtraAccessNs(uint64_t bytes, uint32_t reads, uint32_t writes) const;
  // The two parts apart: the emulator charges the latency once per page
  // stream when several sub-page tensors share a page (docs/aggregation.md).
  double ExtraLatencyNs(uint32_t reads, uint32_t writes) const;
  double ExtraTransferNs(uint64_t bytes, uint32_t reads, uint32_t writes) const;
  // Time of copying `bytes` from DRAM to the device (the device writes) or
  // from the device to DRAM (the device reads): what a migration copy is
  // paced at.
  double CopyToDeviceNs(uint64_t bytes) const;
  double CopyFromDeviceNs(uint64_t bytes) const;
};

// The built-in profiles, by name. Throws std::invalid_argument listing the
// known names when `name` is not one of them.
const DeviceProfile& FindDeviceProfile(const std::string& name);
std::vector<std::string> DeviceProfileNames();

}  // namespace tensortier
