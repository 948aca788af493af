// The process's session with neuron-rtd: devices, streams and executables
// as the PyTorch backend sees them. No PyTorch headers, so it compiles fast
// and the backend's files stay small.
//
// Devices: `neuron:i` is the i-th core of the session (the cores
// NEURON_RT_VISIBLE_CORES makes visible, else every core).
// Streams: per device, id 0 is the default stream (priority 0); PoolStream
// adds up to kStreamPoolSize more per priority level.
// Streams live as long as the process (as CUDA's do).
//
// Lifetime: created on first use and never destroyed: PyTorch tears its own
// state down at exit in no particular order, and the daemon reclaims a
// session whose process ends.
// Thread-safety: every method may be called from any thread.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_RUNTIME_H_
#define TORCH_NEURONX_CSRC_RUNTIME_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "neuronrt/session.h"

namespace torch_neuronx {

class Runtime {
 public:
  // The runtime, opening the session on the first call (and starting a
  // per-user daemon when none answers, see DaemonLauncher.h). A failure is
  // returned again on every later call until one succeeds.
  static absl::StatusOr<Runtime*> Get();
  // The runtime when it is already open; nullptr otherwise. Never connects.
  static Runtime* GetIfOpen();
  // Whether Get() can succeed without starting anything now: the runtime is
  // open, a daemon answers, or one can be started (DaemonAnswersOrCanStart;
  // asked once, then remembered). Opens no session, starts no daemon.
  static bool Reachable();
  // Where autostart finds neuron-rtd (the copy inside the wheel), and the
  // Python its compiler worker runs with. Call before first use.
  static void SetDaemonBinary(std::string path, std::string compiler_python);
  // True in a child forked after the session opened: the session (its
  // shared memory, sockets and threads) belongs to the parent, so the child
  // must not use the device (as with CUDA; use the "spawn" start method).
  static bool InBadFork();

  neuronrt::Session& session() const { return *session_; }
  int device_count() const { return static_cast<int>(session_->cores().size()); }
  // The host-wide core of `device`; `device` must be in [0, device_count()).
  uint32_t core(int device) const { return session_->cores()[device]; }

  // The stream `id` of `device`; INVALID_ARGUMENT for an unknown id.
  absl::StatusOr<neuronrt::Stream*> stream(int device, int64_t id);
  // A stream for a new torch.Stream on `device` at `priority` (lower runs
  // first, as CUDA's; clamped to [HighestStreamPriority(), 0]): per level,
  // the first kStreamPoolSize calls create streams, later ones reuse them
  // round-robin (as CUDA's stream pools do), so creating streams in a loop
  // stays bounded.
  absl::StatusOr<int64_t> PoolStream(int device, int priority = 0);
  static constexpr int kStreamPoolSize = 16;
  // The priority stream `id` of `device` was created with.
  absl::StatusOr<int> StreamPriority(int device, int64_t id);
  // The highest stream priority the daemon's cores have (0 when they have
  // one level), asked once.
  absl::StatusOr<int> HighestStreamPriority();
  // Waits for every stream of `device`.
  absl::Status SynchronizeDevice(int device);
  // Waits until every stream of every device has run (or can no longer
  // run) what was submitted so far, reporting nothing (neuronrt::Event::
  // WaitSettled): a profiler's flush.
  void SettleAllStreams();

 private:
  explicit Runtime(std::unique_ptr<neuronrt::Session> session);

  const std::unique_ptr<neuronrt::Session> session_;
  absl::Mutex mutex_;
  // streams_[device][id]; a deque so that pointers stay valid as it grows.
  std::vector<std::deque<std::shared_ptr<neuronrt::Stream>>> streams_ ABSL_GUARDED_BY(mutex_);
  // stream_priorities_[device][id], beside streams_.
  std::vector<std::deque<int>> stream_priorities_ ABSL_GUARDED_BY(mutex_);
  // pools_[device][priority]: the pooled streams' ids, and the next to reuse.
  struct Pool {
    std::vector<int64_t> ids;
    uint64_t next = 0;
  };
  std::vector<std::map<int, Pool>> pools_ ABSL_GUARDED_BY(mutex_);
  std::optional<int> highest_priority_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_RUNTIME_H_
