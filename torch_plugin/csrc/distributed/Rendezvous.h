// How the ranks of a process group find their communicator: through the
// group's c10d store they learn which daemon (host) serves each rank; ranks
// of one daemon join one communicator id, and when the ranks span several
// daemons each joins with the hosts' fabric addresses so that the daemons
// reach each other.
#ifndef TORCH_NEURONX_CSRC_DISTRIBUTED_RENDEZVOUS_H_
#define TORCH_NEURONX_CSRC_DISTRIBUTED_RENDEZVOUS_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/time/time.h"
#include "neuronrt/session.h"

namespace torch_neuronx {

// Joins `rank` of `size` to its communicator, waiting up to `timeout` for
// the other ranks. Raises DistBackendError naming what failed.
neuronrt::Session::Communicator JoinCommunicator(neuronrt::Session& session,
                                                 const c10::intrusive_ptr<c10d::Store>& store,
                                                 int rank, int size, absl::Duration timeout);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_DISTRIBUTED_RENDEZVOUS_H_
