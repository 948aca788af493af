#include "neuron/rtd/abi/command_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>
#include <type_traits>

extern "C" uint32_t neuron_rtd_abi_c_record_length(uint32_t payload, uint32_t name);

namespace {

TEST(CommandRingAbiTest, RecordLengthIsAlignedAndBounded) {
  EXPECT_EQ(neuron_rtd_record_length(0, 0), sizeof(neuron_rtd_record_header));
  EXPECT_EQ(neuron_rtd_record_length(sizeof(neuron_rtd_copy_payload), 0), 96u);
  EXPECT_EQ(neuron_rtd_record_length(sizeof(neuron_rtd_copy_payload), 9), 128u);
  EXPECT_EQ(neuron_rtd_record_length(sizeof(neuron_rtd_copy_payload), 8), 96u);
  EXPECT_EQ(neuron_rtd_record_length(1, 0) % NEURON_RTD_RECORD_ALIGN, 0u);
  EXPECT_EQ(neuron_rtd_record_length(NEURON_RTD_MAX_RECORD_BYTES - 32, 0),
            NEURON_RTD_MAX_RECORD_BYTES);
  EXPECT_EQ(neuron_rtd_record_length(NEURON_RTD_MAX_RECORD_BYTES - 32, 1), 0u);
  EXPECT_EQ(neuron_rtd_record_length(0xffffffffu, 0xffffffffu), 0u) << "no overflow";
}

TEST(CommandRingAbiTest, EncodeWritesHeaderPayloadNameAndZeroPadding) {
  const uint64_t payload[2] = {7, 9};
  std::vector<uint8_t> out(128, 0xee);
  const uint32_t length =
      neuron_rtd_encode_record(out.data(), NEURON_RTD_OP_WAIT, 42, payload, 16, "wait", 4);
  ASSERT_EQ(length, 64u);
  neuron_rtd_record_header header;
  std::memcpy(&header, out.data(), sizeof(header));
  EXPECT_EQ(header.length, 64u);
  EXPECT_EQ(header.opcode, NEURON_RTD_OP_WAIT);
  EXPECT_EQ(header.sequence, 42u);
  EXPECT_EQ(header.payload_bytes, 16u);
  EXPECT_EQ(header.op_name_bytes, 4u);
  EXPECT_EQ(header.flags, 0);
  EXPECT_EQ(std::memcmp(out.data() + 32, payload, 16), 0);
  EXPECT_EQ(std::memcmp(out.data() + 48, "wait", 4), 0);
  for (uint32_t i = 52; i < 64; ++i) EXPECT_EQ(out[i], 0) << i;
  EXPECT_EQ(out[64], 0xee) << "nothing written past the record";
  EXPECT_EQ(neuron_rtd_encode_record(out.data(), NEURON_RTD_OP_COPY, 1, nullptr,
                                     NEURON_RTD_MAX_RECORD_BYTES, nullptr, 0),
            0u);
}

TEST(CommandRingAbiTest, CAndCxxAgree) {
  for (uint32_t payload : {0u, 1u, 56u, 4000u, 5000u}) {
    for (uint32_t name : {0u, 7u, 128u}) {
      EXPECT_EQ(neuron_rtd_abi_c_record_length(payload, name),
                neuron_rtd_record_length(payload, name));
    }
  }
}

TEST(CommandRingAbiTest, SharedFieldsAreLockFreeAtomics) {
  // Both processes use atomic_ref on these fields; that is only sound when
  // the atomics are lock-free (no hidden lock in one process's memory).
  EXPECT_TRUE(std::atomic_ref<uint64_t>::is_always_lock_free);
  EXPECT_TRUE(std::atomic_ref<uint32_t>::is_always_lock_free);
  EXPECT_EQ(offsetof(neuron_rtd_ring_header, tail) % 8, 0u);
  EXPECT_EQ(offsetof(neuron_rtd_ring_header, head) % 8, 0u);
  EXPECT_EQ(offsetof(neuron_rtd_completion_slot, completed) % 8, 0u);
  EXPECT_EQ(offsetof(neuron_rtd_completion_slot, wake) % 4, 0u);
}

TEST(CommandRingAbiTest, StructuresAreTriviallyCopyable) {
  // The daemon copies records out of shared memory with memcpy.
  EXPECT_TRUE(std::is_trivially_copyable_v<neuron_rtd_record_header>);
  EXPECT_TRUE(std::is_trivially_copyable_v<neuron_rtd_copy_payload>);
  EXPECT_TRUE(std::is_trivially_copyable_v<neuron_rtd_launch_payload>);
  EXPECT_TRUE(std::is_trivially_copyable_v<neuron_rtd_collective_payload>);
  EXPECT_TRUE(std::is_trivially_copyable_v<neuron_rtd_collective_op>);
}

TEST(CommandRingAbiTest, OpcodesAreStable) {
  EXPECT_EQ(NEURON_RTD_OP_INVALID, 0);
  EXPECT_EQ(NEURON_RTD_OP_PAD, 1);
  EXPECT_EQ(NEURON_RTD_OP_LAUNCH, 2);
  EXPECT_EQ(NEURON_RTD_OP_COPY, 3);
  EXPECT_EQ(NEURON_RTD_OP_FILL, 4);
  EXPECT_EQ(NEURON_RTD_OP_WAIT, 5);
  EXPECT_EQ(NEURON_RTD_OP_SIGNAL, 6);
  EXPECT_EQ(NEURON_RTD_OP_COLLECTIVE, 7);
  EXPECT_EQ(NEURON_RTD_OP_MARKER, 8);
  EXPECT_EQ(NEURON_RTD_OP_COUNT_, 9);
}

}  // namespace
