#include "executor/counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tensortier {

namespace {
int OpenCounter(uint64_t config, std::string* why) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(__NR_perf_event_open, &attr, 0 /*this thread*/, -1, -1, 0);
  if (fd < 0 && why->empty()) *why = std::string("perf_event_open: ") + std::strerror(errno);
  return static_cast<int>(fd);
}
}  // namespace

HardwareCounterSet::HardwareCounterSet() {
  fds_[0] = OpenCounter(PERF_COUNT_HW_CPU_CYCLES, &reason_);
  fds_[1] = OpenCounter(PERF_COUNT_HW_INSTRUCTIONS, &reason_);
  fds_[2] = OpenCounter(PERF_COUNT_HW_CACHE_MISSES, &reason_);
}

HardwareCounterSet::~HardwareCounterSet() {
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void HardwareCounterSet::Start() {
  for (int fd : fds_)
    if (fd >= 0) {
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
}

HardwareCounters HardwareCounterSet::Stop() {
  HardwareCounters h;
  uint64_t v[3] = {0, 0, 0};
  bool ok = reason_.empty();
  for (int i = 0; i < 3; ++i) {
    if (fds_[i] < 0) {
      ok = false;
      continue;
    }
    ioctl(fds_[i], PERF_EVENT_IOC_DISABLE, 0);
    if (read(fds_[i], &v[i], sizeof v[i]) != static_cast<ssize_t>(sizeof v[i])) {
      ok = false;
      if (reason_.empty()) reason_ = "reading a perf counter failed";
    }
  }
  h.available = ok;
  if (ok) {
    h.cycles = v[0];
    h.instructions = v[1];
    h.llc_misses = v[2];
  } else {
    h.unavailable_reason = reason_.empty() ? "unavailable" : reason_;
  }
  return h;
}

}  // namespace tensortier
