#include "daemon/queue/record_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

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
      {"reserved1", [](auto& r) { Header(r).reserved1 = 1; }, "reserved header fields"},
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

}  // namespace
}  // namespace neuron::rtd::queue
