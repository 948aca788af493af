// libFuzzer target for the ring record decoder: every byte sequence a client
// could place in a ring must decode or be refused, never crash or read out
// of bounds. Built with libFuzzer when the compiler is Clang; otherwise
// replay_main.cc drives it (CTest runs that on generated inputs).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "daemon/queue/record_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using neuron::rtd::queue::CheckRecordFraming;
  using neuron::rtd::queue::DecodeRecord;
  if (size < sizeof(neuron_rtd_record_header)) {
    (void)DecodeRecord(std::span<const uint8_t>(data, size), 0);
    return 0;
  }
  neuron_rtd_record_header header;
  std::memcpy(&header, data, sizeof(header));
  // As the ring reader does: framing first, then the whole record.
  if (CheckRecordFraming(header, size, size).ok()) {
    (void)DecodeRecord(std::span<const uint8_t>(data, header.length), 0);
  }
  (void)DecodeRecord(std::span<const uint8_t>(data, size), header.sequence / 2);
  return 0;
}
