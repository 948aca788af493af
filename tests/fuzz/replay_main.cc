// Drives a libFuzzer target without libFuzzer: each file named on the
// command line is one input; with no arguments, a fixed-seed generator makes
// well-formed records of every opcode and mutates them, so CTest exercises
// the target on every build.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "neuron/rtd/abi/command_ring.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> WellFormed(std::mt19937_64& random) {
  const uint16_t opcode = static_cast<uint16_t>(random() % NEURON_RTD_OP_COUNT_);
  // A COLLECTIVE's payload is a group header and its operations: sized so,
  // with plausible fields, most of them reach the per-operation checks.
  const uint32_t operations = static_cast<uint32_t>(random() % 4);
  const uint32_t payload =
      opcode == NEURON_RTD_OP_COLLECTIVE
          ? static_cast<uint32_t>(sizeof(neuron_rtd_collective_payload) +
                                  operations * sizeof(neuron_rtd_collective_op))
          : static_cast<uint32_t>(random() % 200);
  const uint32_t name = static_cast<uint32_t>(random() % 40);
  const uint32_t length = neuron_rtd_record_length(payload, name);
  std::vector<uint8_t> bytes(length);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(random());
  neuron_rtd_record_header header{};
  header.length = length;
  header.opcode = opcode;
  header.sequence = random() % 8;
  header.op_name_bytes = static_cast<uint16_t>(name);
  header.payload_bytes = payload;
  if (random() % 4 == 0) {
    header.flags = NEURON_RTD_RECORD_FLAG_PROFILE;
    header.correlation_id = random();
  }
  std::memcpy(bytes.data(), &header, sizeof(header));
  if (opcode == NEURON_RTD_OP_COLLECTIVE) {
    neuron_rtd_collective_payload group{.communicator_handle = random() % 4,
                                        .op_count = operations,
                                        .reserved0 = 0};
    std::memcpy(bytes.data() + sizeof(header), &group, sizeof(group));
    for (uint32_t i = 0; i < operations; ++i) {
      neuron_rtd_collective_op op{
          .kind = static_cast<uint32_t>(random() % (NEURON_RTD_COLLECTIVE_KIND_COUNT_ + 1)),
          .reduce_op = static_cast<uint32_t>(random() % (NEURON_RTD_REDUCE_OP_COUNT_ + 1)),
          .dtype = static_cast<uint32_t>(random() % (NEURON_RTD_DTYPE_COUNT_ + 1)),
          .peer = static_cast<uint32_t>(random() % 4),
          .send_address = random(),
          .recv_address = random(),
          .element_count = random() >> (random() % 64),
          .scale = random() % 2 == 0 ? 0.0 : 0.5,
          .sequence = random() % 4};
      std::memcpy(bytes.data() + sizeof(header) + sizeof(group) + i * sizeof(op), &op,
                  sizeof(op));
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) {
      std::ifstream file(argv[i], std::ios::binary);
      std::vector<uint8_t> input((std::istreambuf_iterator<char>(file)), {});
      LLVMFuzzerTestOneInput(input.data(), input.size());
    }
    return 0;
  }
  std::mt19937_64 random(20261130);
  constexpr int kInputs = 200000;
  for (int i = 0; i < kInputs; ++i) {
    std::vector<uint8_t> input = WellFormed(random);
    const int flips = static_cast<int>(random() % 4);
    for (int flip = 0; flip < flips; ++flip) {
      input[random() % input.size()] ^= static_cast<uint8_t>(1u << (random() % 8));
    }
    if (random() % 8 == 0) input.resize(random() % (input.size() + 1));
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("%d inputs decoded or refused\n", kInputs);
  return 0;
}
