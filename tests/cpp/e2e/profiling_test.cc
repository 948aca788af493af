// Profiling through the daemon: PROFILE records come back stamped with their
// correlation id, core, stream, engine and bytes; only while the session
// profiles and only on the cores it chose; timing events; runtime spans; one
// session's records never reach another.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "e2e/data_plane_fixture.h"
#include "e2e/eager_op_builders.h"
#include "neuronrt/profiling.h"
#include "neuronrt/session.h"

namespace neuron {
namespace {

using ::testing::IsEmpty;

class ProfilingTest : public DataPlaneTest {
 protected:
  // Adds a and b into out (the built-in kernel) on `stream`.
  static void Add(neuronrt::Stream& stream, const neuronrt::DeviceBuffer& a,
                  const neuronrt::DeviceBuffer& b, const neuronrt::DeviceBuffer& out,
                  uint64_t count) {
    const uint64_t args[] = {a.device_address, b.device_address, out.device_address};
    ASSERT_TRUE(stream
                    .Launch(NEURON_RTD_EXEC_BUILTIN_ADD_F32, args,
                            std::span(reinterpret_cast<const uint8_t*>(&count), 8), "aten::add")
                    .ok());
  }
};

TEST_F(ProfilingTest, StampsCommandsWithCorrelationEngineAndBytes) {
  auto session = Open();
  constexpr uint64_t kCount = 4096;
  auto a = *session->Allocate(0, kCount * 4);
  auto out = *session->Allocate(0, kCount * 4);
  auto stream = *session->CreateStream(0);
  std::vector<float> host(kCount, 1.0f);
  // Before profiling: not stamped.
  ASSERT_TRUE(stream->CopyToDevice(a.device_address, host.data(), kCount * 4).ok());
  ASSERT_TRUE(session->StartProfiling({}).ok());
  const int64_t before = neuronrt::MonotonicNowNs();
  neuronrt::SetThreadCorrelationId(41);
  ASSERT_TRUE(stream->Fill(out.device_address, kCount * 4, 0, 4, "aten::zero_").ok());
  neuronrt::SetThreadCorrelationId(42);
  Add(*stream, a, a, out, kCount);
  neuronrt::SetThreadCorrelationId(43);
  ASSERT_TRUE(stream->CopyToHost(host.data(), out.device_address, kCount * 4, "copy").ok());
  neuronrt::SetThreadCorrelationId(0);
  const int64_t after = neuronrt::MonotonicNowNs();
  ASSERT_TRUE(session->StopProfiling().ok());
  ASSERT_TRUE(stream->CopyToDevice(a.device_address, host.data(), kCount * 4).ok());
  ASSERT_TRUE(stream->Synchronize().ok());

  auto records = session->DrainProfile();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->commands.size(), 3u);
  const auto& fill = records->commands[0];
  const auto& add = records->commands[1];
  const auto& copy = records->commands[2];
  EXPECT_EQ(fill.correlation_id, 41u);
  EXPECT_EQ(fill.engine, neuronrt::Engine::kDma);
  EXPECT_EQ(fill.bytes, kCount * 4);
  EXPECT_EQ(add.correlation_id, 42u);
  EXPECT_EQ(add.op_name, "aten::add");
  EXPECT_EQ(add.engine, neuronrt::Engine::kVector);
  EXPECT_EQ(add.opcode, NEURON_RTD_OP_LAUNCH);
  EXPECT_EQ(copy.correlation_id, 43u);
  EXPECT_EQ(copy.engine, neuronrt::Engine::kDma);
  EXPECT_EQ(copy.bytes, kCount * 4);
  int64_t previous_end = before;
  for (const auto& command : records->commands) {
    EXPECT_EQ(command.stream_id, stream->id());
    EXPECT_EQ(command.core, session->cores()[0]);
    EXPECT_FALSE(command.failed);
    // One clock for client and daemon: submitted, started, ended in order,
    // and the stream ran its commands one after another.
    EXPECT_GE(command.submit_ns, before);
    EXPECT_GE(command.start_ns, command.submit_ns);
    EXPECT_GE(command.start_ns, previous_end);
    EXPECT_GE(command.end_ns, command.start_ns);
    EXPECT_LE(command.end_ns, after);
    previous_end = command.end_ns;
  }
  EXPECT_EQ(records->dropped, 0u);
  auto again = session->DrainProfile();
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(again->commands, IsEmpty());
}

TEST_F(ProfilingTest, OnlyTheChosenCoresAreStamped) {
  auto session = Open();
  ASSERT_GE(session->cores().size(), 2u);
  auto buffer0 = *session->Allocate(0, 4096);
  auto buffer1 = *session->Allocate(1, 4096);
  auto stream0 = *session->CreateStream(session->cores()[0]);
  auto stream1 = *session->CreateStream(session->cores()[1]);
  ASSERT_TRUE(session->StartProfiling({.cores = {session->cores()[1]}}).ok());
  ASSERT_TRUE(stream0->Fill(buffer0.device_address, 4096, 1, 1).ok());
  ASSERT_TRUE(stream1->Fill(buffer1.device_address, 4096, 1, 1).ok());
  ASSERT_TRUE(stream0->Synchronize().ok());
  ASSERT_TRUE(stream1->Synchronize().ok());
  auto records = session->DrainProfile();
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->commands.size(), 1u);
  EXPECT_EQ(records->commands[0].core, session->cores()[1]);
  EXPECT_EQ(session->StartProfiling({.cores = {999}}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ProfilingTest, TimedEventsGiveTheDeviceTimeBetweenThem) {
  auto session = Open();
  constexpr uint64_t kCount = 1 << 20;
  auto a = *session->Allocate(0, kCount * 4);
  auto out = *session->Allocate(0, kCount * 4);
  auto stream = *session->CreateStream(0);
  auto start = stream->RecordTimed();
  ASSERT_TRUE(start.ok());
  for (int i = 0; i < 4; ++i) Add(*stream, a, a, out, kCount);
  auto end = stream->RecordTimed();
  ASSERT_TRUE(end.ok());
  auto started = session->EventTimestamp(*start);
  auto ended = session->EventTimestamp(*end);
  ASSERT_TRUE(started.ok() && ended.ok()) << started.status() << ended.status();
  EXPECT_GT(*ended, *started);
  // Asked again: the same answer, no drain needed.
  EXPECT_EQ(*session->EventTimestamp(*end), *ended);
  // Timing records never reach a profiler's drain.
  auto records = session->DrainProfile();
  ASSERT_TRUE(records.ok());
  EXPECT_THAT(records->commands, IsEmpty());
  ASSERT_TRUE(stream->Fill(out.device_address, 4, 0, 4).ok());
  auto untimed = stream->Record();
  EXPECT_EQ(session->EventTimestamp(*untimed).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ProfilingTest, SessionsNeverSeeEachOthersRecords) {
  auto first = Open();
  auto second = Open();
  auto buffer = *first->Allocate(0, 4096);
  auto stream = *first->CreateStream(0);
  ASSERT_TRUE(first->StartProfiling({}).ok());
  ASSERT_TRUE(second->StartProfiling({}).ok());
  ASSERT_TRUE(stream->Fill(buffer.device_address, 4096, 1, 1).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  auto theirs = second->DrainProfile();
  ASSERT_TRUE(theirs.ok());
  EXPECT_THAT(theirs->commands, IsEmpty());
  auto mine = first->DrainProfile();
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->commands.size(), 1u);
}

TEST_F(ProfilingTest, AFailedCommandComesBackMarkedFailed) {
  auto session = Open();
  auto buffer = *session->Allocate(0, 4096);
  auto stream = *session->CreateStream(0);
  ASSERT_TRUE(session->StartProfiling({}).ok());
  // Past the segment's end: the daemon refuses it and the stream fails.
  ASSERT_TRUE(
      stream->Fill(buffer.device_address + buffer.size, 4096, 0, 1, "aten::fill_").ok());
  EXPECT_FALSE(stream->Synchronize().ok());
  auto records = session->DrainProfile();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->commands.size(), 1u);
  EXPECT_TRUE(records->commands[0].failed);
  EXPECT_EQ(records->commands[0].op_name, "aten::fill_");
}

TEST_F(ProfilingTest, RuntimeSpansRecordLoadsAndStagingWhileOn) {
  auto session = Open();
  auto buffer = *session->Allocate(0, 4096);
  auto stream = *session->CreateStream(0);
  std::vector<uint8_t> host(4096, 7);
  ASSERT_TRUE(session->LoadExecutable(testing::NegBody(8), "neg before").ok());
  ASSERT_TRUE(session->StartProfiling({.runtime_spans = true}).ok());
  ASSERT_TRUE(session->LoadExecutable(testing::NegBody(16), "neg during").ok());
  ASSERT_TRUE(stream->CopyToDevice(buffer.device_address, host.data(), 4096, "upload").ok());
  ASSERT_TRUE(stream->CopyToHost(host.data(), buffer.device_address, 4096, "download").ok());
  ASSERT_TRUE(session->StopProfiling().ok());
  ASSERT_TRUE(session->LoadExecutable(testing::NegBody(32), "neg after").ok());
  ASSERT_TRUE(stream->CopyToDevice(buffer.device_address, host.data(), 4096).ok());
  auto records = session->DrainProfile();
  ASSERT_TRUE(records.ok());
  std::map<std::string, neuronrt::RuntimeSpan> spans;
  for (const auto& span : records->spans) {
    EXPECT_GE(span.end_ns, span.start_ns) << span.name;
    EXPECT_TRUE(spans.emplace(span.name, span).second) << span.name << " twice";
  }
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans["load_executable"].detail, "neg during");
  EXPECT_EQ(spans["load_executable"].thread, 0);
  EXPECT_EQ(spans["stage_in"].detail, "upload: 4096 bytes");
  EXPECT_EQ(spans["stage_out"].detail, "download: 4096 bytes");
  EXPECT_EQ(spans["stage_in"].thread, spans["stage_out"].thread);
  EXPECT_NE(spans["stage_in"].thread, 0);
}

}  // namespace
}  // namespace neuron
