// The hardware abstraction layer: what the daemon needs from a Neuron device,
// whichever backend provides it (hal/sim today; libnrt on real Trainium).
// Nothing above the HAL may depend on which backend runs.
#ifndef NEURON_RTD_DAEMON_HAL_DEVICE_H_
#define NEURON_RTD_DAEMON_HAL_DEVICE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/hal/command_kind.h"
#include "daemon/hal/device_info.h"
#include "daemon/hal/device_telemetry.h"
#include "daemon/hal/engine.h"
#include "daemon/hal/executable.h"
#include "daemon/hal/reduction.h"

namespace neuron::rtd::hal {

// A range of device memory, in device virtual addresses. Device addresses are
// never dereferenced on the host.
struct DeviceRange {
  uint64_t address = 0;
  uint64_t size = 0;

  uint64_t end() const { return address + size; }
};

// One chip. Owned by its Backend; lives as long as the Backend.
// Thread-safety: every method may be called from any thread.
class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceInfo& info() const = 0;

  // All of the device's HBM. The memory allocator (daemon/memory) hands out
  // sub-ranges of it.
  virtual DeviceRange hbm() const = 0;

  // Makes a page-aligned sub-range of hbm() usable before the allocator hands
  // it out, in the HBM nearest logical core `core` of this device (its index
  // among the device's cores), and gives it back once nothing uses it any
  // more; after Release the range's contents are undefined. An acquired
  // range reads as zeros: one session never sees what another left. A
  // backend whose memory is always resident may do little more.
  virtual absl::Status Acquire(DeviceRange range, uint32_t core) = 0;
  virtual absl::Status Release(DeviceRange range) = 0;

  // The engines. Each call runs to completion on the calling thread (a
  // queue's worker). Callers have checked every device address against the
  // segments of the session that named it, and every host range against
  // memory the daemon mapped.
  virtual absl::Status CopyHostToDevice(uint64_t device_address, const void* host,
                                        uint64_t bytes) = 0;
  virtual absl::Status CopyDeviceToHost(void* host, uint64_t device_address, uint64_t bytes) = 0;
  // `source` may be this device or another of the same backend.
  virtual absl::Status CopyDeviceToDevice(uint64_t device_address, Device& source,
                                          uint64_t source_address, uint64_t bytes) = 0;
  // Repeats the low `pattern_bytes` (1, 2, 4 or 8) bytes of `pattern`.
  virtual absl::Status Fill(uint64_t device_address, uint64_t bytes, uint64_t pattern,
                            uint32_t pattern_bytes) = 0;
  // The collective engine: reduces `reduction.count` elements of every
  // source (each on this or another device of the same backend) into
  // `destination` on this device. The destination may alias sources[0] and
  // no other source; integer averages round toward zero.
  virtual absl::Status Reduce(const Reduction& reduction, uint64_t destination,
                              std::span<const ReduceOperand> sources) = 0;
  // Host memory through which the fabric reads and writes device memory
  // [address, address + bytes) directly, as libfabric's FI_HMEM lets a NIC
  // reach HBM; null when this backend's memory is not host-addressable
  // (callers then stage through CopyDeviceToHost and CopyHostToDevice).
  // Valid while the range is acquired.
  virtual uint8_t* FabricView(uint64_t /*address*/, uint64_t /*bytes*/) { return nullptr; }
  // Runs the built-in float32 add, out[i] = a[i] + b[i], on device buffers
  // (arguments a, b, out; BuiltinAddF32Count says what they hold). The
  // queue maps the ring's built-in executable id to it.
  virtual absl::Status RunAddF32(std::span<const uint64_t> arguments,
                                 std::span<const uint8_t> scalars) = 0;
  // Runs a prepared executable of this device's backend on logical core
  // `core` of the device, on tensors at `bindings` (each covering its
  // layout's extent, checked by the caller) with per-call `immediates`. The operator's own errors (a shape mismatch,
  // a dtype its kernel lacks) come back as status, with the operator error's
  // type as a payload (OperatorErrorType); device memory stays intact.
  virtual absl::Status Dispatch(const Executable& executable, uint32_t core,
                                std::span<const uint64_t> bindings,
                                std::span<const uint8_t> immediates) = 0;
  // The engine that does the work of a command of `kind` issued for
  // operator `op_name`, for profiles; `launched`: the executable a launch
  // ran (null for other commands and built-ins). Any thread.
  virtual Engine EngineOf(CommandKind kind, std::string_view op_name,
                          const Executable* launched) const = 0;

  // Why logical core `core` of the device stopped (an unrecoverable fault of
  // the runtime or the hardware), or empty while it works. A failed core
  // refuses launches until Reset recovers it. Any thread.
  virtual std::string CoreFault(uint32_t /*core*/) const { return {}; }
  // Launches of core `core` that ran on the host CPU instead (operators no
  // compiler has made into programs of the core). 0 where every launch runs
  // on the host anyway (the sim).
  virtual uint64_t HostExecutedLaunches(uint32_t /*core*/) const { return 0; }
  // What the device and its runtime report about themselves now (reads
  // the driver's files or asks the runtime: not for the command path).
  virtual DeviceTelemetry Telemetry() const { return {}; }
  // Returns the device to a clean state once the daemon has ended every
  // session that used it (nothing of theirs remains allocated); recovers
  // failed cores where the backend can.
  virtual absl::Status Reset() { return absl::OkStatus(); }
};

// A set of devices, created once at daemon start.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  // Devices in index order; device i has info().index == i.
  virtual std::span<Device* const> devices() const = 0;

  // Prepares `spec` once for every device of the backend. INVALID_ARGUMENT
  // naming the argument when the spec does not fit its operator (an unknown
  // operator, a missing argument, a value of the wrong kind): nothing that
  // Dispatch later runs can have been refused here.
  virtual absl::StatusOr<std::unique_ptr<Executable>> PrepareExecutable(
      const ExecutableSpec& spec) = 0;

  // Whether resetting device `device` takes every session of the host, not
  // only its own: a runtime that recovers a failed core only by starting
  // again (libnrt) frees every device's memory as it does.
  virtual bool ResetEndsEverySession(uint32_t /*device*/) const { return false; }

  uint32_t total_logical_cores() const;
};

// The HBM granularity of Acquire/Release: ranges must be aligned to it.
inline constexpr uint64_t kHbmPageBytes = 64 * 1024;

// Device virtual addresses of every backend: chip i's memory starts at
// kDeviceAddressBase + i * kDeviceAddressStride. The range is non-canonical
// on x86-64 and AArch64, so no host pointer can ever equal a device address.
inline constexpr uint64_t kDeviceAddressBase = 0x4e00'0000'0000'0000;
inline constexpr uint64_t kDeviceAddressStride = uint64_t{1} << 40;

// The absl::Status payload that carries the Python exception type of an
// operator's error ("IndexError", "ValueError", "TypeError",
// "NotImplementedError", "LinAlgError"; absent for a plain RuntimeError).
inline constexpr char kOperatorErrorTypePayload[] = "neuron.rtd/operator-error-type";

// What Device::Fill accepts: a 1-, 2-, 4- or 8-byte pattern repeated over a
// whole number of patterns. The one check, for the ring decoder and the
// backends.
absl::Status CheckFill(uint64_t bytes, uint32_t pattern_bytes);

// The element count of a built-in float32 add (RunAddF32: 3
// addresses, an 8-byte count as scalars; each operand count * 4 bytes).
absl::StatusOr<uint64_t> BuiltinAddF32Count(std::span<const uint64_t> arguments,
                                            std::span<const uint8_t> scalars);

std::string_view ArchitectureName(Architecture architecture);
std::string_view BackendKindName(BackendKind kind);

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_DEVICE_H_
