// A client process for the chaos tests: `chaos_client MODE ADDRESS ...`.
//   random SEED DIE_AT  a seeded random mix of every kind of call (memory,
//                       streams, copies pageable and pinned, fills, launches,
//                       executables loaded and unloaded, events across
//                       streams); it checks what it reads back. At step
//                       DIE_AT it kills itself (SIGKILL); -1 runs all steps
//                       and exits 0. Exits 1 on an error.
//   wait KIND           opens a session, says READY=1, then blocks where
//                       KIND says until the daemon goes away, and exits 3
//                       with the error: `sync` in a stream synchronize,
//                       `ring` in a submit to a full ring, `event` in an
//                       event wait, `rpc` in repeated calls.
//   hog                 allocates HBM in 64 MiB segments until refused,
//                       prints how much it holds, says READY=1, and holds
//                       it until killed.
#include <signal.h>
#include <systemd/sd-daemon.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "e2e/eager_op_builders.h"
#include "neuronrt/session.h"

namespace {

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "chaos_client: %s: %s\n", what.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

constexpr uint64_t kMiB = 1 << 20;

class RandomClient {
 public:
  RandomClient(neuronrt::Session& session, uint64_t seed) : session_(session), random_(seed) {}

  // One random step; an error is a failure of the daemon or of this test.
  absl::Status Step() {
    switch (Pick(12)) {
      case 0:
      case 1:
        return Allocate();
      case 2:
        return Free();
      case 3:
        return CreateStream();
      case 4:
        return DestroyStream();
      case 5:
      case 6:
        return RoundTrip();
      case 7:
        return PinnedRoundTrip();
      case 8:
        return FillAndCheck();
      case 9:
        return LaunchNeg();
      case 10:
        return UnloadOne();
      default:
        return CrossStreamEvent();
    }
  }

 private:
  uint64_t Pick(uint64_t count) { return std::uniform_int_distribution<uint64_t>(0, count - 1)(random_); }

  absl::StatusOr<std::shared_ptr<neuronrt::Stream>> AnyStream() {
    if (streams_.empty() || Pick(8) == 0) {
      if (absl::Status created = CreateStream(); !created.ok()) return created;
    }
    return streams_[Pick(streams_.size())];
  }

  absl::StatusOr<neuronrt::DeviceBuffer> AnyBuffer() {
    if (buffers_.empty()) {
      if (absl::Status allocated = Allocate(); !allocated.ok()) return allocated;
    }
    return buffers_[Pick(buffers_.size())];
  }

  absl::Status Allocate() {
    if (buffers_.size() >= 16) return Free();
    const uint64_t bytes = 4096 + Pick(8 * kMiB);
    absl::StatusOr<neuronrt::DeviceBuffer> buffer = session_.Allocate(0, bytes);
    if (!buffer.ok()) return buffer.status();
    buffers_.push_back(*buffer);
    return absl::OkStatus();
  }

  absl::Status Free() {
    if (buffers_.empty()) return absl::OkStatus();
    // Work on it must finish first, as with cudaFree.
    for (const auto& stream : streams_) {
      if (absl::Status synced = stream->Synchronize(); !synced.ok()) return synced;
    }
    const size_t index = Pick(buffers_.size());
    absl::Status freed = session_.Free(buffers_[index]);
    buffers_.erase(buffers_.begin() + static_cast<std::ptrdiff_t>(index));
    return freed;
  }

  absl::Status CreateStream() {
    if (streams_.size() >= 6) return DestroyStream();
    absl::StatusOr<std::shared_ptr<neuronrt::Stream>> stream = session_.CreateStream(0);
    if (!stream.ok()) return stream.status();
    streams_.push_back(*stream);
    return absl::OkStatus();
  }

  absl::Status DestroyStream() {
    if (streams_.empty()) return absl::OkStatus();
    streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(Pick(streams_.size())));
    return absl::OkStatus();
  }

  absl::Status RoundTrip() {
    auto buffer = AnyBuffer();
    if (!buffer.ok()) return buffer.status();
    auto stream = AnyStream();
    if (!stream.ok()) return stream.status();
    const uint64_t bytes = 1 + Pick(buffer->size);
    std::vector<uint8_t> data(bytes), back(bytes);
    for (uint8_t& byte : data) byte = static_cast<uint8_t>(random_());
    auto copied = (*stream)->CopyToDevice(buffer->device_address, data.data(), bytes);
    if (!copied.ok()) return copied.status();
    if (absl::Status read = (*stream)->CopyToHost(back.data(), buffer->device_address, bytes);
        !read.ok()) {
      return read;
    }
    if (data != back) return absl::DataLossError("a round trip came back different");
    return absl::OkStatus();
  }

  absl::Status PinnedRoundTrip() {
    auto buffer = AnyBuffer();
    if (!buffer.ok()) return buffer.status();
    auto stream = AnyStream();
    if (!stream.ok()) return stream.status();
    const uint64_t bytes = std::min<uint64_t>(buffer->size, 1 + Pick(2 * kMiB));
    auto pinned = session_.AllocateHost(2 * bytes);
    if (!pinned.ok()) return pinned.status();
    auto* host = static_cast<uint8_t*>((*pinned)->data());
    for (uint64_t i = 0; i < bytes; ++i) host[i] = static_cast<uint8_t>(random_());
    if (auto up = (*stream)->CopyToDevice(buffer->device_address, **pinned, 0, bytes); !up.ok()) {
      return up.status();
    }
    auto down = (*stream)->CopyToHost(**pinned, bytes, buffer->device_address, bytes);
    if (!down.ok()) return down.status();
    if (absl::Status synced = down->Synchronize(); !synced.ok()) return synced;
    if (std::memcmp(host, host + bytes, bytes) != 0) {
      return absl::DataLossError("a pinned round trip came back different");
    }
    return absl::OkStatus();
  }

  absl::Status FillAndCheck() {
    auto buffer = AnyBuffer();
    if (!buffer.ok()) return buffer.status();
    auto stream = AnyStream();
    if (!stream.ok()) return stream.status();
    const uint8_t value = static_cast<uint8_t>(random_());
    const uint64_t bytes = buffer->size;
    if (auto filled = (*stream)->Fill(buffer->device_address, bytes, value, 1); !filled.ok()) {
      return filled.status();
    }
    uint8_t last = 0;
    if (absl::Status read = (*stream)->CopyToHost(&last, buffer->device_address + bytes - 1, 1);
        !read.ok()) {
      return read;
    }
    if (last != value) return absl::DataLossError("a fill did not reach the end of its buffer");
    return absl::OkStatus();
  }

  absl::Status LaunchNeg() {
    const int64_t count = 1 + static_cast<int64_t>(Pick(64));
    absl::StatusOr<uint64_t> id = session_.LoadExecutable(neuron::testing::NegBody(count));
    if (!id.ok()) return id.status();
    executables_.push_back(*id);
    auto buffer = AnyBuffer();
    if (!buffer.ok()) return buffer.status();
    if (buffer->size < 2 * 64 * sizeof(float)) return absl::OkStatus();
    auto stream = AnyStream();
    if (!stream.ok()) return stream.status();
    std::vector<float> input(count), output(count);
    for (int64_t i = 0; i < count; ++i) input[i] = static_cast<float>(i) + 0.5f;
    const uint64_t out = buffer->device_address + 64 * sizeof(float);
    if (auto up = (*stream)->CopyToDevice(buffer->device_address, input.data(), count * 4);
        !up.ok()) {
      return up.status();
    }
    const uint64_t addresses[] = {buffer->device_address, out};
    if (auto launched = (*stream)->Launch(*id, addresses, {}, "aten::neg"); !launched.ok()) {
      return launched.status();
    }
    if (absl::Status read = (*stream)->CopyToHost(output.data(), out, count * 4); !read.ok()) {
      return read;
    }
    for (int64_t i = 0; i < count; ++i) {
      if (output[i] != -input[i]) return absl::DataLossError("aten::neg computed a wrong value");
    }
    return absl::OkStatus();
  }

  absl::Status UnloadOne() {
    if (executables_.empty()) return absl::OkStatus();
    for (const auto& stream : streams_) {
      if (absl::Status synced = stream->Synchronize(); !synced.ok()) return synced;
    }
    const uint64_t id = executables_.back();
    executables_.pop_back();
    absl::Status unloaded = session_.UnloadExecutable(id);
    // Loaded twice under one id, the session holds it once.
    return unloaded.code() == absl::StatusCode::kNotFound ? absl::OkStatus() : unloaded;
  }

  absl::Status CrossStreamEvent() {
    auto first = AnyStream();
    if (!first.ok()) return first.status();
    auto second = AnyStream();
    if (!second.ok()) return second.status();
    auto recorded = (*first)->Record();
    if (!recorded.ok()) return recorded.status();
    if (absl::Status waited = (*second)->Wait(*recorded); !waited.ok()) return waited;
    return (*second)->Synchronize();
  }

  neuronrt::Session& session_;
  std::mt19937_64 random_;
  std::vector<neuronrt::DeviceBuffer> buffers_;
  std::vector<std::shared_ptr<neuronrt::Stream>> streams_;
  std::vector<uint64_t> executables_;
};

int RunRandom(neuronrt::Session& session, uint64_t seed, int64_t die_at) {
  constexpr int64_t kSteps = 200;
  RandomClient client(session, seed);
  for (int64_t step = 0; step < kSteps; ++step) {
    if (step == die_at) ::raise(SIGKILL);
    if (absl::Status status = client.Step(); !status.ok()) {
      return Fail("step " + std::to_string(step) + " of seed " + std::to_string(seed), status);
    }
  }
  return 0;
}

// Blocks until the daemon goes away; exits 3 with the error it saw.
int RunWait(neuronrt::Session& session, const std::string& kind) {
  auto stream = session.CreateStream(0);
  auto other = session.CreateStream(0);
  if (!stream.ok() || !other.ok()) return Fail("streams", stream.ok() ? other.status() : stream.status());
  absl::Status error;
  if (kind == "rpc") {
    sd_notify(0, "READY=1");
    while (error.ok()) {
      auto buffer = session.Allocate(0, 4096);
      error = buffer.ok() ? session.Free(*buffer) : buffer.status();
    }
  } else {
    // Blocks the stream in the daemon: nothing will ever satisfy it.
    if (absl::Status waited = (*stream)->Wait((*other)->EventAt(1000)); !waited.ok()) {
      return Fail("wait", waited);
    }
    if (kind == "ring") {
      auto buffer = session.Allocate(0, 4096);
      if (!buffer.ok()) return Fail("allocate", buffer.status());
      sd_notify(0, "READY=1");
      // Fills the ring, then blocks in the submit that finds it full.
      while (error.ok()) error = (*stream)->Fill(buffer->device_address, 64, 0, 1).status();
    } else if (kind == "event") {
      auto event = (*stream)->Record();
      if (!event.ok()) return Fail("record", event.status());
      sd_notify(0, "READY=1");
      error = event->Synchronize();
    } else {
      sd_notify(0, "READY=1");
      error = (*stream)->Synchronize();
    }
  }
  std::fprintf(stderr, "chaos_client: %s\n", std::string(error.message()).c_str());
  return 3;
}

int RunHog(neuronrt::Session& session) {
  std::vector<neuronrt::DeviceBuffer> held;
  absl::Status refused;
  while (refused.ok()) {
    auto buffer = session.Allocate(0, 64 * kMiB);
    if (buffer.ok()) {
      held.push_back(*buffer);
    } else {
      refused = buffer.status();
    }
  }
  if (refused.code() != absl::StatusCode::kResourceExhausted) return Fail("allocate", refused);
  std::printf("%zu\n", held.size() * 64 * kMiB);
  std::fflush(stdout);
  sd_notify(0, "READY=1");
  while (true) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s random ADDRESS SEED DIE_AT | wait ADDRESS KIND | hog ADDRESS\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  auto session = neuronrt::Session::Open(
      {.client = {.address = argv[2]}, .client_name = "chaos-" + mode, .cores = {0}});
  if (!session.ok()) return Fail("open", session.status());
  if (mode == "random" && argc == 5) {
    return RunRandom(**session, std::strtoull(argv[3], nullptr, 10),
                     std::strtoll(argv[4], nullptr, 10));
  }
  if (mode == "wait" && argc == 4) return RunWait(**session, argv[3]);
  if (mode == "hog") return RunHog(**session);
  std::fprintf(stderr, "chaos_client: bad arguments for %s\n", mode.c_str());
  return 2;
}
