#include "daemon/fabric/libfabric_transport.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include "daemon/fabric/libfabric_library.h"

namespace neuron::rtd::fabric {
namespace {

// The oldest libfabric API whose objects and flags this file uses.
constexpr uint32_t kApiVersion = FI_VERSION(1, 9);
// How long the progress thread blocks in the completion queue before it
// looks whether it should stop.
constexpr int kProgressWaitMs = 100;

// A registered message buffer. The context comes first: libfabric hands it
// back in completions, and providers that ask for FI_CONTEXT(2) use it.
struct Buffer {
  fi_context2 context{};
  uint8_t* data = nullptr;
  void* descriptor = nullptr;
  bool sends = false;
  PeerId peer = 0;
  // A send in place: told when it finishes.
  std::shared_ptr<SendTracker> tracker;
};

class LibfabricTransport final : public Transport {
 public:
  LibfabricTransport(std::unique_ptr<LibfabricLibrary> library, TransportHandlers handlers)
      : library_(std::move(library)), handlers_(std::move(handlers)) {}
  ~LibfabricTransport() override;

  absl::Status Start(const FabricOptions& options);

  const std::string& address() const override { return address_; }
  const std::string& description() const override { return description_; }
  size_t max_message_bytes() const override { return message_bytes_; }
  absl::StatusOr<PeerId> AddPeer(std::string_view address) override;
  absl::Status Send(PeerId peer, std::span<const uint8_t> header, std::span<const uint8_t> payload,
                    absl::Time deadline) override;
  absl::Status SendInPlace(PeerId peer, std::span<const uint8_t> header,
                           std::span<const uint8_t> payload, absl::Time deadline,
                           std::shared_ptr<SendTracker> tracker) override;

 private:
  absl::Status Error(std::string_view what, int code) const {
    return absl::UnavailableError(
        absl::StrFormat("libfabric %s: %s (%d)", what, library_->strerror(-code), code));
  }
  absl::Status PostReceive(Buffer& buffer);
  absl::Status CheckLength(size_t bytes) const;
  absl::StatusOr<Buffer*> AcquireSendBuffer(absl::Time deadline);
  // Posts the send of `buffer`'s first `copied` bytes, then `in_place`
  // (when not empty), retrying while the provider is busy.
  absl::Status Post(Buffer* buffer, size_t copied, std::span<const uint8_t> in_place, PeerId peer,
                    absl::Time deadline);
  void Progress();
  void Complete(const fi_cq_msg_entry& entry);
  void CompleteWithError();
  void ReleaseSendBuffer(Buffer* buffer, const absl::Status& status);

  const std::unique_ptr<LibfabricLibrary> library_;
  const TransportHandlers handlers_;

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* endpoint_ = nullptr;
  fid_mr* region_key_ = nullptr;
  bool cq_waits_ = true;
  // Whether sends may read the caller's memory (two-element iovecs, no
  // registration needed).
  bool sends_in_place_ = false;

  std::unique_ptr<uint8_t[]> region_;
  std::vector<Buffer> buffers_;
  size_t message_bytes_ = 0;
  std::string address_;
  std::string description_;

  absl::Mutex send_mutex_;
  std::vector<Buffer*> free_send_buffers_ ABSL_GUARDED_BY(send_mutex_);

  absl::Mutex peers_mutex_;
  std::map<std::string, PeerId, std::less<>> peers_ ABSL_GUARDED_BY(peers_mutex_);

  std::atomic<bool> stopping_{false};
  std::thread progress_;
};

LibfabricTransport::~LibfabricTransport() {
  stopping_.store(true);
  if (cq_ != nullptr && cq_waits_) fi_cq_signal(cq_);
  if (progress_.joinable()) progress_.join();
  // Closing the endpoint cancels the posted receives; the memory goes after.
  if (endpoint_ != nullptr) fi_close(&endpoint_->fid);
  if (av_ != nullptr) fi_close(&av_->fid);
  if (cq_ != nullptr) fi_close(&cq_->fid);
  if (region_key_ != nullptr) fi_close(&region_key_->fid);
  if (domain_ != nullptr) fi_close(&domain_->fid);
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  if (info_ != nullptr) library_->freeinfo(info_);
}

absl::Status LibfabricTransport::Start(const FabricOptions& options) {
  if (options.send_buffers == 0 || options.receive_buffers == 0) {
    return absl::InvalidArgumentError("the fabric needs at least one send and one receive buffer");
  }
  fi_info* hints = library_->dupinfo(nullptr);
  if (hints == nullptr) return absl::ResourceExhaustedError("libfabric could not allocate hints");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  // The registration modes this file honours (it does no RMA, so the keys
  // and addresses of remote access never matter).
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = ::strdup(options.provider.c_str());
  if (!options.interface.empty()) hints->domain_attr->name = ::strdup(options.interface.c_str());
  const int found = library_->getinfo(kApiVersion, nullptr, nullptr, 0, hints, &info_);
  library_->freeinfo(hints);
  if (found != 0 || info_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "libfabric has no reliable-datagram endpoint of provider \"%s\"%s: %s (fi_info -p '%s' "
        "-t FI_EP_RDM lists what it has)",
        options.provider,
        options.interface.empty() ? "" : absl::StrFormat(" on \"%s\"", options.interface),
        library_->strerror(-found), options.provider));
  }
  description_ = absl::StrFormat("%s on %s", info_->fabric_attr->prov_name,
                                 info_->domain_attr->name != nullptr ? info_->domain_attr->name
                                                                     : "?");
  if (int rc = library_->open_fabric(info_->fabric_attr, &fabric_, nullptr); rc != 0) {
    return Error("fi_fabric", rc);
  }
  if (int rc = fi_domain(fabric_, info_, &domain_, nullptr); rc != 0) return Error("fi_domain", rc);
  fi_cq_attr cq_attributes{};
  cq_attributes.format = FI_CQ_FORMAT_MSG;
  cq_attributes.size = options.send_buffers + options.receive_buffers;
  cq_attributes.wait_obj = FI_WAIT_UNSPEC;
  if (fi_cq_open(domain_, &cq_attributes, &cq_, nullptr) != 0) {
    // Providers without wait objects: the progress thread polls.
    cq_waits_ = false;
    cq_attributes.wait_obj = FI_WAIT_NONE;
    if (int rc = fi_cq_open(domain_, &cq_attributes, &cq_, nullptr); rc != 0) {
      return Error("fi_cq_open", rc);
    }
  }
  fi_av_attr av_attributes{};
  av_attributes.type = FI_AV_UNSPEC;
  if (int rc = fi_av_open(domain_, &av_attributes, &av_, nullptr); rc != 0) {
    return Error("fi_av_open", rc);
  }
  if (int rc = fi_endpoint(domain_, info_, &endpoint_, nullptr); rc != 0) {
    return Error("fi_endpoint", rc);
  }
  if (int rc = fi_ep_bind(endpoint_, &av_->fid, 0); rc != 0) return Error("fi_ep_bind(av)", rc);
  if (int rc = fi_ep_bind(endpoint_, &cq_->fid, FI_TRANSMIT | FI_RECV); rc != 0) {
    return Error("fi_ep_bind(cq)", rc);
  }
  if (int rc = fi_enable(endpoint_); rc != 0) return Error("fi_enable", rc);
  std::string name(256, '\0');
  size_t name_bytes = name.size();
  if (int rc = fi_getname(&endpoint_->fid, name.data(), &name_bytes); rc != 0) {
    return Error("fi_getname", rc);
  }
  name.resize(name_bytes);
  address_ = std::move(name);

  message_bytes_ = std::min<size_t>(kFabricMessageBytes, info_->ep_attr->max_msg_size);
  sends_in_place_ = (info_->domain_attr->mr_mode & FI_MR_LOCAL) == 0 &&
                    info_->tx_attr != nullptr && info_->tx_attr->iov_limit >= 2;
  const size_t count = size_t{options.send_buffers} + options.receive_buffers;
  region_ = std::make_unique<uint8_t[]>(count * message_bytes_);
  void* descriptor = nullptr;
  if ((info_->domain_attr->mr_mode & FI_MR_LOCAL) != 0) {
    if (int rc = fi_mr_reg(domain_, region_.get(), count * message_bytes_, FI_SEND | FI_RECV, 0, 0,
                           0, &region_key_, nullptr);
        rc != 0) {
      return Error("fi_mr_reg", rc);
    }
    descriptor = fi_mr_desc(region_key_);
  }
  buffers_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    buffers_[i].data = region_.get() + i * message_bytes_;
    buffers_[i].descriptor = descriptor;
    buffers_[i].sends = i < options.send_buffers;
  }
  {
    absl::MutexLock lock(&send_mutex_);
    for (size_t i = 0; i < options.send_buffers; ++i) free_send_buffers_.push_back(&buffers_[i]);
  }
  for (size_t i = options.send_buffers; i < count; ++i) {
    if (absl::Status posted = PostReceive(buffers_[i]); !posted.ok()) return posted;
  }
  progress_ = std::thread([this] { Progress(); });
  return absl::OkStatus();
}

absl::Status LibfabricTransport::PostReceive(Buffer& buffer) {
  for (;;) {
    const ssize_t rc = fi_recv(endpoint_, buffer.data, message_bytes_, buffer.descriptor,
                               FI_ADDR_UNSPEC, &buffer.context);
    if (rc == 0) return absl::OkStatus();
    if (rc != -FI_EAGAIN) return Error("fi_recv", static_cast<int>(rc));
    if (stopping_.load()) return absl::CancelledError("the fabric is stopping");
    // The provider's receive queue is full: it frees up as it progresses.
    std::this_thread::yield();
  }
}

absl::StatusOr<PeerId> LibfabricTransport::AddPeer(std::string_view address) {
  absl::MutexLock lock(&peers_mutex_);
  if (auto it = peers_.find(address); it != peers_.end()) return it->second;
  if (address.empty() || address.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a fabric address of %d bytes is not one", address.size()));
  }
  fi_addr_t peer = FI_ADDR_NOTAVAIL;
  const int inserted = fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr);
  if (inserted != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the fabric address of a peer (%d bytes) is not one of %s: %s", address.size(),
        description_, inserted < 0 ? library_->strerror(-inserted) : "rejected"));
  }
  peers_.emplace(std::string(address), peer);
  return peer;
}

absl::Status LibfabricTransport::CheckLength(size_t bytes) const {
  if (bytes <= message_bytes_) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("a fabric message of %d bytes exceeds the longest, %d", bytes, message_bytes_));
}

absl::StatusOr<Buffer*> LibfabricTransport::AcquireSendBuffer(absl::Time deadline) {
  absl::MutexLock lock(&send_mutex_);
  auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(send_mutex_) {
    return !free_send_buffers_.empty();
  };
  if (!send_mutex_.AwaitWithDeadline(absl::Condition(&available), deadline)) {
    return absl::DeadlineExceededError(
        "every fabric send buffer stayed in flight until the deadline (the peers do not "
        "receive)");
  }
  Buffer* buffer = free_send_buffers_.back();
  free_send_buffers_.pop_back();
  return buffer;
}

absl::Status LibfabricTransport::Send(PeerId peer, std::span<const uint8_t> header,
                                      std::span<const uint8_t> payload, absl::Time deadline) {
  const size_t bytes = header.size() + payload.size();
  if (absl::Status fits = CheckLength(bytes); !fits.ok()) return fits;
  absl::StatusOr<Buffer*> buffer = AcquireSendBuffer(deadline);
  if (!buffer.ok()) return buffer.status();
  std::memcpy((*buffer)->data, header.data(), header.size());
  if (!payload.empty()) std::memcpy((*buffer)->data + header.size(), payload.data(), payload.size());
  return Post(*buffer, bytes, {}, peer, deadline);
}

absl::Status LibfabricTransport::SendInPlace(PeerId peer, std::span<const uint8_t> header,
                                             std::span<const uint8_t> payload,
                                             absl::Time deadline,
                                             std::shared_ptr<SendTracker> tracker) {
  if (!sends_in_place_ || payload.empty()) return Send(peer, header, payload, deadline);
  const size_t bytes = header.size() + payload.size();
  if (absl::Status fits = CheckLength(bytes); !fits.ok()) return fits;
  absl::StatusOr<Buffer*> buffer = AcquireSendBuffer(deadline);
  if (!buffer.ok()) return buffer.status();
  std::memcpy((*buffer)->data, header.data(), header.size());
  tracker->Started();
  (*buffer)->tracker = std::move(tracker);
  return Post(*buffer, header.size(), payload, peer, deadline);
}

absl::Status LibfabricTransport::Post(Buffer* buffer, size_t copied,
                                      std::span<const uint8_t> in_place, PeerId peer,
                                      absl::Time deadline) {
  buffer->peer = peer;
  iovec parts[2] = {{buffer->data, copied},
                    {const_cast<uint8_t*>(in_place.data()), in_place.size()}};
  void* descriptors[2] = {buffer->descriptor, nullptr};
  // The provider answers FI_EAGAIN while its queue is full and, for tcp,
  // while it (re)connects to the peer: keep trying until the deadline,
  // backing off so an unreachable peer does not take a core.
  for (int attempt = 0;; ++attempt) {
    const ssize_t rc =
        in_place.empty()
            ? fi_send(endpoint_, buffer->data, copied, buffer->descriptor,
                      static_cast<fi_addr_t>(peer), &buffer->context)
            : fi_sendv(endpoint_, parts, descriptors, 2, static_cast<fi_addr_t>(peer),
                       &buffer->context);
    if (rc == 0) return absl::OkStatus();
    if (rc != -FI_EAGAIN || absl::Now() > deadline || stopping_.load()) {
      const absl::Status failed =
          rc == -FI_EAGAIN ? absl::DeadlineExceededError("the fabric stayed busy until the deadline")
                           : Error("fi_send", static_cast<int>(rc));
      ReleaseSendBuffer(buffer, failed);
      return failed;
    }
    if (attempt < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min(attempt, 1000)));
    }
  }
}

void LibfabricTransport::ReleaseSendBuffer(Buffer* buffer, const absl::Status& status) {
  std::shared_ptr<SendTracker> tracker = std::move(buffer->tracker);
  {
    absl::MutexLock lock(&send_mutex_);
    free_send_buffers_.push_back(buffer);
  }
  if (tracker != nullptr) tracker->Finished(status);
}

void LibfabricTransport::Complete(const fi_cq_msg_entry& entry) {
  auto* buffer = static_cast<Buffer*>(entry.op_context);
  if (buffer == nullptr) return;
  if (buffer->sends) {
    ReleaseSendBuffer(buffer, absl::OkStatus());
    return;
  }
  if (handlers_.on_message) handlers_.on_message({buffer->data, entry.len});
  if (absl::Status posted = PostReceive(*buffer); !posted.ok() && !stopping_.load()) {
    spdlog::error("fabric: a receive buffer could not be posted again: {}", posted.ToString());
  }
}

void LibfabricTransport::CompleteWithError() {
  fi_cq_err_entry error{};
  if (fi_cq_readerr(cq_, &error, 0) <= 0) return;
  auto* buffer = static_cast<Buffer*>(error.op_context);
  if (buffer == nullptr) return;
  const std::string why = absl::StrFormat(
      "%s (%s)", library_->strerror(error.err),
      fi_cq_strerror(cq_, error.prov_errno, error.err_data, nullptr, 0));
  if (buffer->sends) {
    const PeerId peer = buffer->peer;
    const absl::Status failed = absl::UnavailableError("fabric send failed: " + why);
    ReleaseSendBuffer(buffer, failed);
    if (handlers_.on_send_failed) handlers_.on_send_failed(peer, failed);
    return;
  }
  if (error.err == FI_ECANCELED || stopping_.load()) return;
  // A message longer than the buffers (a peer of another build) or a
  // transport error: the buffer goes back to receiving.
  spdlog::warn("fabric: a receive failed: {}", why);
  if (absl::Status posted = PostReceive(*buffer); !posted.ok()) {
    spdlog::error("fabric: a receive buffer could not be posted again: {}", posted.ToString());
  }
}

void LibfabricTransport::Progress() {
  fi_cq_msg_entry entries[16];
  int idle_polls = 0;
  while (!stopping_.load()) {
    const ssize_t count = cq_waits_ ? fi_cq_sread(cq_, entries, 16, nullptr, kProgressWaitMs)
                                    : fi_cq_read(cq_, entries, 16);
    if (count > 0) {
      idle_polls = 0;
      for (ssize_t i = 0; i < count; ++i) Complete(entries[i]);
    } else if (count == -FI_EAVAIL) {
      CompleteWithError();
    } else if (count == -FI_EAGAIN || count == 0) {
      // Without a wait object, back off while idle (up to a millisecond).
      if (!cq_waits_ && ++idle_polls > 64) {
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(idle_polls, 1000)));
      }
    } else {
      spdlog::error("fabric: reading the completion queue failed: {}",
                       library_->strerror(static_cast<int>(-count)));
      std::this_thread::sleep_for(std::chrono::milliseconds(kProgressWaitMs));
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> OpenLibfabricTransport(const FabricOptions& options,
                                                                  TransportHandlers handlers) {
  if (options.provider.empty()) {
    return absl::InvalidArgumentError("no fabric provider is configured ([fabric] provider)");
  }
  absl::StatusOr<std::unique_ptr<LibfabricLibrary>> library =
      LibfabricLibrary::Open(options.library);
  if (!library.ok()) return library.status();
  auto transport = std::make_unique<LibfabricTransport>(*std::move(library), std::move(handlers));
  if (absl::Status started = transport->Start(options); !started.ok()) return started;
  return transport;
}

}  // namespace neuron::rtd::fabric
