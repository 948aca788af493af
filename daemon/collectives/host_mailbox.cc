#include "daemon/collectives/host_mailbox.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace neuron::rtd::collectives {

MailKey KeyOf(const neuron_rtd_fabric_header& header) {
  MailKey key{.type = header.type, .source_host = header.source_host};
  if (header.type == NEURON_RTD_FABRIC_DATA) {
    key.phase = header.phase;
    key.index = header.index;
    key.step = header.step;
    if (header.phase == NEURON_RTD_FABRIC_PHASE_POINT_TO_POINT) {
      key.source_rank = header.source_rank;
      key.dest_rank = header.dest_rank;
    }
  }
  return key;
}

absl::Status HostMailbox::Deliver(const neuron_rtd_fabric_header& header,
                                  std::span<const uint8_t> payload) {
  const MailKey key = KeyOf(header);
  std::function<void(const absl::Status&)> done;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return aborted_;
    if (auto claim = claims_.find(key); claim != claims_.end()) {
      if (claim->second.take(header, payload)) {
        done = std::move(claim->second.done);
        claims_.erase(claim);
      }
    } else {
      if (queued_bytes_ + payload.size() > max_queued_bytes_) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "more than %d bytes from other hosts wait for operations this host has not issued",
            max_queued_bytes_));
      }
      Mail mail{.header = header};
      if (!recycled_.empty()) {
        mail.payload = std::move(recycled_.back());
        recycled_.pop_back();
      }
      mail.payload.assign(payload.begin(), payload.end());
      queued_bytes_ += payload.size();
      queued_[key].push_back(std::move(mail));
    }
  }
  if (done) done(absl::OkStatus());
  return absl::OkStatus();
}

absl::StatusOr<Mail> HostMailbox::Take(const MailKey& key, absl::Time deadline) {
  absl::MutexLock lock(&mutex_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return !aborted_.ok() || queued_.contains(key);
  };
  mutex_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!aborted_.ok()) return aborted_;
  auto it = queued_.find(key);
  if (it == queued_.end()) return absl::DeadlineExceededError("no message came in time");
  Mail mail = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) queued_.erase(it);
  queued_bytes_ -= mail.payload.size();
  return mail;
}

void HostMailbox::AddClaim(const MailKey& key, Claim claim) {
  absl::Status status;
  {
    absl::MutexLock lock(&mutex_);
    status = aborted_;
    if (status.ok()) {
      bool satisfied = false;
      if (auto it = queued_.find(key); it != queued_.end()) {
        while (!it->second.empty() && !satisfied) {
          Mail mail = std::move(it->second.front());
          it->second.pop_front();
          queued_bytes_ -= mail.payload.size();
          satisfied = claim.take(mail.header, mail.payload);
          RecycleLocked(std::move(mail.payload));
        }
        if (it->second.empty()) queued_.erase(it);
      }
      if (!satisfied) {
        if (claims_.try_emplace(key, std::move(claim)).second) return;
        status = absl::InvalidArgumentError("two operations wait for the same messages");
      }
    }
  }
  claim.done(status);
}

bool HostMailbox::RemoveClaim(const MailKey& key) {
  absl::MutexLock lock(&mutex_);
  return claims_.erase(key) > 0;
}

void HostMailbox::Abort(absl::Status status) {
  std::vector<Claim> failed;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return;
    aborted_ = status;
    queued_.clear();
    queued_bytes_ = 0;
    for (auto& [key, claim] : claims_) failed.push_back(std::move(claim));
    claims_.clear();
  }
  for (Claim& claim : failed) claim.done(status);
}

void HostMailbox::RecycleLocked(std::vector<uint8_t> payload) {
  if (recycled_.size() >= kMaxRecycled || payload.capacity() == 0) return;
  payload.clear();
  recycled_.push_back(std::move(payload));
}

uint64_t HostMailbox::queued_bytes() const {
  absl::MutexLock lock(&mutex_);
  return queued_bytes_;
}

}  // namespace neuron::rtd::collectives
