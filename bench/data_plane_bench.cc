// Data-plane benchmarks against a running daemon, each against a baseline
// measured in the same run. Prints a table, then one JSON object of figures
// as its last line.
//
//   neuron_bench_data_plane unix:PATH             (all benchmarks)
//   neuron_bench_data_plane unix:PATH --worker N  (one process of the
//                                                  shared-core benchmark)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "neuronrt/session.h"
#include "nlohmann/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

[[noreturn]] void Die(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "bench: %s: %s\n", what, std::string(status.message()).c_str());
  std::exit(1);
}

template <typename T>
T Check(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) Die(what, value.status());
  return *std::move(value);
}

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) Die(what, status);
}

struct Fixture {
  std::unique_ptr<neuronrt::Session> session;
  neuronrt::DeviceBuffer buffer;
  std::shared_ptr<neuronrt::Stream> stream;
};

Fixture Open(const std::string& address, uint64_t bytes) {
  Fixture fixture;
  fixture.session = Check(neuronrt::Session::Open(
                              {.client = {.address = address}, .client_name = "bench", .cores = {0}}),
                          "open");
  fixture.buffer = Check(fixture.session->Allocate(0, bytes), "allocate");
  fixture.stream = Check(fixture.session->CreateStream(0), "stream");
  return fixture;
}

// Commands per second one process sustains: batches of small async fills.
double SmallCommandRate(Fixture& fixture, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  uint64_t commands = 0;
  const auto start = Clock::now();
  while (Clock::now() < end) {
    for (int i = 0; i < 256; ++i) {
      Check(fixture.stream->Fill(fixture.buffer.device_address, 64, i, 1).status(), "fill");
    }
    commands += 256;
    Check(fixture.stream->Synchronize(), "sync");
  }
  return static_cast<double>(commands) / Seconds(Clock::now() - start);
}

// Opens `count` sessions, each on one core (round robin over `cores`) with a
// buffer and a stream, prints "ready", and holds them until stdin closes:
// a busy host for what a monitoring tool costs the daemon.
int HoldSessions(const std::string& address, int count, int cores) {
  std::vector<std::unique_ptr<neuronrt::Session>> sessions;
  std::vector<std::shared_ptr<neuronrt::Stream>> streams;
  for (int i = 0; i < count; ++i) {
    const uint32_t core = static_cast<uint32_t>(i % cores);
    sessions.push_back(Check(
        neuronrt::Session::Open(
            {.client = {.address = address}, .client_name = "bench", .cores = {core}}),
        "open"));
    Check(sessions.back()->Allocate(core, 4096).status(), "allocate");
    streams.push_back(Check(sessions.back()->CreateStream(core), "stream"));
  }
  std::printf("ready\n");
  std::fflush(stdout);
  while (std::getchar() != EOF) {
  }
  return 0;
}

int Worker(const std::string& address, int duration_ms) {
  Fixture fixture = Open(address, 1 << 20);
  const double rate = SmallCommandRate(fixture, duration_ms / 1000.0);
  std::printf("%f\n", rate);
  return 0;
}

// Aggregate commands/s of `processes` processes sharing core 0.
double SharedCoreRate(const char* self, const std::string& address, int processes) {
  std::vector<std::pair<pid_t, int>> children;
  for (int i = 0; i < processes; ++i) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) std::exit(1);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(pipe_fds[1], 1);
      ::execl(self, self, address.c_str(), "--worker", "1500", nullptr);
      std::_Exit(127);
    }
    ::close(pipe_fds[1]);
    children.emplace_back(pid, pipe_fds[0]);
  }
  double total = 0;
  for (auto [pid, fd] : children) {
    char buffer[64] = {};
    const ssize_t got = ::read(fd, buffer, sizeof(buffer) - 1);
    ::close(fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench: worker %d failed\n", pid);
      std::exit(1);
    }
    total += std::atof(buffer);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s unix:PATH [--worker MILLISECONDS | --hold-sessions COUNT CORES]\n",
                 argv[0]);
    return 2;
  }
  const std::string address = argv[1];
  if (argc == 4 && std::string(argv[2]) == "--worker") return Worker(address, std::atoi(argv[3]));
  if (argc == 5 && std::string(argv[2]) == "--hold-sessions") {
    return HoldSessions(address, std::atoi(argv[3]), std::atoi(argv[4]));
  }

  nlohmann::json figures;
  constexpr uint64_t kLargest = 256ull << 20;
  Fixture fixture = Open(address, kLargest);
  neuronrt::Stream& stream = *fixture.stream;
  const uint64_t device = fixture.buffer.device_address;

  // Async enqueue of a small command: the client's cost, the daemon busy.
  {
    constexpr int kBatch = 1000;
    constexpr int kBatches = 200;
    double enqueue = 0;
    for (int batch = 0; batch < kBatches; ++batch) {
      const auto start = Clock::now();
      for (int i = 0; i < kBatch; ++i) Check(stream.Fill(device, 64, i, 1).status(), "fill");
      enqueue += Seconds(Clock::now() - start);
      Check(stream.Synchronize(), "sync");
    }
    figures["enqueue_ns"] = std::round(enqueue / (kBatch * kBatches) * 1e9);
  }

  // Synchronous round trip: one small command, then wait for it.
  {
    std::vector<double> samples;
    for (int i = 0; i < 20000; ++i) {
      const auto start = Clock::now();
      auto done = Check(stream.Fill(device, 64, i, 1), "fill");
      Check(done.Synchronize(), "sync");
      samples.push_back(Seconds(Clock::now() - start) * 1e9);
    }
    std::sort(samples.begin(), samples.end());
    figures["roundtrip_p50_ns"] = std::round(samples[samples.size() / 2]);
    figures["roundtrip_p99_ns"] = std::round(samples[samples.size() * 99 / 100]);
  }

  // Bandwidth against memcpy of the same size, measured here.
  {
    auto pinned = Check(fixture.session->AllocateHost(kLargest), "pin");
    std::vector<char> pageable(kLargest, 1), scratch(kLargest, 2);
    std::memset(pinned->data(), 3, kLargest);
    Check(stream.Fill(device, kLargest, 0, 1).status(), "warm device memory");
    Check(stream.Synchronize(), "sync");
    for (uint64_t size = 4096; size <= kLargest; size *= 4) {
      const int iterations = static_cast<int>(std::max<uint64_t>(3, (64ull << 20) / size));
      auto time = [&](auto&& body) {
        body();
        const auto start = Clock::now();
        for (int i = 0; i < iterations; ++i) body();
        return Seconds(Clock::now() - start) / iterations;
      };
      const double memcpy_s = time([&] { std::memcpy(scratch.data(), pageable.data(), size); });
      const double h2d_s = time([&] {
        Check(stream.CopyToDevice(device, *pinned, 0, size).status(), "h2d");
        Check(stream.Synchronize(), "sync");
      });
      const double d2h_s = time([&] {
        Check(stream.CopyToHost(*pinned, 0, device, size).status(), "d2h");
        Check(stream.Synchronize(), "sync");
      });
      const double h2d_pageable_s = time([&] {
        Check(stream.CopyToDevice(device, pageable.data(), size).status(), "h2d");
        Check(stream.Synchronize(), "sync");
      });
      const double d2h_pageable_s =
          time([&] { Check(stream.CopyToHost(scratch.data(), device, size), "d2h"); });
      const std::string label = size >= (1 << 20) ? std::to_string(size >> 20) + "m"
                                                  : std::to_string(size >> 10) + "k";
      const double gib = static_cast<double>(size) / (1 << 30);
      figures["memcpy_" + label + "_gibps"] = std::round(gib / memcpy_s * 100) / 100;
      figures["h2d_" + label + "_vs_memcpy"] = std::round(memcpy_s / h2d_s * 1000) / 1000;
      figures["d2h_" + label + "_vs_memcpy"] = std::round(memcpy_s / d2h_s * 1000) / 1000;
      figures["h2d_pageable_" + label + "_vs_memcpy"] =
          std::round(memcpy_s / h2d_pageable_s * 1000) / 1000;
      figures["d2h_pageable_" + label + "_vs_memcpy"] =
          std::round(memcpy_s / d2h_pageable_s * 1000) / 1000;
    }
  }

  // Processes sharing one core: aggregate small-command throughput.
  {
    const double one = SharedCoreRate(argv[0], address, 1);
    const double two = SharedCoreRate(argv[0], address, 2);
    const double four = SharedCoreRate(argv[0], address, 4);
    figures["shared_core_1p_commands_per_s"] = std::round(one);
    figures["shared_core_2p_commands_per_s"] = std::round(two);
    figures["shared_core_4p_commands_per_s"] = std::round(four);
    figures["shared_core_4p_vs_1p"] = std::round(four / one * 1000) / 1000;
  }

  std::printf("%s\n", figures.dump().c_str());
  return 0;
}
