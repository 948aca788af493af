#include "neuronrt/session.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/content_hash.h"
#include "src/internal/executable_encoder.h"
#include "src/internal/session_core.h"

namespace neuronrt {
namespace {

using internal::SessionCore;
using internal::StreamState;
namespace v1 = neuron::rtd::v1;

template <typename T>
std::span<const uint8_t> Bytes(const T& value) {
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&value), sizeof(T));
}

neuron_rtd_location Device(uint64_t address) {
  return neuron_rtd_location{.kind = NEURON_RTD_LOCATION_DEVICE, .memory_id = 0, .address = address};
}

neuron_rtd_location Staging(uint64_t offset) {
  return neuron_rtd_location{.kind = NEURON_RTD_LOCATION_STAGING, .memory_id = 0, .address = offset};
}

// A staging span's detail: what the copy was for and how much it moved.
std::string StagingDetail(std::string_view op_name, uint64_t bytes) {
  return absl::StrFormat("%s: %d bytes", op_name.empty() ? "copy" : op_name, bytes);
}

neuron_rtd_location Pinned(const HostBuffer& host, uint64_t offset) {
  return neuron_rtd_location{
      .kind = NEURON_RTD_LOCATION_HOST_MEMORY, .memory_id = host.id(), .address = offset};
}

absl::Status CheckHostRange(const HostBuffer& host, uint64_t offset, uint64_t bytes) {
  if (offset > host.size() || bytes > host.size() - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "range [%d, +%d) is outside the %d-byte pinned buffer", offset, bytes, host.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ParseCoreList(std::string_view text) {
  std::vector<uint32_t> cores;
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    auto parse = [](absl::string_view number, uint32_t* out) {
      const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), *out);
      return error == std::errc() && end == number.data() + number.size() && !number.empty();
    };
    const size_t dash = part.find('-');
    uint32_t first = 0, last = 0;
    const bool ok = dash == absl::string_view::npos
                        ? parse(part, &first) && (last = first, true)
                        : parse(part.substr(0, dash), &first) && parse(part.substr(dash + 1), &last);
    if (!ok || last < first || last - first > 4096) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "\"%s\" is not a core list such as 0-3 or 0,2-3", std::string(text)));
    }
    for (uint32_t core = first; core <= last; ++core) cores.push_back(core);
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

HostBuffer::HostBuffer(std::shared_ptr<SessionCore> session, uint64_t id, void* data,
                       uint64_t size)
    : session_(std::move(session)), id_(id), data_(data), size_(size) {}

HostBuffer::~HostBuffer() {
  if (session_->closed_by_daemon() || !session_->data_plane().Alive()) return;
  v1::UnregisterHostMemoryRequest request;
  request.set_session_id(session_->id());
  request.set_host_memory_id(id_);
  session_->client()
      .Call(&v1::Runtime::Stub::UnregisterHostMemory, request, "UnregisterHostMemory")
      .IgnoreError();
}

uint64_t Event::stream_id() const { return stream_ ? stream_->id() : 0; }

absl::StatusOr<bool> Event::Query() const {
  if (!stream_) return true;
  return stream_->IsComplete(value_);
}

absl::Status Event::Synchronize() const {
  if (!stream_) return absl::OkStatus();
  return stream_->WaitFor(value_);
}

void Event::WaitSettled() const {
  if (stream_) stream_->WaitSettled(value_);
}

Stream::~Stream() = default;
uint64_t Stream::id() const { return state_->id(); }
uint32_t Stream::core() const { return state_->core(); }

absl::StatusOr<Event> Stream::CopyToDevice(uint64_t device_address, const void* host,
                                           uint64_t bytes, std::string_view op_name) {
  SessionCore& session = state_->session();
  const char* source = static_cast<const char*>(host);
  uint64_t done = 0;
  Event last(state_, state_->last_submitted());
  do {
    absl::StatusOr<internal::StagingChunk> chunk = session.AcquireStaging(bytes - done);
    if (!chunk.ok()) return chunk.status();
    const uint64_t size = std::min(chunk->size, bytes - done);
    const bool spanned = session.profile().RecordsSpans(state_->core());
    const int64_t staged_at = spanned ? MonotonicNowNs() : 0;
    if (size > 0) std::memcpy(chunk->data, source + done, size);
    if (spanned) session.profile().AddSpan("stage_in", StagingDetail(op_name, size), staged_at);
    neuron_rtd_copy_payload copy{.src = Staging(chunk->offset),
                                 .dst = Device(device_address + done),
                                 .bytes = size};
    absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_COPY, Bytes(copy), op_name);
    if (!sequence.ok()) {
      session.ReleaseStaging(*chunk, Event());
      return sequence.status();
    }
    last = Event(state_, *sequence);
    session.ReleaseStaging(*chunk, last);
    done += size;
  } while (done < bytes);
  return last;
}

absl::StatusOr<Event> Stream::CopyToDevice(uint64_t device_address, const HostBuffer& host,
                                           uint64_t offset, uint64_t bytes,
                                           std::string_view op_name) {
  if (absl::Status range = CheckHostRange(host, offset, bytes); !range.ok()) return range;
  neuron_rtd_copy_payload copy{
      .src = Pinned(host, offset), .dst = Device(device_address), .bytes = bytes};
  absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_COPY, Bytes(copy), op_name);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::Status Stream::CopyToHost(void* host, uint64_t device_address, uint64_t bytes,
                                std::string_view op_name) {
  SessionCore& session = state_->session();
  char* destination = static_cast<char*>(host);
  // Two chunks in flight: the daemon fills one while this thread copies the
  // other out.
  struct InFlight {
    internal::StagingChunk chunk;
    Event landed;
    uint64_t offset;
  };
  std::deque<InFlight> in_flight;
  absl::Status status;
  auto finish_oldest = [&] {
    InFlight oldest = std::move(in_flight.front());
    in_flight.pop_front();
    absl::Status landed = oldest.landed.Synchronize();
    // An empty copy may come with a null destination: memcpy must not see it.
    if (landed.ok() && status.ok() && oldest.chunk.size > 0) {
      const bool spanned = session.profile().RecordsSpans(state_->core());
      const int64_t staged_at = spanned ? MonotonicNowNs() : 0;
      std::memcpy(destination + oldest.offset, oldest.chunk.data, oldest.chunk.size);
      if (spanned) {
        session.profile().AddSpan("stage_out", StagingDetail(op_name, oldest.chunk.size),
                                  staged_at);
      }
    }
    session.ReleaseStaging(oldest.chunk, oldest.landed);
    if (status.ok()) status = landed;
  };
  uint64_t done = 0;
  do {
    std::optional<internal::StagingChunk> chunk;
    if (in_flight.empty()) {
      absl::StatusOr<internal::StagingChunk> acquired = session.AcquireStaging(bytes - done);
      if (!acquired.ok()) return acquired.status();
      chunk = *acquired;
    } else {
      // Holding chunks, this thread must not wait for the arena: it could be
      // waiting for itself.
      chunk = session.TryAcquireStaging(bytes - done);
      if (!chunk) {
        finish_oldest();
        if (!status.ok()) break;
        continue;
      }
    }
    chunk->size = std::min(chunk->size, bytes - done);
    neuron_rtd_copy_payload copy{.src = Device(device_address + done),
                                 .dst = Staging(chunk->offset),
                                 .bytes = chunk->size};
    absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_COPY, Bytes(copy), op_name);
    if (!sequence.ok()) {
      session.ReleaseStaging(*chunk, Event());
      status = sequence.status();
      break;
    }
    in_flight.push_back(InFlight{.chunk = *chunk, .landed = Event(state_, *sequence), .offset = done});
    done += chunk->size;
    if (in_flight.size() >= 2) finish_oldest();
  } while (done < bytes && status.ok());
  while (!in_flight.empty()) finish_oldest();
  return status;
}

absl::StatusOr<Event> Stream::CopyToHost(const HostBuffer& host, uint64_t offset,
                                         uint64_t device_address, uint64_t bytes,
                                         std::string_view op_name) {
  if (absl::Status range = CheckHostRange(host, offset, bytes); !range.ok()) return range;
  neuron_rtd_copy_payload copy{
      .src = Device(device_address), .dst = Pinned(host, offset), .bytes = bytes};
  absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_COPY, Bytes(copy), op_name);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::StatusOr<Event> Stream::CopyOnDevice(uint64_t destination, uint64_t source, uint64_t bytes,
                                           std::string_view op_name) {
  neuron_rtd_copy_payload copy{.src = Device(source), .dst = Device(destination), .bytes = bytes};
  absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_COPY, Bytes(copy), op_name);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::StatusOr<Event> Stream::Fill(uint64_t device_address, uint64_t bytes, uint64_t pattern,
                                   uint32_t pattern_bytes, std::string_view op_name) {
  neuron_rtd_fill_payload fill{.device_address = device_address,
                               .bytes = bytes,
                               .pattern = pattern,
                               .pattern_bytes = pattern_bytes,
                               .reserved0 = 0};
  absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_FILL, Bytes(fill), op_name);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::StatusOr<Event> Stream::Collective(uint64_t communicator_handle,
                                         std::span<const neuron_rtd_collective_op> operations,
                                         std::string_view op_name) {
  if (operations.empty() || operations.size() > NEURON_RTD_MAX_COLLECTIVE_OPS) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a collective group holds 1 to %d operations, not %d", NEURON_RTD_MAX_COLLECTIVE_OPS,
        operations.size()));
  }
  neuron_rtd_collective_payload group{.communicator_handle = communicator_handle,
                                      .op_count = static_cast<uint32_t>(operations.size()),
                                      .reserved0 = 0};
  std::vector<uint8_t> payload(sizeof(group) + operations.size_bytes());
  std::memcpy(payload.data(), &group, sizeof(group));
  std::memcpy(payload.data() + sizeof(group), operations.data(), operations.size_bytes());
  absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_COLLECTIVE, payload, op_name);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::StatusOr<Event> Stream::Launch(uint64_t executable_id, std::span<const uint64_t> arguments,
                                     std::span<const uint8_t> scalars, std::string_view op_name) {
  neuron_rtd_launch_payload launch{.executable_id = executable_id,
                                   .arg_count = static_cast<uint32_t>(arguments.size()),
                                   .scalar_bytes = static_cast<uint32_t>(scalars.size())};
  std::vector<uint8_t> payload(sizeof(launch) + arguments.size_bytes() + scalars.size());
  std::memcpy(payload.data(), &launch, sizeof(launch));
  if (!arguments.empty()) {
    std::memcpy(payload.data() + sizeof(launch), arguments.data(), arguments.size_bytes());
  }
  if (!scalars.empty()) {
    std::memcpy(payload.data() + sizeof(launch) + arguments.size_bytes(), scalars.data(),
                scalars.size());
  }
  absl::StatusOr<uint64_t> sequence = state_->Submit(NEURON_RTD_OP_LAUNCH, payload, op_name);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::StatusOr<Event> Stream::Record() { return Event(state_, state_->last_submitted()); }

absl::StatusOr<Event> Stream::RecordTimed() {
  absl::StatusOr<uint64_t> sequence =
      state_->Submit(NEURON_RTD_OP_SIGNAL, {}, "timed_event", internal::kTimingCorrelation);
  if (!sequence.ok()) return sequence.status();
  return Event(state_, *sequence);
}

absl::Status Stream::Wait(const Event& event) {
  if (!event.valid() || event.value() == 0 || event.stream_id() == state_->id()) {
    return absl::OkStatus();
  }
  if (&event.stream_->session() != &state_->session()) {
    return absl::InvalidArgumentError("a stream can only wait on events of its own session");
  }
  neuron_rtd_wait_payload wait{.stream_id = event.stream_id(), .value = event.value()};
  return state_->Submit(NEURON_RTD_OP_WAIT, Bytes(wait), "wait_event").status();
}

absl::Status Stream::Synchronize() { return state_->WaitFor(state_->last_submitted()); }

absl::StatusOr<std::unique_ptr<Session>> Session::Open(const SessionOptions& options) {
  absl::StatusOr<std::shared_ptr<SessionCore>> core = SessionCore::Open(options);
  if (!core.ok()) return core.status();
  return std::unique_ptr<Session>(new Session(*std::move(core)));
}

Session::~Session() = default;
uint64_t Session::id() const { return core_->id(); }
const std::vector<uint32_t>& Session::cores() const { return core_->cores(); }
Client& Session::client() const { return core_->client(); }

absl::StatusOr<DeviceBuffer> Session::Allocate(uint32_t core, uint64_t bytes) {
  v1::AllocateSegmentRequest request;
  request.set_session_id(core_->id());
  request.set_core(core);
  request.set_size_bytes(bytes);
  request.set_category(v1::MEMORY_CATEGORY_TENSORS);
  auto response =
      core_->client().Call(&v1::Runtime::Stub::AllocateSegment, request, "AllocateSegment");
  if (!response.ok()) return core_->SessionError(response.status());
  return DeviceBuffer{.segment_id = response->segment_id(),
                      .device_address = response->device_address(),
                      .size = response->size_bytes(),
                      .core = core};
}

absl::Status Session::Free(const DeviceBuffer& buffer) {
  v1::FreeSegmentRequest request;
  request.set_session_id(core_->id());
  request.set_segment_id(buffer.segment_id);
  return core_->SessionError(
      core_->client().Call(&v1::Runtime::Stub::FreeSegment, request, "FreeSegment").status());
}

absl::StatusOr<std::string> Session::Share(const DeviceBuffer& buffer) {
  v1::ExportSegmentRequest request;
  request.set_session_id(core_->id());
  request.set_segment_id(buffer.segment_id);
  auto response =
      core_->client().Call(&v1::Runtime::Stub::ExportSegment, request, "ExportSegment");
  if (!response.ok()) return core_->SessionError(response.status());
  return std::move(*response->mutable_handle());
}

absl::StatusOr<DeviceBuffer> Session::Import(std::string_view handle) {
  v1::ImportSegmentRequest request;
  request.set_session_id(core_->id());
  request.set_handle(std::string(handle));
  auto response =
      core_->client().Call(&v1::Runtime::Stub::ImportSegment, request, "ImportSegment");
  if (!response.ok()) return core_->SessionError(response.status());
  return DeviceBuffer{.segment_id = response->segment_id(),
                      .device_address = response->device_address(),
                      .size = response->size_bytes(),
                      .core = response->core()};
}

absl::StatusOr<std::vector<uint64_t>> Session::SharedSegmentsInUse(
    const std::vector<uint64_t>& segment_ids) {
  v1::SharedSegmentsInUseRequest request;
  request.set_session_id(core_->id());
  request.mutable_segment_ids()->Add(segment_ids.begin(), segment_ids.end());
  auto response = core_->client().Call(&v1::Runtime::Stub::SharedSegmentsInUse, request,
                                       "SharedSegmentsInUse");
  if (!response.ok()) return core_->SessionError(response.status());
  return std::vector<uint64_t>(response->in_use_segment_ids().begin(),
                               response->in_use_segment_ids().end());
}

absl::Status Session::SetMemoryCap(uint32_t core, std::optional<uint64_t> cap_bytes) {
  v1::SetMemoryCapRequest request;
  request.set_session_id(core_->id());
  request.set_core(core);
  if (cap_bytes.has_value()) request.set_cap_bytes(*cap_bytes);
  return core_->SessionError(
      core_->client().Call(&v1::Runtime::Stub::SetMemoryCap, request, "SetMemoryCap").status());
}

absl::StatusOr<std::shared_ptr<HostBuffer>> Session::AllocateHost(uint64_t bytes) {
  v1::RegisterHostMemoryRequest request;
  request.set_session_id(core_->id());
  request.set_size_bytes(bytes);
  auto response = core_->client().Call(&v1::Runtime::Stub::RegisterHostMemory, request,
                                       "RegisterHostMemory");
  if (!response.ok()) return core_->SessionError(response.status());
  absl::StatusOr<internal::ReceivedRegion> region = core_->data_plane().Receive(
      response->region().region_id(), v1::SHARED_REGION_KIND_HOST_MEMORY);
  if (!region.ok()) return region.status();
  // The mapping lives as long as the buffer: hand it over to a deleter.
  internal::MappedRegion* mapping = region->region.release();
  auto buffer = std::shared_ptr<HostBuffer>(
      new HostBuffer(core_, response->host_memory_id(), mapping->data(), mapping->size()),
      [mapping](HostBuffer* host) {
        delete host;
        delete mapping;
      });
  return buffer;
}

absl::StatusOr<std::shared_ptr<Stream>> Session::CreateStream(uint32_t core, int32_t priority) {
  v1::CreateStreamRequest request;
  request.set_session_id(core_->id());
  request.set_core(core);
  request.set_priority(priority);
  request.set_ring_bytes(core_->ring_bytes());
  auto response =
      core_->client().Call(&v1::Runtime::Stub::CreateStream, request, "CreateStream");
  if (!response.ok()) return core_->SessionError(response.status());
  absl::StatusOr<internal::ReceivedRegion> ring = core_->data_plane().Receive(
      response->ring().region_id(), v1::SHARED_REGION_KIND_COMMAND_RING);
  if (!ring.ok()) return ring.status();
  if (ring->extra_fd < 0) return absl::InternalError("a command ring arrived without a doorbell");
  auto state = std::make_shared<StreamState>(core_, response->stream_id(), core,
                                             std::move(ring->region), ring->extra_fd,
                                             response->completion_slot());
  return std::make_shared<Stream>(std::move(state));
}

absl::StatusOr<uint64_t> Session::LoadExecutable(std::string_view body, std::string_view name,
                                                 ExecutableKind kind) {
  return LoadBody(body, name, kind, nullptr);
}

absl::StatusOr<uint64_t> Session::LoadBody(std::string_view body, std::string_view name,
                                           ExecutableKind kind,
                                           std::vector<NeffTensor>* neff_tensors) {
  v1::ExecutableKind wire_kind = v1::EXECUTABLE_KIND_EAGER_OP;
  switch (kind) {
    case ExecutableKind::kEagerOp:
      break;
    case ExecutableKind::kGraph:
      wire_kind = v1::EXECUTABLE_KIND_GRAPH;
      break;
    case ExecutableKind::kNeff:
      wire_kind = v1::EXECUTABLE_KIND_NEFF;
      break;
    case ExecutableKind::kNki:
      wire_kind = v1::EXECUTABLE_KIND_NKI;
      break;
  }
  auto take_tensors = [neff_tensors](const auto& tensors) {
    if (neff_tensors == nullptr) return;
    for (const v1::NeffTensor& tensor : tensors) {
      neff_tensors->push_back(NeffTensor{
          .name = tensor.name(),
          .input = tensor.input(),
          .size_bytes = tensor.size_bytes(),
          .shape = {tensor.shape().begin(), tensor.shape().end()},
          .dtype = tensor.has_dtype() ? std::optional<int32_t>(tensor.dtype()) : std::nullopt});
    }
  };
  const std::string hash = neuron::rtd::ContentHash(body);
  {
    v1::LookupExecutableRequest request;
    request.set_session_id(core_->id());
    request.set_kind(wire_kind);
    request.set_content_hash(hash);
    auto found = core_->client().Call(&v1::Runtime::Stub::LookupExecutable, request,
                                      "LookupExecutable");
    if (!found.ok()) return core_->SessionError(found.status());
    if (found->found()) {
      take_tensors(found->neff_tensors());
      return found->executable_id();
    }
  }
  constexpr size_t kChunkBytes = 1 << 20;
  grpc::ClientContext context;
  core_->client().PrepareContext(context);
  v1::LoadExecutableResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::LoadExecutableChunk>> writer =
      core_->client().runtime().LoadExecutable(&context, &response);
  v1::LoadExecutableChunk chunk;
  v1::LoadExecutableChunk::Header* header = chunk.mutable_header();
  header->set_session_id(core_->id());
  header->set_kind(wire_kind);
  header->set_content_hash(hash);
  header->set_total_bytes(body.size());
  header->set_name(std::string(name));
  size_t sent = 0;
  do {
    const size_t size = std::min(kChunkBytes, body.size() - sent);
    chunk.set_data(std::string(body.substr(sent, size)));
    if (!writer->Write(chunk)) break;
    chunk.clear_header();
    sent += size;
  } while (sent < body.size());
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) {
    return core_->SessionError(
        internal::FromGrpc(status, core_->client().address(), "LoadExecutable"));
  }
  take_tensors(response.neff_tensors());
  return response.executable_id();
}

absl::StatusOr<Session::LoadedNeff> Session::LoadNeff(std::string_view neff,
                                                      std::string_view name) {
  LoadedNeff loaded;
  absl::StatusOr<uint64_t> id = LoadBody(neff, name, ExecutableKind::kNeff, &loaded.tensors);
  if (!id.ok()) return id.status();
  loaded.executable_id = *id;
  return loaded;
}

absl::StatusOr<uint64_t> Session::LoadEagerOp(const neuron::rtd::EagerOpPlan& plan,
                                              std::string_view name) {
  return LoadExecutable(internal::EncodeEagerOp(plan), name);
}

absl::StatusOr<uint64_t> Session::LoadGraph(const neuron::rtd::GraphPlan& plan,
                                            std::string_view name) {
  return LoadExecutable(internal::EncodeGraph(plan), name, ExecutableKind::kGraph);
}

absl::StatusOr<uint64_t> Session::LoadNkiKernel(const neuron::rtd::NkiKernelPlan& plan,
                                                std::string_view name) {
  return LoadExecutable(internal::EncodeNkiKernel(plan), name, ExecutableKind::kNki);
}

absl::Status Session::UnloadExecutable(uint64_t executable_id) {
  v1::UnloadExecutableRequest request;
  request.set_session_id(core_->id());
  request.set_executable_id(executable_id);
  return core_->client()
      .Call(&v1::Runtime::Stub::UnloadExecutable, request, "UnloadExecutable")
      .status();
}

absl::StatusOr<std::string> Session::CreateCommunicatorId() {
  v1::CreateCommunicatorIdRequest request;
  request.set_session_id(core_->id());
  absl::StatusOr<v1::CreateCommunicatorIdResponse> response = core_->client().Call(
      &v1::Runtime::Stub::CreateCommunicatorId, request, "CreateCommunicatorId");
  if (!response.ok()) return core_->SessionError(response.status());
  return response->communicator_id();
}

absl::StatusOr<Session::Communicator> Session::InitCommunicator(
    std::string_view id, uint32_t rank, uint32_t world_size, absl::Duration join_timeout,
    absl::Duration operation_timeout, const CommunicatorHosts* hosts) {
  v1::InitCommunicatorRequest request;
  request.set_session_id(core_->id());
  request.set_communicator_id(std::string(id));
  request.set_rank(rank);
  request.set_world_size(world_size);
  request.set_timeout_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(join_timeout)));
  request.set_operation_timeout_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(operation_timeout)));
  if (hosts != nullptr) {
    v1::CommunicatorHosts* given = request.mutable_hosts();
    given->set_host(hosts->host);
    given->set_group_key(hosts->group_key);
    for (size_t i = 0; i < hosts->fabric_addresses.size(); ++i) {
      v1::CommunicatorHosts::Host* host = given->add_hosts();
      host->set_fabric_address(hosts->fabric_addresses[i]);
      if (i < hosts->ranks.size()) {
        host->mutable_ranks()->Add(hosts->ranks[i].begin(), hosts->ranks[i].end());
      }
    }
  }
  // The daemon answers by the join timeout; the margin covers the call.
  absl::StatusOr<v1::InitCommunicatorResponse> response = core_->client().CallFor(
      join_timeout + absl::Seconds(10), &v1::Runtime::Stub::InitCommunicator, request,
      "InitCommunicator");
  if (!response.ok()) return core_->SessionError(response.status());
  return Communicator{.handle = response->communicator_handle(), .name = response->name()};
}

absl::Status Session::DestroyCommunicator(uint64_t handle) {
  v1::DestroyCommunicatorRequest request;
  request.set_session_id(core_->id());
  request.set_communicator_handle(handle);
  return core_->client()
      .Call(&v1::Runtime::Stub::DestroyCommunicator, request, "DestroyCommunicator")
      .status();
}

absl::Status Session::Close() { return core_->MarkClosed(); }

}  // namespace neuronrt
