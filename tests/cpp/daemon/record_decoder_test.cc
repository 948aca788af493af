#include "daemon/queue/record_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>

namespace neuron::rtd::queue {
namespace {

using ::testing::HasSubstr;

// A record image: header, payload, op name, zero padding.
std::vector<uint8_t> Record(uint16_t opcode, const void* payload, uint32_t payload_bytes,
                            std::string_view name = "op", uint64_t sequence = 1) {
  std::vector<uint8_t> bytes(
      neuron_rtd_record_length(payload_bytes, static_cast<uint32_t>(name.size())));
  neuron_rtd_encode_record(bytes.data(), opcode, sequence, payload, payload_bytes, name.data(),
                           static_cast<uint32_t>(name.size()));
  return bytes;
}

neuron_rtd_copy_payload GoodCopy() {
  return {.src = {.kind = NEURON_RTD_LOCATION_STAGING, .reserved0 = 0, .memory_id = 0, .address = 0},
          .dst = {.kind = NEURON_RTD_LOCATION_DEVICE, .reserved0 = 0, .memory_id = 0, .address = 64},
          .bytes = 16};
}

neuron_rtd_record_header& Header(std::vector<uint8_t>& bytes) {
  return *reinterpret_cast<neuron_rtd_record_header*>(bytes.data());
}

template <typename T>
T& Payload(std::vector<uint8_t>& bytes) {
  return *reinterpret_cast<T*>(bytes.data() + sizeof(neuron_rtd_record_header));
}

absl::Status Decode(const std::vector<uint8_t>& bytes, uint64_t last_sequence = 0) {
  return DecodeRecord(bytes, last_sequence).status();
}

TEST(RecordDecoderTest, DecodesEveryWellFormedKind) {
  neuron_rtd_copy_payload copy = GoodCopy();
  absl::StatusOr<DecodedRecord> decoded =
      DecodeRecord(Record(NEURON_RTD_OP_COPY, &copy, sizeof(copy), "aten::copy_"), 0);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->op_name, "aten::copy_");
  EXPECT_EQ(std::get<neuron_rtd_copy_payload>(decoded->command).bytes, 16u);

  neuron_rtd_fill_payload fill{.device_address = 0, .bytes = 8, .pattern = 1, .pattern_bytes = 4};
  EXPECT_TRUE(Decode(Record(NEURON_RTD_OP_FILL, &fill, sizeof(fill))).ok());
  neuron_rtd_wait_payload wait{.stream_id = 2, .value = 9};
  EXPECT_TRUE(Decode(Record(NEURON_RTD_OP_WAIT, &wait, sizeof(wait))).ok());
  EXPECT_TRUE(Decode(Record(NEURON_RTD_OP_SIGNAL, nullptr, 0)).ok());
  neuron_rtd_marker_payload marker{.marker_id = 1, .kind = NEURON_RTD_MARKER_RANGE_PUSH};
  EXPECT_TRUE(Decode(Record(NEURON_RTD_OP_MARKER, &marker, sizeof(marker))).ok());

  struct {
    neuron_rtd_launch_payload launch{.executable_id = 1, .arg_count = 3, .scalar_bytes = 8};
    uint64_t args[3] = {10, 20, 30};
    uint64_t count = 5;
  } launch;
  absl::StatusOr<DecodedRecord> launched =
      DecodeRecord(Record(NEURON_RTD_OP_LAUNCH, &launch, sizeof(launch)), 0);
  ASSERT_TRUE(launched.ok()) << launched.status();
  const auto& command = std::get<LaunchCommand>(launched->command);
  EXPECT_THAT(command.arguments, ::testing::ElementsAre(10, 20, 30));
  EXPECT_EQ(command.scalars.size(), 8u);

  std::vector<uint8_t> pad = Record(NEURON_RTD_OP_PAD, nullptr, 0, "", 0);
  EXPECT_TRUE(Decode(pad, 7).ok());
}

// Each case breaks one field of an otherwise valid record.
struct Mutation {
  const char* name;
  std::function<void(std::vector<uint8_t>&)> apply;
  const char* expected;
};

TEST(RecordDecoderTest, RefusesEveryMalformedField) {
  const Mutation mutations[] = {
      {"opcode zero", [](auto& r) { Header(r).opcode = 0; }, "opcode 0 is not known"},
      {"opcode unknown", [](auto& r) { Header(r).opcode = 99; }, "opcode 99 is not known"},
      {"flags", [](auto& r) { Header(r).flags = 0x80; }, "unknown bits"},
      {"reserved0", [](auto& r) { Header(r).reserved0 = 1; }, "reserved header fields"},
      {"correlation without PROFILE", [](auto& r) { Header(r).correlation_id = 1; },
       "correlation id without the PROFILE flag"},
      {"op name too long", [](auto& r) { Header(r).op_name_bytes = 500; }, "exceeds 128"},
      {"payload past length", [](auto& r) { Header(r).payload_bytes = 4000; },
       "exceed the length"},
      {"payload size", [](auto& r) { Header(r).payload_bytes = 40; Header(r).op_name_bytes = 0; },
       "COPY takes 56"},
      {"length mismatch", [](auto& r) { Header(r).length = 64; }, "does not match"},
      {"src kind", [](auto& r) { Payload<neuron_rtd_copy_payload>(r).src.kind = 9; },
       "src.kind 9 is not a location kind"},
      {"dst reserved", [](auto& r) { Payload<neuron_rtd_copy_payload>(r).dst.reserved0 = 3; },
       "dst.reserved0"},
      {"staging memory id",
       [](auto& r) { Payload<neuron_rtd_copy_payload>(r).src.memory_id = 3; },
       "src.memory_id must be 0"},
      {"host to host",
       [](auto& r) { Payload<neuron_rtd_copy_payload>(r).dst.kind = NEURON_RTD_LOCATION_STAGING; },
       "must read or write device memory"},
  };
  for (const Mutation& mutation : mutations) {
    neuron_rtd_copy_payload copy = GoodCopy();
    std::vector<uint8_t> record = Record(NEURON_RTD_OP_COPY, &copy, sizeof(copy));
    mutation.apply(record);
    absl::Status status = Decode(record);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << mutation.name;
    EXPECT_THAT(status.message(), HasSubstr(mutation.expected)) << mutation.name;
  }
}

TEST(RecordDecoderTest, AProfiledRecordKeepsItsCorrelationId) {
  std::vector<uint8_t> record = Record(NEURON_RTD_OP_SIGNAL, nullptr, 0);
  neuron_rtd_mark_record_profiled(record.data(), 0xfeedu);
  absl::StatusOr<DecodedRecord> decoded = DecodeRecord(record, 0);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header.flags, NEURON_RTD_RECORD_FLAG_PROFILE);
  EXPECT_EQ(decoded->header.correlation_id, 0xfeedu);
}

TEST(RecordDecoderTest, SequencesMustIncrease) {
  std::vector<uint8_t> record = Record(NEURON_RTD_OP_SIGNAL, nullptr, 0, "", 5);
  EXPECT_TRUE(Decode(record, 4).ok());
  EXPECT_THAT(Decode(record, 5).message(), HasSubstr("sequence 5 does not follow the stream's 5"));
  std::vector<uint8_t> pad = Record(NEURON_RTD_OP_PAD, nullptr, 0, "", 0);
  Header(pad).sequence = 3;
  EXPECT_THAT(Decode(pad).message(), HasSubstr("PAD records carry no sequence"));
  EXPECT_THAT(Decode(Record(NEURON_RTD_OP_SIGNAL, "x", 1)).message(),
              HasSubstr("SIGNAL carries no payload"));
}

TEST(RecordDecoderTest, FillAndLaunchAndMarkerFieldsAreChecked) {
  neuron_rtd_fill_payload fill{.device_address = 0, .bytes = 9, .pattern = 1, .pattern_bytes = 3};
  EXPECT_THAT(Decode(Record(NEURON_RTD_OP_FILL, &fill, sizeof(fill))).message(),
              HasSubstr("pattern width 3"));
  fill.pattern_bytes = 2;
  EXPECT_THAT(Decode(Record(NEURON_RTD_OP_FILL, &fill, sizeof(fill))).message(),
              HasSubstr("not a multiple of its 2-byte pattern"));

  neuron_rtd_launch_payload launch{.executable_id = 1, .arg_count = 5000, .scalar_bytes = 0};
  EXPECT_THAT(Decode(Record(NEURON_RTD_OP_LAUNCH, &launch, sizeof(launch))).message(),
              HasSubstr("5000 arguments exceed 3840"));
  launch.arg_count = 2;
  EXPECT_THAT(Decode(Record(NEURON_RTD_OP_LAUNCH, &launch, sizeof(launch))).message(),
              HasSubstr("2 arguments and 0 scalar bytes need 32"));

  neuron_rtd_marker_payload marker{.marker_id = 1, .kind = 7};
  EXPECT_THAT(Decode(Record(NEURON_RTD_OP_MARKER, &marker, sizeof(marker))).message(),
              HasSubstr("marker kind 7"));
}

TEST(RecordDecoderTest, FramingIsCheckedBeforeTheRecordIsCopied) {
  neuron_rtd_record_header header{};
  header.opcode = NEURON_RTD_OP_SIGNAL;
  header.length = 40;
  EXPECT_THAT(CheckRecordFraming(header, 4096, 4096).message(), HasSubstr("not a multiple of 32"));
  header.length = 65536;
  EXPECT_THAT(CheckRecordFraming(header, 131072, 131072).message(),
              HasSubstr("between 32 and 32768"));
  header.length = 64;
  EXPECT_THAT(CheckRecordFraming(header, 32, 4096).message(), HasSubstr("exceeds the 32 bytes"));
  EXPECT_THAT(CheckRecordFraming(header, 4096, 32).message(), HasSubstr("must pad"));
  EXPECT_TRUE(CheckRecordFraming(header, 64, 64).ok());
}


std::vector<uint8_t> CollectiveRecord(const std::vector<neuron_rtd_collective_op>& ops,
                                      uint32_t op_count) {
  neuron_rtd_collective_payload group{.communicator_handle = 7, .op_count = op_count,
                                      .reserved0 = 0};
  std::vector<uint8_t> payload(sizeof(group) + ops.size() * sizeof(neuron_rtd_collective_op));
  std::memcpy(payload.data(), &group, sizeof(group));
  if (!ops.empty()) {
    std::memcpy(payload.data() + sizeof(group), ops.data(),
                ops.size() * sizeof(neuron_rtd_collective_op));
  }
  return Record(NEURON_RTD_OP_COLLECTIVE, payload.data(), static_cast<uint32_t>(payload.size()));
}

neuron_rtd_collective_op AllReduce() {
  return neuron_rtd_collective_op{.kind = NEURON_RTD_COLLECTIVE_ALL_REDUCE,
                                  .reduce_op = NEURON_RTD_REDUCE_SUM,
                                  .dtype = NEURON_RTD_DTYPE_FLOAT32,
                                  .peer = 0,
                                  .send_address = 64,
                                  .recv_address = 64,
                                  .element_count = 16,
                                  .scale = 0};
}

TEST(RecordDecoderTest, CollectiveGroupsDecodeWithEveryOperation) {
  neuron_rtd_collective_op send = AllReduce();
  send.kind = NEURON_RTD_COLLECTIVE_SEND;
  send.reduce_op = NEURON_RTD_REDUCE_NONE;
  send.peer = 1;
  absl::StatusOr<DecodedRecord> decoded = DecodeRecord(CollectiveRecord({AllReduce(), send}, 2), 0);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto& command = std::get<CollectiveCommand>(decoded->command);
  EXPECT_EQ(command.communicator_handle, 7u);
  ASSERT_EQ(command.ops.size(), 2u);
  EXPECT_EQ(command.ops[1].peer, 1u);
}

TEST(RecordDecoderTest, CollectiveFieldsAreChecked) {
  auto refused = [](neuron_rtd_collective_op op) {
    return std::string(Decode(CollectiveRecord({op}, 1)).message());
  };
  EXPECT_THAT(Decode(CollectiveRecord({}, 0)).message(), HasSubstr("a group holds 1 to"));
  EXPECT_THAT(Decode(CollectiveRecord({AllReduce()}, 2)).message(), HasSubstr("2 operations need"));
  neuron_rtd_collective_op op = AllReduce();
  op.kind = 99;
  EXPECT_THAT(refused(op), HasSubstr("kind 99 is not a collective"));
  op = AllReduce();
  op.reduce_op = NEURON_RTD_REDUCE_NONE;
  EXPECT_THAT(refused(op), HasSubstr("needs a reduce op"));
  op = AllReduce();
  op.kind = NEURON_RTD_COLLECTIVE_ALL_GATHER;
  EXPECT_THAT(refused(op), HasSubstr("only ALL_REDUCE, REDUCE_SCATTER and REDUCE"));
  op = AllReduce();
  op.reduce_op = NEURON_RTD_REDUCE_PREMUL_SUM;
  op.scale = std::numeric_limits<double>::infinity();
  EXPECT_THAT(refused(op), HasSubstr("scale must be finite"));
  op = AllReduce();
  op.dtype = 42;
  EXPECT_THAT(refused(op), HasSubstr("dtype 42 is not known"));
  op = AllReduce();
  op.element_count = uint64_t{1} << 62;
  EXPECT_THAT(refused(op), HasSubstr("exceed the largest buffer"));
  op = neuron_rtd_collective_op{.kind = NEURON_RTD_COLLECTIVE_BARRIER};
  EXPECT_TRUE(Decode(CollectiveRecord({op}, 1)).ok());
  op.element_count = 1;
  EXPECT_THAT(refused(op), HasSubstr("a BARRIER names no buffers"));
}

}  // namespace
}  // namespace neuron::rtd::queue
