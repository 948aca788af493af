// The fixture of the executable tests: a daemon of its own, a session, a
// megabyte of device memory and a stream, with float upload and download.
// Test-only.
#ifndef NEURON_TESTS_E2E_EXECUTABLE_FIXTURE_H_
#define NEURON_TESTS_E2E_EXECUTABLE_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "neuronrt/session.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {

class ExecutableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.Join("rtd.sock");
    auto daemon = testing::StartDaemon({"--socket", socket_});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    auto session = neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
    buffer_ = *session_->Allocate(0, 1 << 20);
    stream_ = *session_->CreateStream(0);
  }

  uint64_t At(uint64_t float_offset) const { return buffer_.device_address + float_offset * 4; }

  void Upload(uint64_t float_offset, const std::vector<float>& values) {
    ASSERT_TRUE(stream_->CopyToDevice(At(float_offset), values.data(), values.size() * 4).ok());
  }

  std::vector<float> Download(uint64_t float_offset, size_t count) {
    std::vector<float> values(count);
    absl::Status status = stream_->CopyToHost(values.data(), At(float_offset), count * 4);
    EXPECT_TRUE(status.ok()) << status;
    return values;
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
  std::unique_ptr<neuronrt::Session> session_;
  neuronrt::DeviceBuffer buffer_;
  std::shared_ptr<neuronrt::Stream> stream_;
};

}  // namespace neuron

#endif  // NEURON_TESTS_E2E_EXECUTABLE_FIXTURE_H_
