// What a queue needs from the session that owns a stream: the checks that
// turn the addresses a client names into memory the daemon may touch.
#ifndef NEURON_RTD_DAEMON_QUEUE_EXECUTION_CONTEXT_H_
#define NEURON_RTD_DAEMON_QUEUE_EXECUTION_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/collectives/communicator.h"
#include "daemon/exec/executable.h"
#include "daemon/hal/device.h"
#include "daemon/memory/segment.h"
#include "daemon/queue/profiled_command.h"

namespace neuron::rtd::queue {

class Stream;

// Device memory a command may use; `segment` keeps it allocated until the
// command has finished.
struct DeviceSpan {
  memory::SegmentRef segment;
  hal::Device* device = nullptr;
  uint64_t address = 0;
};

// Host memory a command may use; `keep_alive` keeps it mapped.
struct HostSpan {
  std::shared_ptr<const void> keep_alive;
  char* data = nullptr;
};

struct StreamError {
  uint64_t stream_id = 0;
  uint64_t sequence = 0;
  int32_t nrt_status = 0;  // neuron.rtd.v1.NrtStatus
  uint16_t opcode = 0;
  std::string op_name;
  std::string message;
  // The Python exception type of an operator error ("IndexError", ...;
  // "RuntimeError" when the operator said no more); empty for a fault.
  std::string error_type;
  // Poisoned the stream (a fault), or only failed its command (an operator
  // error).
  bool sticky = true;
};

// A rank of a communicator that a session joined.
struct CommunicatorMembership {
  std::shared_ptr<collectives::Communicator> communicator;
  uint32_t rank = 0;
};

// Where a destroyed stream's timeline ended, once its queue let it go.
struct RetiredTimeline {
  uint64_t completed = 0;
  bool failed = false;
  std::string failure;  // Stream::failure()
};

// Thread-safety: called from queue threads concurrently with RPC handlers.
class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;

  virtual uint64_t session_id() const = 0;
  // The session's weight in its cores' fair queues (>= 1).
  virtual uint32_t share_weight() const = 0;
  // The session used `ns` of a core's device time.
  virtual void AddDeviceTime(uint64_t ns) = 0;
  virtual absl::StatusOr<DeviceSpan> ResolveDevice(uint64_t address, uint64_t length) = 0;
  virtual absl::StatusOr<HostSpan> ResolveStaging(uint64_t offset, uint64_t length) = 0;
  virtual absl::StatusOr<HostSpan> ResolveHostMemory(uint64_t host_memory_id, uint64_t offset,
                                                     uint64_t length) = 0;
  // Another stream of the same session; nullptr when there is none.
  virtual std::shared_ptr<Stream> FindStream(uint64_t stream_id) = 0;
  // Recorded by the queue just before it lets a destroyed stream go, so
  // that a WAIT on the stream's events still has an answer.
  virtual void OnStreamRetired(uint64_t stream_id, const RetiredTimeline& timeline) = 0;
  // The timeline of a stream of the session that was destroyed and let go.
  virtual std::optional<RetiredTimeline> FindRetiredTimeline(uint64_t stream_id) = 0;
  // A loaded executable the session holds; nullptr when it holds none by
  // that id.
  virtual std::shared_ptr<const exec::Executable> FindExecutable(uint64_t executable_id) = 0;

  // The communicator the session joined as `handle`; NOT_FOUND otherwise.
  virtual absl::StatusOr<CommunicatorMembership> FindCommunicator(uint64_t handle) = 0;

  // A command finished (or failed) on one of the session's streams.
  virtual void OnCommandDone(const Stream& stream, bool failed) = 0;
  // A failure of a command, with its context, for GetStreamErrors: the first
  // fault of a stream, and every operator error.
  virtual void OnStreamError(const StreamError& error) = 0;
  // A command whose record carried the PROFILE flag finished.
  virtual void OnProfiledCommand(ProfiledCommand command) = 0;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_EXECUTION_CONTEXT_H_
