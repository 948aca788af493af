// A session with neuron-rtd: device memory, pinned host memory and streams
// for one process. The per-command path goes through shared memory, never
// through a system call while the daemon is busy.
#ifndef NEURONRT_SESSION_H_
#define NEURONRT_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/eager_op.h"
#include "neuron/rtd/graph_plan.h"
#include "neuron/rtd/nki_kernel.h"
#include "neuronrt/client.h"
#include "neuronrt/profiling.h"

namespace neuronrt {

namespace internal {
class SessionCore;
class StreamState;
}  // namespace internal

// Payloads on the absl::Status of a command that failed in the daemon.
//
// An operator's error (it refused its arguments; device memory is intact
// and the stream goes on) carries kOperatorErrorTypePayload: the Python
// exception type the operator raised, "IndexError", "ValueError",
// "TypeError", "NotImplementedError", "LinAlgError" or "RuntimeError". It is
// reported once, by the first synchronization that covers its command.
inline constexpr char kOperatorErrorTypePayload[] = "neuronrt/operator-error-type";
// A fault that poisoned its stream (sticky: every later wait on the stream
// fails with it), and a session the daemon closed or a daemon gone, carry
// kStreamFaultPayload.
inline constexpr char kStreamFaultPayload[] = "neuronrt/stream-fault";

struct SessionOptions {
  ClientOptions client;
  // Shown by `neuronctl ps`.
  std::string client_name;
  // Host-wide core indices; empty: $NEURON_RT_VISIBLE_CORES ("0-3", "1,3"),
  // else every core.
  std::vector<uint32_t> cores;
  // Command ring of each stream, in bytes.
  uint64_t ring_bytes = 256 << 10;
};

// A segment of device memory. `device_address` is a device virtual address:
// never dereference it on the host.
struct DeviceBuffer {
  uint64_t segment_id = 0;
  uint64_t device_address = 0;
  uint64_t size = 0;
  uint32_t core = 0;
};

// Pinned host memory, shared with the daemon: copies to and from it need no
// staging. Lifetime: mapped until the last reference goes.
class HostBuffer {
 public:
  HostBuffer(std::shared_ptr<internal::SessionCore> session, uint64_t id, void* data,
             uint64_t size);
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();

  uint64_t id() const { return id_; }
  void* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  std::shared_ptr<internal::SessionCore> session_;
  const uint64_t id_;
  void* const data_;
  const uint64_t size_;
};

// A point on a stream's timeline. Cheap to copy.
class Event {
 public:
  Event() = default;
  Event(std::shared_ptr<internal::StreamState> stream, uint64_t value)
      : stream_(std::move(stream)), value_(value) {}

  uint64_t stream_id() const;
  uint64_t value() const { return value_; }
  bool valid() const { return stream_ != nullptr; }

  // True once the command (and all before it on its stream) has finished;
  // the stream's error when it failed at or before this point.
  absl::StatusOr<bool> Query() const;
  // Sleeps until the event completes; the error of the failing command, with
  // its op name, when it failed.
  absl::Status Synchronize() const;
  // Waits until the event completes or can no longer complete (its stream
  // failed, the session closed); reports nothing: a failure stays for the
  // next Synchronize or Query. For a profiler, which must not take the
  // program's errors.
  void WaitSettled() const;

 private:
  friend class Stream;
  friend class internal::SessionCore;
  std::shared_ptr<internal::StreamState> stream_;
  uint64_t value_ = 0;
};

// An ordered queue of commands on one core. Commands run in order within a
// stream; streams run independently unless one waits on another's Event.
// Errors are asynchronous: a failed command poisons its stream, and the next
// synchronization (Event::Synchronize, Stream::Synchronize, a blocking copy)
// returns it. Thread-safety: every method may be called from any thread.
class Stream {
 public:
  explicit Stream(std::shared_ptr<internal::StreamState> state) : state_(std::move(state)) {}
  ~Stream();

  uint64_t id() const;
  uint32_t core() const;

  // Pageable host memory goes through the session's staging arena: the call
  // returns once `host` has been read (it may be reused at once).
  absl::StatusOr<Event> CopyToDevice(uint64_t device_address, const void* host, uint64_t bytes,
                                     std::string_view op_name = {});
  // Pinned memory is read by the daemon: keep it unchanged until the Event.
  absl::StatusOr<Event> CopyToDevice(uint64_t device_address, const HostBuffer& host,
                                     uint64_t offset, uint64_t bytes,
                                     std::string_view op_name = {});
  // Blocking: returns when `host` holds the data.
  absl::Status CopyToHost(void* host, uint64_t device_address, uint64_t bytes,
                          std::string_view op_name = {});
  absl::StatusOr<Event> CopyToHost(const HostBuffer& host, uint64_t offset,
                                   uint64_t device_address, uint64_t bytes,
                                   std::string_view op_name = {});
  absl::StatusOr<Event> CopyOnDevice(uint64_t destination, uint64_t source, uint64_t bytes,
                                     std::string_view op_name = {});
  // Repeats the low `pattern_bytes` (1, 2, 4 or 8) bytes of `pattern`.
  absl::StatusOr<Event> Fill(uint64_t device_address, uint64_t bytes, uint64_t pattern,
                             uint32_t pattern_bytes, std::string_view op_name = {});
  absl::StatusOr<Event> Launch(uint64_t executable_id, std::span<const uint64_t> arguments,
                               std::span<const uint8_t> scalars, std::string_view op_name = {});
  // A group of collective operations on a communicator this session joined
  // (Session::InitCommunicator), as one COLLECTIVE record: the stream waits
  // at it, on the device side, until the peers' matching operations have
  // arrived and the data has moved (neuron/rtd/abi/command_ring.h says what
  // each kind means). 1 to NEURON_RTD_MAX_COLLECTIVE_OPS operations.
  absl::StatusOr<Event> Collective(uint64_t communicator_handle,
                                   std::span<const neuron_rtd_collective_op> operations,
                                   std::string_view op_name = {});
  // An event after everything enqueued so far (no command, no round trip).
  absl::StatusOr<Event> Record();
  // An event that also carries the time the device reached it: a SIGNAL
  // record that the daemon stamps (Session::EventTimestamp).
  absl::StatusOr<Event> RecordTimed();
  // The point where this stream's timeline reaches `value`, which may lie in
  // the future: another stream may wait on it before this stream has
  // submitted the command that completes it (wait-before-signal).
  Event EventAt(uint64_t value) const { return Event(state_, value); }
  // Makes later commands of this stream wait, on the device side, for `event`.
  absl::Status Wait(const Event& event);
  absl::Status Synchronize();

 private:
  std::shared_ptr<internal::StreamState> state_;
};

class Session {
 public:
  // Opens a session and attaches its data plane.
  static absl::StatusOr<std::unique_ptr<Session>> Open(const SessionOptions& options = {});
  ~Session();

  uint64_t id() const;
  const std::vector<uint32_t>& cores() const;
  Client& client() const;

  absl::StatusOr<DeviceBuffer> Allocate(uint32_t core, uint64_t bytes);
  absl::Status Free(const DeviceBuffer& buffer);
  // Sharing device memory with other processes of the same user: Share
  // gives an opaque handle to one of the session's buffers (the same handle
  // each time), and Import, in any session of that user, gives the buffer
  // (Free it once per Import). The memory lives while any session holds it;
  // a handle is worth nothing once every holder has freed it.
  absl::StatusOr<std::string> Share(const DeviceBuffer& buffer);
  absl::StatusOr<DeviceBuffer> Import(std::string_view handle);
  // Of the segments given, those another process may still use: shared and
  // not yet imported as often, or held by another session (at most 65536
  // ids).
  absl::StatusOr<std::vector<uint64_t>> SharedSegmentsInUse(
      const std::vector<uint64_t>& segment_ids);
  // Caps the device memory this session may hold in segments of `core`
  // (nullopt: no cap), enforced by the daemon beside its own quota: Allocate
  // beyond it fails with RESOURCE_EXHAUSTED.
  absl::Status SetMemoryCap(uint32_t core, std::optional<uint64_t> cap_bytes);
  absl::StatusOr<std::shared_ptr<HostBuffer>> AllocateHost(uint64_t bytes);
  // `priority` as CUDA's (lower runs first, 0 the default and lowest,
  // DeviceInfo::stream_priority_levels levels); the daemon clamps it.
  absl::StatusOr<std::shared_ptr<Stream>> CreateStream(uint32_t core, int32_t priority = 0);

  // What a serialized neuron.rtd.v1.ExecutableBody holds.
  enum class ExecutableKind { kEagerOp, kGraph, kNeff, kNki };
  // Loads an executable (a serialized neuron.rtd.v1.ExecutableBody of
  // `kind`) into the daemon, once per host: when any process already loaded
  // the same content, only its hash travels. The id is what Stream::Launch
  // takes.
  absl::StatusOr<uint64_t> LoadExecutable(std::string_view body, std::string_view name = {},
                                          ExecutableKind kind = ExecutableKind::kEagerOp);
  // Encodes `plan` and loads it as LoadExecutable does.
  absl::StatusOr<uint64_t> LoadEagerOp(const neuron::rtd::EagerOpPlan& plan,
                                       std::string_view name = {});
  // Encodes a graph (torch.compile) and loads it as LoadExecutable does. A
  // LAUNCH of it passes its inputs' addresses, then its outputs', at the
  // address indices the plan gives.
  absl::StatusOr<uint64_t> LoadGraph(const neuron::rtd::GraphPlan& plan,
                                     std::string_view name = {});
  // Encodes a traced NKI kernel and loads it as LoadExecutable does. A
  // LAUNCH of it passes the address of each HBM allocation at its
  // address_index.
  absl::StatusOr<uint64_t> LoadNkiKernel(const neuron::rtd::NkiKernelPlan& plan,
                                         std::string_view name = {});

  // A tensor of a loaded NEFF, as the daemon's runtime reports it.
  struct NeffTensor {
    std::string name;
    bool input = true;
    uint64_t size_bytes = 0;
    std::vector<uint32_t> shape;
    // c10::ScalarType number; absent when PyTorch has no such type.
    std::optional<int32_t> dtype;
  };
  struct LoadedNeff {
    uint64_t executable_id = 0;
    // A LAUNCH passes one address per tensor, in this order.
    std::vector<NeffTensor> tensors;
  };
  // Loads a compiled NEFF (a .neff file's bytes) as LoadExecutable does.
  // Only a daemon on real Trainium (its nrt backend) runs NEFFs: another
  // refuses it with FAILED_PRECONDITION saying so.
  absl::StatusOr<LoadedNeff> LoadNeff(std::string_view neff, std::string_view name = {});
  // Ends this session's hold on an executable: it may no longer launch it
  // (launches already running finish), and the daemon may evict it once no
  // session holds it. Call after the streams that launched it have synced.
  absl::Status UnloadExecutable(uint64_t executable_id);

  // Collectives. Rank 0 creates an id and shares it with the other ranks
  // out of band; each rank then joins with it, and the call returns once
  // every rank has joined (DEADLINE_EXCEEDED naming the missing ranks after
  // `join_timeout`). An operation that waits longer than
  // `operation_timeout` for its peers aborts the communicator.
  absl::StatusOr<std::string> CreateCommunicatorId();
  struct Communicator {
    uint64_t handle = 0;
    std::string name;
  };
  // Across hosts: `rank` and `world_size` are global, and each host's
  // daemon serves its ranks (RuntimeInfo::fabric_address of each).
  struct CommunicatorHosts {
    uint32_t host = 0;  // the index of this session's daemon
    std::vector<std::string> fabric_addresses;
    std::vector<std::vector<uint32_t>> ranks;  // of each host, ascending
    std::string group_key;                     // 16 random bytes all ranks share
  };
  absl::StatusOr<Communicator> InitCommunicator(
      std::string_view id, uint32_t rank, uint32_t world_size, absl::Duration join_timeout,
      absl::Duration operation_timeout, const CommunicatorHosts* hosts = nullptr);
  // This rank leaves: operations its peers wait on with it fail.
  absl::Status DestroyCommunicator(uint64_t handle);

  // Profiling (neuronrt/profiling.h). Commands submitted between Start and
  // Stop on the chosen cores are stamped by the daemon; DrainProfile
  // collects everything stamped so far (call it after synchronizing).
  absl::Status StartProfiling(const ProfilingOptions& options);
  absl::Status StopProfiling();
  absl::StatusOr<ProfileRecords> DrainProfile();
  // When the device reached an event of Stream::RecordTimed (CLOCK_MONOTONIC
  // ns); waits for the event. FAILED_PRECONDITION for any other event.
  absl::StatusOr<int64_t> EventTimestamp(const Event& event);

  // Ends the session; commands still queued are dropped.
  absl::Status Close();

 private:
  explicit Session(std::shared_ptr<internal::SessionCore> core) : core_(std::move(core)) {}
  // LoadExecutable; a NEFF's tensors into `neff_tensors` when not null.
  absl::StatusOr<uint64_t> LoadBody(std::string_view body, std::string_view name,
                                    ExecutableKind kind, std::vector<NeffTensor>* neff_tensors);

  std::shared_ptr<internal::SessionCore> core_;
};

// Parses NEURON_RT_VISIBLE_CORES syntax: "3", "0-3", "0,2-3".
absl::StatusOr<std::vector<uint32_t>> ParseCoreList(std::string_view text);

}  // namespace neuronrt

#endif  // NEURONRT_SESSION_H_
