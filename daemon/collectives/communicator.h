// A communicator: the ranks of one process group on this host, which the
// daemon matches operation by operation and serves directly in HBM (no copy
// passes through a client).
//
// Each rank posts its COLLECTIVE records' groups of operations in its own
// stream order. Collectives match across ranks by the order each rank issues
// them; sends and receives match per (sender, receiver) pair, the k-th send
// with the k-th receive. When the last rank of a collective arrives (or the
// second side of a send/receive), the thread that posted it moves the data
// (communicator_move.cc) and completes every participant's group.
//
// Across hosts (a HostTopology): this daemon holds the ranks of its host;
// once they have all arrived at a collective, the communicator's exchange
// thread runs the collective's steps between the hosts' daemons over the
// fabric (communicator_cross_host.cc, communicator_exchange.cc,
// communicator_all_reduce.cc),
// collectives one at a time in their issue order; sends to and receives from other hosts' ranks move through
// the fabric as they come.
//
// Thread-safety: every method may be called from any thread.
// Lifetime: shared by the sessions whose ranks joined it (and, while the
// rendezvous lasts, by the registry); the buffers a pending operation names
// stay allocated through its RankBuffer's segment until it completes. The
// destructor stops the exchange thread.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_COMMUNICATOR_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_COMMUNICATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/collectives/collective_counters.h"
#include "daemon/collectives/fabric_router.h"
#include "daemon/collectives/host_mailbox.h"
#include "daemon/collectives/host_topology.h"
#include "daemon/collectives/group_completion.h"
#include "daemon/collectives/host_algorithm.h"
#include "daemon/hal/device.h"
#include "daemon/memory/segment.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::collectives {

// Device memory of one rank, checked against that rank's session.
struct RankBuffer {
  memory::SegmentRef segment;
  hal::Device* device = nullptr;
  uint64_t address = 0;
};

// One operation of a rank's group. `send` and `recv` are set where the
// operation reads or writes the rank's memory (OperationExtents).
struct RankOp {
  neuron_rtd_collective_op op{};
  RankBuffer send;
  RankBuffer recv;
};

// The bytes an operation reads from `send_address` and writes at
// `recv_address` for `rank` of a communicator of `size` ranks (0: the
// buffer is not used). INVALID_ARGUMENT when the root or peer is not a rank.
struct OperationExtents {
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
};
absl::StatusOr<OperationExtents> ExtentsOf(const neuron_rtd_collective_op& op, uint32_t rank,
                                           uint32_t size);

std::string_view CollectiveKindName(uint32_t kind);

// Reduces the same `bytes` (at `offset` into every rank's send buffer) into
// `destination` on the device, with the ranks' op, or (`combine`) with the
// op that combines partial results (CombiningOp: SUM for AVG and
// PREMUL_SUM, whose finish comes later). The destination may alias one
// source only.
absl::Status ReduceInto(const std::vector<const RankOp*>& ranks, uint64_t offset,
                        const RankBuffer& destination, uint64_t bytes, bool combine);

class Communicator final : public FabricReceiver {
 public:
  // `name` identifies the communicator in errors and listings (never the
  // secret id). An operation that waits longer than `timeout` for its peers
  // aborts the communicator.
  // `counters` (may be null): where the collectives it runs are counted.
  Communicator(std::string name, uint32_t size, absl::Duration timeout,
               std::shared_ptr<CollectiveCounters> counters = nullptr);
  // Across hosts: `size` is topology.world_size(); `router` outlives it.
  // Every host's daemon must have the same `algorithms` (checked at Join).
  Communicator(std::string name, HostTopology topology, FabricRouter* router,
               absl::Duration timeout, std::shared_ptr<CollectiveCounters> counters = nullptr,
               HostAlgorithmOptions algorithms = {});
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() override;

  const HostTopology* topology() const { return topology_ ? &*topology_ : nullptr; }

  const std::string& name() const { return name_; }
  uint32_t size() const { return size_; }
  absl::Duration timeout() const { return timeout_; }

  // The rendezvous: takes `rank` for `member` (a description for errors:
  // session and process) and waits until every rank of this host has
  // joined and, across hosts, every other host's daemon has said HELLO; or
  // the deadline passes (DEADLINE_EXCEEDED naming the ranks or hosts
  // missing; the communicator is aborted) or it is aborted. ALREADY_EXISTS
  // when the rank is taken; INVALID_ARGUMENT when it is another host's.
  absl::Status Join(uint32_t rank, std::string member, absl::Time deadline);

  // Posts `rank`'s group; its completion settles once every operation has
  // run (or failed). The data of operations that this post completes moves
  // on the calling thread before Post returns. `on_done` runs once, when the
  // group settles, on whichever thread settles it. An error (nothing posted)
  // when the communicator was aborted or an operation names buffers it
  // cannot use.
  absl::StatusOr<std::shared_ptr<GroupCompletion>> Post(uint32_t rank, std::vector<RankOp> ops,
                                                        std::function<void()> on_done);

  // `rank` is gone (its session closed, or it destroyed the communicator):
  // what waits on it fails now, and so does every later operation.
  void Leave(uint32_t rank, std::string_view reason);
  // Fails every pending and later operation with `status`.
  void Abort(absl::Status status);
  // Aborts the communicator when an operation has waited longer than the
  // timeout at `now`, naming the operation and the ranks it waits for.
  void ExpireOverdue(absl::Time now);

  // Operations posted that wait for their peers; past it, Post refuses.
  static constexpr uint64_t kMaxPendingArrivals = 1 << 16;

  // FabricReceiver: messages from the other hosts' daemons.
  void Receive(const neuron_rtd_fabric_header& header, std::span<const uint8_t> payload) override;
  void PeerFailed(fabric::PeerId peer, const absl::Status& why) override;

  // Bytes other hosts may send ahead of this host's operations.
  static constexpr uint64_t kMaxQueuedRemoteBytes = uint64_t{1} << 30;

  struct Info {
    std::string name;
    uint32_t size = 0;
    uint32_t hosts = 1;
    uint32_t host = 0;
    std::vector<std::string> members;  // by rank; empty where none joined
    uint64_t collectives_completed = 0;
    uint64_t operations_pending = 0;
    std::string aborted;  // why, when it was
  };
  Info info() const;

 private:
  struct Arrival {
    uint32_t rank = 0;
    RankOp op;
    std::shared_ptr<GroupCompletion> completion;
  };
  // The collective every rank numbered `index`: the ranks arrived so far.
  struct Slot {
    uint64_t index = 0;
    std::map<uint32_t, Arrival> arrivals;
    absl::Time opened;
  };
  // Sends from one rank to another and the receiver's receives from it that
  // have not met their other side yet, by sequence.
  struct Channel {
    std::map<uint64_t, std::pair<Arrival, absl::Time>> sends;
    std::map<uint64_t, std::pair<Arrival, absl::Time>> recvs;
  };
  // Ready to move: a whole collective, or a send and its receive.
  using Work = std::vector<Arrival>;

  void Execute(Work& work);
  // Settles `work` with `status` (named after the communicator) and counts it.
  void Finish(Work& work, absl::Status status);
  absl::Status Move(const Work& work);
  absl::Status CheckAgreement(const Slot& slot) const;
  // Records `status` as the abort and moves every pending arrival into
  // `failed`, to settle outside the lock.
  void AbortLocked(absl::Status status, std::vector<Arrival>& failed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Settles `failed` and, across hosts, fails the mailbox and tells the
  // other hosts why (unless they told us).
  void AfterAbort(const absl::Status& status, std::vector<Arrival>& failed, bool tell_hosts);
  uint32_t local_size() const;

  // Across hosts (communicator_cross_host.cc, communicator_exchange.cc).
  absl::Status ConnectHosts(absl::Time deadline);
  void PostRemote(Arrival arrival);
  void SendToHost(Arrival& arrival);
  void ReceiveFromHost(Arrival arrival);
  void RunExchanges();
  absl::Status Exchange(const Work& work);
  // Which step of which algorithm a DATA message belongs to.
  struct StepId {
    uint32_t phase = 0;  // enum neuron_rtd_fabric_phase
    uint32_t step = 0;
    uint32_t algorithm = NEURON_RTD_FABRIC_ALGORITHM_DIRECT;
  };
  // Bytes to send, at `offset` of the receiver's view of the collective.
  struct OutgoingRange {
    uint64_t offset = 0;
    const uint8_t* data = nullptr;
    uint64_t bytes = 0;
  };
  // With a tracker, the ranges are sent in place (they stay unchanged until
  // it says the sends finished).
  absl::Status SendBytes(uint32_t host, StepId step, const neuron_rtd_collective_op& op,
                         const std::vector<OutgoingRange>& ranges, absl::Time deadline,
                         const std::shared_ptr<fabric::SendTracker>& tracker);
  // What a host sends for one step of a collective, taken by the progress
  // thread as it arrives (communicator_exchange.cc).
  class Incoming;
  using IncomingUse = std::function<absl::Status(uint64_t offset, std::span<const uint8_t> bytes)>;
  absl::Status CheckRemote(const neuron_rtd_fabric_header& header,
                           const neuron_rtd_collective_op& op) const;
  // All-reduce between hosts (communicator_all_reduce.cc): the host's ranks
  // reduced into `base` (`bytes`), then reduced with every other host's by
  // the ring or by recursive doubling; `in_place`: `base` is device memory
  // the fabric reads (it stays allocated).
  absl::Status AllReduceBetweenHosts(const Work& work);
  // The host's ranks' send buffers' first `length` bytes, reduced into
  // staging_ on the host.
  absl::Status ReduceRanksIntoStaging(const Work& work, uint64_t length);
  absl::Status RingAllReduce(const neuron_rtd_collective_op& op, uint8_t* base, bool in_place,
                             absl::Time deadline);
  absl::Status DoublingAllReduce(const neuron_rtd_collective_op& op, uint8_t* base,
                                 absl::Time deadline);
  void TellHostsOfAbort(const absl::Status& status);
  absl::StatusOr<fabric::PeerId> PeerOf(uint32_t host) const;
  neuron_rtd_fabric_header HeaderFor(uint32_t type) const;

  const std::string name_;
  const uint32_t size_;
  const absl::Duration timeout_;
  const std::shared_ptr<CollectiveCounters> counters_;
  const std::optional<HostTopology> topology_;
  FabricRouter* const router_ = nullptr;
  const HostAlgorithmOptions algorithms_;
  HostMailbox mailbox_{kMaxQueuedRemoteBytes};

  mutable absl::Mutex mutex_;
  std::vector<std::string> members_ ABSL_GUARDED_BY(mutex_);
  uint32_t joined_ ABSL_GUARDED_BY(mutex_) = 0;
  // Across hosts: whether a joining thread has begun ConnectHosts, and its
  // outcome once it has finished.
  bool connecting_ ABSL_GUARDED_BY(mutex_) = false;
  std::optional<absl::Status> connected_ ABSL_GUARDED_BY(mutex_);
  // Collectives whose ranks of this host have all arrived, by number, for
  // the exchange thread; and the number it runs next.
  std::map<uint64_t, std::pair<Work, absl::Time>> exchanges_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_exchange_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  // Receives from other hosts' ranks waiting for their bytes, by
  // (sender, receiver, number).
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, Arrival> remote_receives_
      ABSL_GUARDED_BY(mutex_);
  // Peer id of each host's daemon (this host's own unused); empty until
  // ConnectHosts has added them.
  std::vector<fabric::PeerId> peers_ ABSL_GUARDED_BY(mutex_);
  // Host memory the exchange thread stages collectives in, kept from one
  // collective to the next (mapping fresh pages costs more than the copies):
  // as large as the largest collective so far. Exchange thread only.
  class Scratch {
   public:
    // `bytes` of undefined contents.
    void resize(size_t bytes) {
      if (bytes > capacity_) {
        data_.reset(new uint8_t[bytes]);
        capacity_ = bytes;
      }
      size_ = bytes;
    }
    uint8_t* data() { return data_.get(); }
    size_t size() const { return size_; }

   private:
    std::unique_ptr<uint8_t[]> data_;
    size_t capacity_ = 0;
    size_t size_ = 0;
  };
  Scratch staging_;
  Scratch operand_;
  std::thread exchange_thread_;
  absl::Status aborted_ ABSL_GUARDED_BY(mutex_);
  // Arrivals waiting in slots_ and channels_ (at most kMaxPendingArrivals).
  uint64_t pending_ ABSL_GUARDED_BY(mutex_) = 0;
  std::map<uint64_t, Slot> slots_ ABSL_GUARDED_BY(mutex_);
  // By sender * size + receiver.
  std::map<uint64_t, Channel> channels_ ABSL_GUARDED_BY(mutex_);
  uint64_t collectives_completed_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_COMMUNICATOR_H_
