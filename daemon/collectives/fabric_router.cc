#include "daemon/collectives/fabric_router.h"

#include <cstring>
#include <utility>
#include <vector>

namespace neuron::rtd::collectives {

absl::StatusOr<std::unique_ptr<FabricRouter>> FabricRouter::Open(
    const fabric::FabricOptions& options) {
  std::unique_ptr<FabricRouter> router(new FabricRouter());
  FabricRouter* self = router.get();
  absl::StatusOr<std::unique_ptr<fabric::Transport>> transport = fabric::OpenLibfabricTransport(
      options, {.on_message = [self](std::span<const uint8_t> message) { self->Route(message); },
                .on_send_failed = [self](fabric::PeerId peer,
                                         const absl::Status& why) { self->OnSendFailed(peer, why); }});
  if (!transport.ok()) return transport.status();
  router->transport_ = *std::move(transport);
  return router;
}

// The transport (and its progress thread) goes first: no message arrives
// into a router being destroyed.
FabricRouter::~FabricRouter() { transport_.reset(); }

absl::Status FabricRouter::Register(const std::string& key,
                                    std::weak_ptr<FabricReceiver> receiver) {
  std::vector<neuron_rtd_fabric_header> hellos;
  std::shared_ptr<FabricReceiver> live = receiver.lock();
  {
    absl::MutexLock lock(&mutex_);
    if (auto it = receivers_.find(key); it != receivers_.end() && !it->second.expired()) {
      return absl::AlreadyExistsError(
          "another communicator of this daemon has the same group key");
    }
    receivers_[key] = std::move(receiver);
    for (auto it = early_hellos_.begin(); it != early_hellos_.end();) {
      if (it->key == key) {
        hellos.push_back(it->header);
        it = early_hellos_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (live != nullptr) {
    for (const neuron_rtd_fabric_header& hello : hellos) live->Receive(hello, {});
  }
  return absl::OkStatus();
}

void FabricRouter::Unregister(const std::string& key) {
  absl::MutexLock lock(&mutex_);
  receivers_.erase(key);
}

uint64_t FabricRouter::dropped() const {
  absl::MutexLock lock(&mutex_);
  return dropped_;
}

void FabricRouter::Route(std::span<const uint8_t> message) {
  neuron_rtd_fabric_header header;
  if (message.size() < sizeof(header)) {
    absl::MutexLock lock(&mutex_);
    ++dropped_;
    return;
  }
  std::memcpy(&header, message.data(), sizeof(header));
  if (header.magic != NEURON_RTD_FABRIC_MAGIC || header.version != NEURON_RTD_FABRIC_VERSION ||
      header.bytes != message.size() - sizeof(header)) {
    absl::MutexLock lock(&mutex_);
    ++dropped_;
    return;
  }
  const std::string key(reinterpret_cast<const char*>(header.group_key), sizeof(header.group_key));
  std::shared_ptr<FabricReceiver> receiver;
  {
    absl::MutexLock lock(&mutex_);
    if (auto it = receivers_.find(key); it != receivers_.end()) {
      receiver = it->second.lock();
      if (receiver == nullptr) receivers_.erase(it);
    }
    if (receiver == nullptr) {
      if (header.type == NEURON_RTD_FABRIC_HELLO) {
        if (early_hellos_.size() == kMaxEarlyHellos) early_hellos_.pop_front();
        early_hellos_.push_back({key, header});
      } else {
        ++dropped_;
      }
      return;
    }
  }
  receiver->Receive(header, message.subspan(sizeof(header)));
}

void FabricRouter::OnSendFailed(fabric::PeerId peer, const absl::Status& why) {
  std::vector<std::shared_ptr<FabricReceiver>> live;
  {
    absl::MutexLock lock(&mutex_);
    for (auto& [key, weak] : receivers_) {
      if (auto receiver = weak.lock()) live.push_back(std::move(receiver));
    }
  }
  for (const auto& receiver : live) receiver->PeerFailed(peer, why);
}

}  // namespace neuron::rtd::collectives
