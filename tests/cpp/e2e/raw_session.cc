#include "e2e/raw_session.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/time/clock.h"

namespace neuron::testing {

namespace v1 = rtd::v1;

RawStream::RawStream(uint64_t id, std::unique_ptr<neuronrt::internal::MappedRegion> ring,
                     int doorbell, neuron_rtd_completion_slot* slot)
    : id_(id),
      ring_(std::move(ring)),
      header_(reinterpret_cast<neuron_rtd_ring_header*>(ring_->data())),
      doorbell_(doorbell),
      slot_(slot) {}

RawStream::~RawStream() { ::close(doorbell_); }

void RawStream::Write(std::span<const uint8_t> bytes) {
  char* records = ring_->data() + header_->header_bytes;
  const uint64_t position = tail_ % capacity();
  // Only what fits before the end of the ring is written: a record that
  // does not fit is a test of the daemon's framing check.
  std::memcpy(records + position, bytes.data(), std::min(bytes.size(), capacity() - position));
  PublishTail(tail_ + bytes.size());
}

void RawStream::PublishTail(uint64_t tail) {
  tail_ = tail;
  std::atomic_ref<uint64_t>(header_->tail).store(tail, std::memory_order_release);
  const uint64_t one = 1;
  if (::write(doorbell_, &one, sizeof(one)) < 0) std::abort();
}

uint64_t RawStream::completed() const {
  return std::atomic_ref<uint64_t>(slot_->completed).load(std::memory_order_acquire);
}

absl::StatusOr<bool> RawStream::WaitFailedOrCompleted(uint64_t value) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    const uint32_t observed = std::atomic_ref<uint32_t>(slot_->wake).load();
    if (std::atomic_ref<uint64_t>(slot_->error_sequence).load() != 0) return true;
    if (completed() >= value) return false;
    std::atomic_ref<uint32_t>(slot_->waiters).fetch_add(1);
    const timespec timeout{.tv_sec = 0, .tv_nsec = 50'000'000};
    ::syscall(SYS_futex, &slot_->wake, FUTEX_WAIT, observed, &timeout, nullptr, 0);
    std::atomic_ref<uint32_t>(slot_->waiters).fetch_sub(1);
  }
  return absl::DeadlineExceededError("the stream neither failed nor completed");
}

absl::StatusOr<std::unique_ptr<RawSession>> RawSession::Open(const std::string& address) {
  auto session = std::make_unique<RawSession>();
  session->runtime_ =
      v1::Runtime::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::OpenSessionRequest request;
  request.set_client_name("raw");
  request.set_abi_version_major(NEURON_RTD_ABI_VERSION_MAJOR);
  v1::OpenSessionResponse response;
  grpc::ClientContext context;
  grpc::Status status = session->runtime_->OpenSession(&context, request, &response);
  if (!status.ok()) return absl::UnknownError(status.error_message());
  session->id_ = response.session_id();
  auto data_plane = neuronrt::internal::DataPlaneConnection::Attach(
      neuronrt::internal::ResolveDataPlaneAddress(response.data_plane_address(),
                                                  address.substr(address.find(':') + 1)),
      response.session_id(), response.attach_token());
  if (!data_plane.ok()) return data_plane.status();
  session->data_plane_ = *std::move(data_plane);
  auto page = session->data_plane_->Receive(response.completion_page().region_id(),
                                            v1::SHARED_REGION_KIND_COMPLETION_PAGE);
  if (!page.ok()) return page.status();
  session->completion_page_ = std::move(page->region);
  auto staging = session->data_plane_->Receive(response.staging().region_id(),
                                               v1::SHARED_REGION_KIND_STAGING);
  if (!staging.ok()) return staging.status();
  session->staging_ = std::move(staging->region);
  return session;
}

absl::StatusOr<std::unique_ptr<RawStream>> RawSession::CreateStream(uint32_t core) {
  v1::CreateStreamRequest request;
  request.set_session_id(id_);
  request.set_core(core);
  request.set_ring_bytes(4096);
  v1::CreateStreamResponse response;
  grpc::ClientContext context;
  grpc::Status status = runtime_->CreateStream(&context, request, &response);
  if (!status.ok()) return absl::UnknownError(status.error_message());
  auto ring = data_plane_->Receive(response.ring().region_id(), v1::SHARED_REGION_KIND_COMMAND_RING);
  if (!ring.ok()) return ring.status();
  auto* slot = reinterpret_cast<neuron_rtd_completion_slot*>(
      completion_page_->data() + sizeof(neuron_rtd_completion_page_header) +
      response.completion_slot() * sizeof(neuron_rtd_completion_slot));
  return std::make_unique<RawStream>(response.stream_id(), std::move(ring->region),
                                     ring->extra_fd, slot);
}

absl::StatusOr<uint64_t> RawSession::Allocate(uint32_t core, uint64_t bytes) {
  v1::AllocateSegmentRequest request;
  request.set_session_id(id_);
  request.set_core(core);
  request.set_size_bytes(bytes);
  v1::AllocateSegmentResponse response;
  grpc::ClientContext context;
  grpc::Status status = runtime_->AllocateSegment(&context, request, &response);
  if (!status.ok()) return absl::UnknownError(status.error_message());
  return response.device_address();
}

std::vector<v1::ErrorDetail> RawSession::Errors(uint64_t stream_id) {
  v1::GetStreamErrorsRequest request;
  request.set_session_id(id_);
  request.set_stream_id(stream_id);
  v1::GetStreamErrorsResponse response;
  grpc::ClientContext context;
  runtime_->GetStreamErrors(&context, request, &response);
  return {response.errors().begin(), response.errors().end()};
}

std::vector<uint8_t> MakeRecord(uint16_t opcode, std::span<const uint8_t> payload,
                                uint64_t sequence, std::string_view op_name) {
  std::vector<uint8_t> bytes(neuron_rtd_record_length(static_cast<uint32_t>(payload.size()),
                                                      static_cast<uint32_t>(op_name.size())));
  neuron_rtd_encode_record(bytes.data(), opcode, sequence, payload.data(),
                           static_cast<uint32_t>(payload.size()), op_name.data(),
                           static_cast<uint32_t>(op_name.size()));
  return bytes;
}

absl::Status RawSession::WaitForRegion(uint64_t region_id, absl::Duration timeout) {
  return data_plane_->Receive(region_id, /*kind=*/2, timeout).status();
}

}  // namespace neuron::testing
