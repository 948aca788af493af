// libFuzzer target for what other hosts' daemons send: every sequence of
// messages a peer (or anyone who learnt a group key) could send must be
// routed, checked and either used or refused, never crash, write outside
// the collective's buffers or hang the communicator.
//
// Input: byte 0 picks the operation host 0's rank has pending (its low six
// bits: an all-reduce, all-gather, reduce-scatter, broadcast from host 1's
// rank, a receive from it, a barrier; 0x80: all-reduces average; 0x40:
// all-reduces run by the ring, else by recursive doubling), byte 1 its
// element count; then messages, each
// a little-endian u16 length and that many bytes, routed as if they came
// off the fabric. Seeds: corpus/fabric_message (make_fabric_seeds.py).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/fabric_router.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/backend_factory.h"
#include "daemon/memory/memory_manager.h"

namespace {

using namespace neuron::rtd;  // NOLINT: a fuzz driver

constexpr uint64_t kMaxElements = 64;
const std::string kGroupKey(NEURON_RTD_FABRIC_GROUP_KEY_BYTES, 'k');

struct Host {
  std::unique_ptr<hal::Backend> backend;
  std::unique_ptr<memory::MemoryManager> memory;
  std::unique_ptr<collectives::FabricRouter> routers[2];
  collectives::HostTopology topology;
  collectives::RankBuffer send;
  collectives::RankBuffer recv;

  Host() {
    backend = *hal::CreateBackend(
        hal::BackendOptions{.kind = "sim", .logical_nc_config = 0, .sim_preset = "dev"},
        DefaultOsSysCalls());
    memory = std::make_unique<memory::MemoryManager>(*backend);
    for (auto& router : routers) {
      router = *collectives::FabricRouter::Open(
          {.provider = "tcp;ofi_rxm", .interface = "lo", .send_buffers = 8,
           .receive_buffers = 16});
    }
    topology = *collectives::MakeHostTopology(0, {routers[0]->address(), routers[1]->address()},
                                              {{0}, {1}}, 2, kGroupKey);
    send = Buffer();
    recv = Buffer();
  }

  collectives::RankBuffer Buffer() {
    // All-gather results and reduce-scatter inputs hold two ranks' elements.
    auto segment = *memory->Allocate(0, 0, 4096);
    return {.segment = segment, .device = backend->devices()[0],
            .address = segment->range().address};
  }
};

Host& TheHost() {
  static Host* host = new Host();
  return *host;
}

neuron_rtd_collective_op Operation(uint8_t pick, uint8_t count) {
  neuron_rtd_collective_op op{};
  op.dtype = NEURON_RTD_DTYPE_FLOAT32;
  op.element_count = count % (kMaxElements + 1);
  switch ((pick & 0x3f) % 6) {
    case 0:
      op.kind = NEURON_RTD_COLLECTIVE_ALL_REDUCE;
      op.reduce_op = pick & 0x80 ? NEURON_RTD_REDUCE_AVG : NEURON_RTD_REDUCE_SUM;
      break;
    case 1:
      op.kind = NEURON_RTD_COLLECTIVE_ALL_GATHER;
      break;
    case 2:
      op.kind = NEURON_RTD_COLLECTIVE_REDUCE_SCATTER;
      op.reduce_op = NEURON_RTD_REDUCE_SUM;
      break;
    case 3:
      op.kind = NEURON_RTD_COLLECTIVE_BROADCAST;
      op.peer = 1;
      break;
    case 4:
      op.kind = NEURON_RTD_COLLECTIVE_RECV;
      op.peer = 1;
      break;
    default:
      op.kind = NEURON_RTD_COLLECTIVE_BARRIER;
      op.element_count = 0;
      break;
  }
  return op;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  Host& host = TheHost();
  const collectives::HostAlgorithmOptions algorithms{
      .recursive_doubling_max_bytes = data[0] & 0x40 ? 0 : uint64_t{1} << 20};
  auto communicator = std::make_shared<collectives::Communicator>(
      "fuzz", host.topology, host.routers[0].get(), absl::Seconds(5), nullptr, algorithms);
  if (!host.routers[0]->Register(kGroupKey, communicator).ok()) return 0;
  neuron_rtd_fabric_header hello{};
  hello.magic = NEURON_RTD_FABRIC_MAGIC;
  hello.version = NEURON_RTD_FABRIC_VERSION;
  hello.type = NEURON_RTD_FABRIC_HELLO;
  std::memcpy(hello.group_key, kGroupKey.data(), kGroupKey.size());
  hello.source_host = 1;
  hello.index = host.topology.Fingerprint();
  hello.total = algorithms.recursive_doubling_max_bytes;
  host.routers[0]->Route({reinterpret_cast<const uint8_t*>(&hello), sizeof(hello)});
  if (!communicator->Join(0, "fuzz", absl::Now() + absl::Seconds(5)).ok()) return 0;

  auto finished = std::make_shared<absl::Notification>();
  auto posted = communicator->Post(
      0, {collectives::RankOp{.op = Operation(data[0], data[1]), .send = host.send,
                              .recv = host.recv}},
      [finished] { finished->Notify(); });
  for (size_t at = 2; at + 2 <= size;) {
    const size_t length = data[at] | (size_t{data[at + 1]} << 8);
    at += 2;
    const size_t taken = std::min(length, size - at);
    host.routers[0]->Route({data + at, taken});
    at += taken;
  }
  // The exchange thread takes what was routed: give it a moment to finish
  // (inputs that complete it reach the reductions and copies), then fail
  // whatever still waits.
  if (posted.ok()) finished->WaitForNotificationWithTimeout(absl::Milliseconds(20));
  communicator->Abort(absl::CancelledError("the input is over"));
  if (posted.ok()) finished->WaitForNotification();
  return 0;
}
