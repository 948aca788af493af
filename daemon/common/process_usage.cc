#include "daemon/common/process_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace neuron::rtd {
namespace {

double Seconds(const timeval& time) {
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

}  // namespace

ProcessUsage ReadProcessUsage() {
  ProcessUsage usage;
  rusage self{};
  if (::getrusage(RUSAGE_SELF, &self) == 0) {
    usage.cpu_user_seconds = Seconds(self.ru_utime);
    usage.cpu_system_seconds = Seconds(self.ru_stime);
  }
  // statm: total and resident sizes, in pages.
  std::ifstream statm("/proc/self/statm");
  uint64_t total_pages = 0;
  uint64_t resident_pages = 0;
  if (statm >> total_pages >> resident_pages) {
    usage.resident_memory_bytes = resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  }
  return usage;
}

}  // namespace neuron::rtd
