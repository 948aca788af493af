// A session's profile buffer: bounded, counts what it drops, drains in
// order and in pieces; runtime spans only while they are on.
#include "daemon/session/profile_buffer.h"

#include <gtest/gtest.h>

namespace neuron::rtd::session {
namespace {

queue::ProfiledCommand Command(uint64_t sequence) {
  return queue::ProfiledCommand{.sequence = sequence, .op_name = "aten::add"};
}

TEST(ProfileBufferTest, DrainsOldestFirstInPiecesAndCountsWhatItDropped) {
  ProfileBuffer buffer(3);
  for (uint64_t i = 1; i <= 5; ++i) buffer.Add(Command(i));
  ProfileBuffer::Drained first = buffer.Drain(2);
  ASSERT_EQ(first.commands.size(), 2u);
  EXPECT_EQ(first.commands[0].sequence, 1u);
  EXPECT_EQ(first.commands[1].sequence, 2u);
  EXPECT_EQ(first.dropped, 2u);
  EXPECT_TRUE(first.more);
  ProfileBuffer::Drained second = buffer.Drain(10);
  ASSERT_EQ(second.commands.size(), 1u);
  EXPECT_EQ(second.commands[0].sequence, 3u);
  EXPECT_EQ(second.dropped, 0u);
  EXPECT_FALSE(second.more);
}

TEST(ProfileBufferTest, KeepsRuntimeSpansOnlyWhileOn) {
  ProfileBuffer buffer(8);
  buffer.AddSpan({.name = "load_executable"});
  EXPECT_TRUE(buffer.Drain(8).spans.empty());
  buffer.set_runtime_spans(true);
  buffer.AddSpan({.name = "load_executable", .detail = "neg"});
  ProfileBuffer::Drained drained = buffer.Drain(8);
  ASSERT_EQ(drained.spans.size(), 1u);
  EXPECT_EQ(drained.spans[0].detail, "neg");
}

}  // namespace
}  // namespace neuron::rtd::session
