// A session driven at the wire level (gRPC messages and raw ring records),
// for tests that must send what libneuronrt never would.
#ifndef NEURON_TESTS_E2E_RAW_SESSION_H_
#define NEURON_TESTS_E2E_RAW_SESSION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "src/internal/data_plane_connection.h"

namespace neuron::testing {

class RawStream {
 public:
  RawStream(uint64_t id, std::unique_ptr<neuronrt::internal::MappedRegion> ring, int doorbell,
            neuron_rtd_completion_slot* slot);
  ~RawStream();

  uint64_t id() const { return id_; }
  uint64_t capacity() const { return header_->capacity_bytes; }

  // Copies `bytes` to the ring at the current tail (what fits before the
  // ring's end), publishes the tail past all of it and rings the doorbell.
  void Write(std::span<const uint8_t> bytes);
  // Publishes an arbitrary tail (a lying producer).
  void PublishTail(uint64_t tail);

  // Sleeps until the stream has failed (true) or `value` completed (false);
  // an error after 30 s.
  absl::StatusOr<bool> WaitFailedOrCompleted(uint64_t value);
  uint64_t completed() const;

 private:
  const uint64_t id_;
  std::unique_ptr<neuronrt::internal::MappedRegion> ring_;
  neuron_rtd_ring_header* header_;
  const int doorbell_;
  neuron_rtd_completion_slot* const slot_;
  uint64_t tail_ = 0;
};

class RawSession {
 public:
  static absl::StatusOr<std::unique_ptr<RawSession>> Open(const std::string& address);

  uint64_t id() const { return id_; }
  rtd::v1::Runtime::Stub& runtime() { return *runtime_; }
  absl::StatusOr<std::unique_ptr<RawStream>> CreateStream(uint32_t core);
  // Allocates a segment; returns its device address.
  absl::StatusOr<uint64_t> Allocate(uint32_t core, uint64_t bytes);
  std::vector<rtd::v1::ErrorDetail> Errors(uint64_t stream_id);
  // Waits for a region the daemon never sends, as libneuronrt would.
  absl::Status WaitForRegion(uint64_t region_id, absl::Duration timeout);

 private:
  uint64_t id_ = 0;
  std::unique_ptr<rtd::v1::Runtime::Stub> runtime_;
  std::unique_ptr<neuronrt::internal::DataPlaneConnection> data_plane_;
  std::unique_ptr<neuronrt::internal::MappedRegion> completion_page_;
  std::unique_ptr<neuronrt::internal::MappedRegion> staging_;
};

// A well-formed record image with `payload` and `op_name`.
std::vector<uint8_t> MakeRecord(uint16_t opcode, std::span<const uint8_t> payload,
                                uint64_t sequence, std::string_view op_name = "raw");

}  // namespace neuron::testing

#endif  // NEURON_TESTS_E2E_RAW_SESSION_H_
