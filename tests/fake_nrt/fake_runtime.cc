#include "tests/fake_nrt/fake_runtime.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

nrt_tensor::Storage::~Storage() {
  if (core >= 0) {
    neuron::rtd::fake_nrt::FakeRuntime::Get().Refund(core, bytes.size());
  }
}

namespace neuron::rtd::fake_nrt {
namespace {

uint64_t EnvNumber(const char* name, uint64_t otherwise) {
  const char* value = std::getenv(name);
  uint64_t number = 0;
  if (value == nullptr || !absl::SimpleAtoi(value, &number)) return otherwise;
  return number;
}

// "3", "3-6" or "3-5,6": the cores named, in order; empty when malformed.
std::vector<int> ParseCoreList(const std::string& text) {
  std::vector<int> cores;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> bounds = absl::StrSplit(part, '-');
    int first = 0, last = 0;
    if (bounds.size() > 2 || !absl::SimpleAtoi(bounds[0], &first) ||
        !absl::SimpleAtoi(bounds.back(), &last) || first > last || first < 0) {
      return {};
    }
    for (int core = first; core <= last; ++core) cores.push_back(core);
  }
  return cores;
}

}  // namespace

FakeRuntime& FakeRuntime::Get() {
  static FakeRuntime* runtime = new FakeRuntime();  // never destroyed: tensors may outlive main
  return *runtime;
}

uint32_t FakeRuntime::total_cores() {
  if (total_ == 0) total_ = static_cast<uint32_t>(EnvNumber("FAKE_NRT_CORES", 4));
  return total_;
}

NRT_STATUS FakeRuntime::Init() {
  if (initialized_ && !closed_) return NRT_SUCCESS;
  hbm_per_core_ = EnvNumber("FAKE_NRT_HBM_BYTES", 1ull << 30);
  exec_delay_us_ = EnvNumber("FAKE_NRT_EXEC_DELAY_US", 0);
  const uint32_t total = total_cores();
  visible_.clear();
  if (const char* visible = std::getenv("NEURON_RT_VISIBLE_CORES"); visible != nullptr) {
    visible_ = ParseCoreList(visible);
    for (size_t i = 1; i < visible_.size(); ++i) {
      if (visible_[i] != visible_[i - 1] + 1) visible_.clear();
    }
    if (visible_.empty() || static_cast<uint32_t>(visible_.back()) >= total) {
      std::fprintf(stderr, "NRT:nrt_init Invalid NEURON_RT_VISIBLE_CORES=%s (%u cores)\n",
                   visible, total);
      visible_.clear();
      return NRT_INVALID;
    }
  } else {
    const uint64_t wanted = EnvNumber("NEURON_RT_NUM_CORES", 0);
    for (uint32_t core = 0; core < total && (wanted == 0 || core < wanted); ++core) {
      visible_.push_back(static_cast<int>(core));
    }
  }
  const char* dir_env = std::getenv("FAKE_NRT_DIR");
  const std::string dir =
      dir_env != nullptr ? dir_env : absl::StrCat("/tmp/fake-nrt-", ::getuid());
  ::mkdir(dir.c_str(), 0700);
  for (int core : visible_) {
    const std::string path = absl::StrCat(dir, "/nc", core, ".lock");
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (fd >= 0) ::close(fd);
      std::fprintf(stderr,
                   "NRT:nrt_allocate_neuron_cores NeuronCore(s) not available - "
                   "Requested:nc%d-nc%d Available:0\n",
                   visible_.front(), visible_.back());
      for (int held : lock_fds_) ::close(held);
      lock_fds_.clear();
      visible_.clear();
      return NRT_FAILURE;
    }
    lock_fds_.push_back(fd);
  }
  initialized_ = true;
  closed_ = false;
  unrecoverable_.clear();
  return NRT_SUCCESS;
}

void FakeRuntime::Close() {
  for (int fd : lock_fds_) ::close(fd);
  lock_fds_.clear();
  closed_ = true;
}

NRT_STATUS FakeRuntime::CheckUp() const {
  if (!initialized_) return NRT_UNINITIALIZED;
  if (closed_) return NRT_CLOSED;
  return NRT_SUCCESS;
}

int FakeRuntime::Absolute(int relative) const {
  if (relative < 0 || static_cast<size_t>(relative) >= visible_.size()) return -1;
  return visible_[relative];
}

bool FakeRuntime::Charge(int core, uint64_t bytes) {
  uint64_t& used = used_[core];
  if (bytes > hbm_per_core_ - used) return false;
  used += bytes;
  return true;
}

void FakeRuntime::Refund(int core, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  used_[core] -= bytes;
}

uint64_t FakeRuntime::used(int core) const {
  auto it = used_.find(core);
  return it == used_.end() ? 0 : it->second;
}

void FakeRuntime::ReadFaults() {
  faults_read_ = true;
  const char* spec = std::getenv("FAKE_NRT_FAIL");
  if (spec == nullptr) return;
  for (absl::string_view entry : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(entry, ':');
    int status = 0;
    uint64_t nth = 0;
    if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &status) ||
        (fields.size() > 2 && !absl::SimpleAtoi(fields[2], &nth))) {
      std::fprintf(stderr, "fake libnrt: ignoring malformed FAKE_NRT_FAIL entry %.*s\n",
                   static_cast<int>(entry.size()), entry.data());
      continue;
    }
    faults_.push_back(InjectedFault{.symbol = std::string(fields[0]),
                                    .status = static_cast<NRT_STATUS>(status),
                                    .nth = nth});
  }
}

NRT_STATUS FakeRuntime::Fault(const std::string& symbol) {
  if (!faults_read_) ReadFaults();
  const uint64_t call = ++calls_[symbol];
  for (const InjectedFault& fault : faults_) {
    if (fault.symbol == symbol && (fault.nth == 0 || fault.nth == call)) return fault.status;
  }
  return NRT_SUCCESS;
}

std::string FakeRuntime::version() const {
  const char* version = std::getenv("FAKE_NRT_VERSION");
  return version != nullptr ? version : "2.34.10";
}

}  // namespace neuron::rtd::fake_nrt
