// Decoding and bounding an executable body sent by a client.
#ifndef NEURON_RTD_DAEMON_EXEC_EXECUTABLE_DECODER_H_
#define NEURON_RTD_DAEMON_EXEC_EXECUTABLE_DECODER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/exec/executable.h"
#include "daemon/hal/neff.h"

namespace neuron::rtd::exec {

// What a body must hold (the kind its loader announced).
enum class ExecutableBodyKind { kEagerOp, kGraph, kNeff, kNki };

// Parses `body` (a serialized neuron.rtd.v1.ExecutableBody; for kNeff, the
// NEFF's bytes) into a plan and bounds every field (docs/design/executables.md
// lists the bounds); a graph's nodes refer only to values defined before
// them; a NEFF's container (header, gzip tar) is read whole before any
// runtime sees it. INVALID_ARGUMENT naming the field; PERMISSION_DENIED for
// an operator that reaches outside device memory. Leaves id, hash, name,
// size and the prepared form empty; a NEFF's launch tensors come from the
// backend that loads it (SetNeffLaunchTensors).
absl::StatusOr<Executable> DecodeExecutable(std::string_view body, ExecutableBodyKind kind);

// Fills a NEFF executable's launch tensors and address count from the
// tensors its backend found in it: one byte buffer of each tensor's size,
// at launch address i for tensor i.
void SetNeffLaunchTensors(const std::vector<hal::NeffTensor>& tensors, Executable& executable);

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_EXECUTABLE_DECODER_H_
