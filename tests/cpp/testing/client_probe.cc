// A client process for tests that need more than one process, or one to
// kill: `neuron_client_probe MODE ADDRESS CORE`.
//   work: allocates, copies through the device and checks the data
//         (several rounds), then exits 0; 1 on any error.
//   hold: allocates 64 MiB, tells the test it is ready (sd_notify READY=1),
//         then keeps its stream busy until it is killed.
#include <systemd/sd-daemon.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "neuronrt/session.h"

namespace {

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "probe: %s: %s\n", what, std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s work|hold unix:PATH CORE\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const uint32_t core = static_cast<uint32_t>(std::atoi(argv[3]));
  auto session = neuronrt::Session::Open(
      {.client = {.address = argv[2]}, .client_name = "probe-" + mode, .cores = {core}});
  if (!session.ok()) return Fail("open", session.status());
  const uint64_t bytes = mode == "hold" ? 64ull << 20 : 4ull << 20;
  auto buffer = (*session)->Allocate(core, bytes);
  if (!buffer.ok()) return Fail("allocate", buffer.status());
  auto stream = (*session)->CreateStream(core);
  if (!stream.ok()) return Fail("stream", stream.status());

  if (mode == "hold") {
    sd_notify(0, "READY=1");
    while (true) {
      auto filled = (*stream)->Fill(buffer->device_address, bytes, 0x5a, 1, "hold_fill");
      if (!filled.ok()) return Fail("fill", filled.status());
      if (absl::Status synced = (*stream)->Synchronize(); !synced.ok()) return Fail("sync", synced);
    }
  }

  std::vector<uint32_t> data(bytes / sizeof(uint32_t));
  std::vector<uint32_t> back(data.size());
  for (uint32_t round = 0; round < 20; ++round) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i * 2654435761u + round);
    auto copied = (*stream)->CopyToDevice(buffer->device_address, data.data(), bytes, "probe_h2d");
    if (!copied.ok()) return Fail("copy to device", copied.status());
    if (absl::Status status = (*stream)->CopyToHost(back.data(), buffer->device_address, bytes);
        !status.ok()) {
      return Fail("copy to host", status);
    }
    if (std::memcmp(data.data(), back.data(), bytes) != 0) {
      std::fprintf(stderr, "probe: round %u: data came back different\n", round);
      return 1;
    }
  }
  std::printf("ok\n");
  return 0;
}
