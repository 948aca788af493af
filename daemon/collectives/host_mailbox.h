// The messages other hosts' daemons sent one communicator, until the
// collective or receive they belong to takes them. Messages are matched by
// key (which step of which operation, from which host) and may arrive in
// any order and before anyone waits for them; the bytes queued are
// bounded.
//
// Thread-safety: every method may be called from any thread. A claim's
// `take` runs under the mailbox's lock (it must only copy bytes); its
// `done` runs outside it.
// Lifetime: owned by its communicator; abort it before destroying it.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_HOST_MAILBOX_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_HOST_MAILBOX_H_

#include <compare>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "neuron/rtd/abi/fabric_message.h"

namespace neuron::rtd::collectives {

struct MailKey {
  uint32_t type = 0;   // enum neuron_rtd_fabric_type
  uint32_t phase = 0;  // enum neuron_rtd_fabric_phase (DATA)
  uint64_t index = 0;
  uint32_t step = 0;   // the algorithm's step within the phase (DATA)
  uint32_t source_host = 0;
  uint32_t source_rank = 0;  // POINT_TO_POINT
  uint32_t dest_rank = 0;    // POINT_TO_POINT
  auto operator<=>(const MailKey&) const = default;
};

MailKey KeyOf(const neuron_rtd_fabric_header& header);

struct Mail {
  neuron_rtd_fabric_header header{};
  std::vector<uint8_t> payload;
};

class HostMailbox {
 public:
  explicit HostMailbox(uint64_t max_queued_bytes) : max_queued_bytes_(max_queued_bytes) {}
  HostMailbox(const HostMailbox&) = delete;
  HostMailbox& operator=(const HostMailbox&) = delete;

  // Hands a message to the claim of its key (no copy), or queues a copy.
  // RESOURCE_EXHAUSTED (dropped) when the queue would exceed its bound; the
  // aborted status once aborted.
  absl::Status Deliver(const neuron_rtd_fabric_header& header, std::span<const uint8_t> payload);

  // The next mail of `key`: waits until it comes, the deadline passes
  // (DEADLINE_EXCEEDED) or the mailbox is aborted (its status).
  absl::StatusOr<Mail> Take(const MailKey& key, absl::Time deadline);

  // Mail of `key`, queued or to come, goes to `take` until it returns true;
  // then `done` runs with OK. If the mailbox is aborted first, `done` runs
  // with the abort's status (at once when it already was).
  struct Claim {
    std::function<bool(const neuron_rtd_fabric_header& header, std::span<const uint8_t> payload)>
        take;
    std::function<void(const absl::Status& status)> done;
  };
  void AddClaim(const MailKey& key, Claim claim);
  // Withdraws the claim of `key`: true when it was still waiting (neither
  // take nor done will run again); false when it has finished or is
  // finishing (done runs or has run).
  bool RemoveClaim(const MailKey& key);

  // Fails every claim and waiter with `status` and drops what is queued;
  // later mail is refused.
  void Abort(absl::Status status);

  uint64_t queued_bytes() const;

  // Payload buffers of queued mail kept for reuse once claimed (their
  // pages are mapped already: fresh ones cost more than the copy).
  static constexpr size_t kMaxRecycled = 64;

 private:
  void RecycleLocked(std::vector<uint8_t> payload) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const uint64_t max_queued_bytes_;
  mutable absl::Mutex mutex_;
  absl::Status aborted_ ABSL_GUARDED_BY(mutex_);
  std::map<MailKey, std::deque<Mail>> queued_ ABSL_GUARDED_BY(mutex_);
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  std::map<MailKey, Claim> claims_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::vector<uint8_t>> recycled_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_HOST_MAILBOX_H_
