#include "csrc/runtime/Runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>

#include "absl/strings/str_format.h"
#include "csrc/runtime/DaemonLauncher.h"

namespace torch_neuronx {
namespace {

absl::Mutex open_mutex(absl::kConstInit);
std::atomic<Runtime*> opened{nullptr};
std::string* daemon_binary ABSL_GUARDED_BY(open_mutex) = nullptr;
std::string* worker_python ABSL_GUARDED_BY(open_mutex) = nullptr;
std::atomic<bool> in_bad_fork{false};

void MarkForkedChild() { in_bad_fork.store(true, std::memory_order_relaxed); }

// "python3 train.py" for `neuronctl ps`.
std::string ClientName() {
  std::ifstream file("/proc/self/cmdline");
  std::string arguments((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  for (char& c : arguments) {
    if (c == '\0') c = ' ';
  }
  while (!arguments.empty() && arguments.back() == ' ') arguments.pop_back();
  if (arguments.size() > 120) arguments.resize(120);
  return absl::StrFormat("torch_neuronx pid %d: %s", ::getpid(), arguments);
}

}  // namespace

Runtime::Runtime(std::unique_ptr<neuronrt::Session> session)
    : session_(std::move(session)),
      streams_(session_->cores().size()),
      stream_priorities_(session_->cores().size()),
      pools_(session_->cores().size()) {}

void Runtime::SetDaemonBinary(std::string path, std::string compiler_python) {
  absl::MutexLock lock(&open_mutex);
  delete daemon_binary;
  daemon_binary = new std::string(std::move(path));
  delete worker_python;
  worker_python = new std::string(std::move(compiler_python));
}

bool Runtime::InBadFork() { return in_bad_fork.load(std::memory_order_relaxed); }

Runtime* Runtime::GetIfOpen() {
  return InBadFork() ? nullptr : opened.load(std::memory_order_acquire);
}

bool Runtime::Reachable() {
  if (InBadFork()) return false;
  if (GetIfOpen() != nullptr) return true;
  // Asked once: a probe is a connection and an RPC, and PyTorch asks for
  // every operator it traces.
  static std::atomic<int> reachable{-1};
  if (const int known = reachable.load(std::memory_order_acquire); known >= 0) return known == 1;
  std::string binary;
  {
    absl::MutexLock lock(&open_mutex);
    if (daemon_binary != nullptr) binary = *daemon_binary;
  }
  const bool found = DaemonAnswersOrCanStart(LaunchOptionsFromEnvironment(std::move(binary)));
  reachable.store(found ? 1 : 0, std::memory_order_release);
  return found;
}

absl::StatusOr<Runtime*> Runtime::Get() {
  if (InBadFork()) {
    return absl::FailedPreconditionError(
        "the neuron device was initialized in the parent process and cannot be used in a "
        "forked child; start subprocesses with the 'spawn' method "
        "(multiprocessing.set_start_method('spawn'), DataLoader(multiprocessing_context="
        "'spawn'))");
  }
  if (Runtime* runtime = opened.load(std::memory_order_acquire)) return runtime;
  absl::MutexLock lock(&open_mutex);
  if (Runtime* runtime = opened.load(std::memory_order_acquire)) return runtime;
  // As in neuron-rtd: Debian's Abseil checks every lock for deadlock
  // cycles unless told not to.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  LaunchOptions launch =
      LaunchOptionsFromEnvironment(daemon_binary == nullptr ? std::string() : *daemon_binary);
  if (worker_python != nullptr) launch.compiler_python = *worker_python;
  absl::StatusOr<neuronrt::DaemonAddress> address = EnsureDaemon(launch);
  if (!address.ok()) return address.status();
  neuronrt::SessionOptions options;
  if (MustNameAddress(*address)) options.client.address = address->target;
  options.client_name = ClientName();
  // Room for a few thousand queued launches per stream.
  options.ring_bytes = 1 << 20;
  absl::StatusOr<std::unique_ptr<neuronrt::Session>> session = neuronrt::Session::Open(options);
  if (!session.ok()) return session.status();
  if ((*session)->cores().empty()) {
    return absl::UnavailableError(
        absl::StrFormat("neuron-rtd at %s gave this process no NeuronCore", address->target));
  }
  auto* runtime = new Runtime(*std::move(session));
  ::pthread_atfork(nullptr, nullptr, &MarkForkedChild);
  opened.store(runtime, std::memory_order_release);
  return runtime;
}

absl::StatusOr<neuronrt::Stream*> Runtime::stream(int device, int64_t id) {
  if (device < 0 || device >= device_count()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "neuron:%d does not exist; this process sees %d device(s)", device, device_count()));
  }
  absl::MutexLock lock(&mutex_);
  std::deque<std::shared_ptr<neuronrt::Stream>>& streams = streams_[device];
  if (id == 0 && streams.empty()) {
    absl::StatusOr<std::shared_ptr<neuronrt::Stream>> created =
        session_->CreateStream(core(device));
    if (!created.ok()) return created.status();
    streams.push_back(*std::move(created));
    stream_priorities_[device].push_back(0);
  }
  if (id < 0 || static_cast<size_t>(id) >= streams.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("neuron:%d has no stream %d", device, id));
  }
  return streams[id].get();
}

absl::StatusOr<int> Runtime::HighestStreamPriority() {
  {
    absl::MutexLock lock(&mutex_);
    if (highest_priority_) return *highest_priority_;
  }
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices = session_->client().ListDevices();
  if (!devices.ok()) return devices.status();
  // Every core of a host has the same queues; the fewest levels are safe.
  uint32_t levels = devices->empty() ? 1 : UINT32_MAX;
  for (const neuronrt::DeviceInfo& device : *devices) {
    levels = std::min(levels, device.stream_priority_levels);
  }
  absl::MutexLock lock(&mutex_);
  highest_priority_ = -static_cast<int>(std::max<uint32_t>(1, levels) - 1);
  return *highest_priority_;
}

absl::StatusOr<int64_t> Runtime::PoolStream(int device, int priority) {
  if (absl::StatusOr<neuronrt::Stream*> default_stream = stream(device, 0); !default_stream.ok()) {
    return default_stream.status();
  }
  absl::StatusOr<int> highest = HighestStreamPriority();
  if (!highest.ok()) return highest.status();
  const int level = std::clamp(priority, *highest, 0);
  {
    absl::MutexLock lock(&mutex_);
    Pool& pool = pools_[device][level];
    if (pool.ids.size() >= static_cast<size_t>(kStreamPoolSize)) {
      return pool.ids[pool.next++ % pool.ids.size()];
    }
  }
  // Created outside the lock: launches look their streams up meanwhile.
  absl::StatusOr<std::shared_ptr<neuronrt::Stream>> created =
      session_->CreateStream(core(device), level);
  if (!created.ok()) return created.status();
  absl::MutexLock lock(&mutex_);
  streams_[device].push_back(*std::move(created));
  stream_priorities_[device].push_back(level);
  const auto id = static_cast<int64_t>(streams_[device].size() - 1);
  pools_[device][level].ids.push_back(id);
  return id;
}

absl::StatusOr<int> Runtime::StreamPriority(int device, int64_t id) {
  if (absl::StatusOr<neuronrt::Stream*> found = stream(device, id); !found.ok()) {
    return found.status();
  }
  absl::MutexLock lock(&mutex_);
  return stream_priorities_[device][id];
}

void Runtime::SettleAllStreams() {
  std::vector<std::shared_ptr<neuronrt::Stream>> streams;
  {
    absl::MutexLock lock(&mutex_);
    for (const auto& of_device : streams_) {
      streams.insert(streams.end(), of_device.begin(), of_device.end());
    }
  }
  for (const std::shared_ptr<neuronrt::Stream>& stream : streams) {
    if (stream == nullptr) continue;
    if (absl::StatusOr<neuronrt::Event> last = stream->Record(); last.ok()) last->WaitSettled();
  }
}

absl::Status Runtime::SynchronizeDevice(int device) {
  std::vector<std::shared_ptr<neuronrt::Stream>> streams;
  {
    absl::MutexLock lock(&mutex_);
    if (device < 0 || static_cast<size_t>(device) >= streams_.size()) {
      return absl::InvalidArgumentError(absl::StrFormat("neuron:%d does not exist", device));
    }
    streams.assign(streams_[device].begin(), streams_[device].end());
  }
  for (const std::shared_ptr<neuronrt::Stream>& stream : streams) {
    if (absl::Status status = stream->Synchronize(); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace torch_neuronx
