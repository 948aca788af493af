#include "daemon/hal/sim/sim_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "daemon/hal/sim/launch_parallelism.h"
#include "testing/mock_os_sys_calls.h"

namespace neuron::rtd::hal::sim {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Return;

// Resident memory of this process, from /proc/self/statm.
uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(SimBackendTest, ReservesHbmWithoutCommittingIt) {
  const uint64_t before = ResidentBytes();
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "trn2.48xlarge"}, DefaultOsSysCalls());
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_EQ((*backend)->devices().size(), 16u);
  EXPECT_EQ((*backend)->total_logical_cores(), 64u);
  // 1.5 TiB of HBM reserved; far less than 64 MiB of it resident.
  EXPECT_LT(ResidentBytes() - before, uint64_t{64} << 20);
}

TEST(SimBackendTest, DevicesHaveDisjointNonCanonicalAddressRanges) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "trn2.48xlarge"}, DefaultOsSysCalls());
  ASSERT_TRUE(backend.ok());
  uint64_t previous_end = 0;
  for (const Device* device : (*backend)->devices()) {
    const DeviceRange hbm = device->hbm();
    EXPECT_EQ(hbm.size, device->info().hbm_total_bytes);
    EXPECT_GE(hbm.address, previous_end);
    // Above the 47-bit user address space: never a host pointer.
    EXPECT_GE(hbm.address, uint64_t{1} << 47);
    previous_end = hbm.end();
  }
}

TEST(SimBackendTest, AcquiredMemoryIsUsableAndReleasedMemoryComesBackZeroed) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "dev"}, DefaultOsSysCalls());
  ASSERT_TRUE(backend.ok());
  SimDevice& device = (*backend)->sim_device(0);
  const DeviceRange range{device.hbm().address + 4 * kHbmPageBytes, 2 * kHbmPageBytes};
  ASSERT_TRUE(device.Acquire(range, 0).ok());
  absl::StatusOr<void*> host = device.arena().HostPointer(range.address, range.size);
  ASSERT_TRUE(host.ok());
  std::memset(*host, 0xab, range.size);
  EXPECT_EQ(static_cast<unsigned char*>(*host)[range.size - 1], 0xab);

  ASSERT_TRUE(device.Release(range).ok());
  ASSERT_TRUE(device.Acquire(range, 0).ok());
  EXPECT_EQ(static_cast<unsigned char*>(*host)[0], 0);
  EXPECT_TRUE(device.Release(range).ok());
}

// A 2x2 matrix product as an eager-op executable, at addresses 0, 16 and
// 32 bytes into `range`.
absl::StatusOr<std::unique_ptr<Executable>> PrepareSmallMm(SimBackend& backend) {
  auto layout = [](uint32_t address) {
    return TensorLayout{.dtype = 6, .sizes = {2, 2}, .strides = {2, 1}, .address_index = address};
  };
  EagerOpPlan spec;
  spec.name = "aten::mm";
  spec.arguments = {layout(0), layout(1)};
  spec.outputs = {layout(2)};
  return backend.PrepareExecutable(spec);
}

// How many host threads a small operator's launches end up using, with
// `parallel_launch_min_us`.
int HostThreadsOfASmallOperator(uint32_t parallel_launch_min_us) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend = CreateSimBackend(
      {.preset = "dev",
       .launch = {.parallel_min_ns = int64_t{parallel_launch_min_us} * 1000}},
      DefaultOsSysCalls());
  EXPECT_TRUE(backend.ok());
  SimDevice& device = (*backend)->sim_device(0);
  const DeviceRange range{device.hbm().address, kHbmPageBytes};
  EXPECT_TRUE(device.Acquire(range, 0).ok());
  const uint64_t bindings[] = {range.address, range.address + 16, range.address + 32};
  // The process's first matrix product initialises MKL and OpenMP: a first
  // launch that long would decide at once (until the next check).
  absl::StatusOr<std::unique_ptr<Executable>> warm_up = PrepareSmallMm(**backend);
  EXPECT_TRUE(warm_up.ok() && device.Dispatch(**warm_up, 0, bindings, {}).ok());
  absl::StatusOr<std::unique_ptr<Executable>> mm = PrepareSmallMm(**backend);
  EXPECT_TRUE(mm.ok()) << mm.status();
  EXPECT_EQ((*mm)->status().host_threads, 0) << "undecided before its first launches";
  for (int launch = 0; launch < 3; ++launch) {
    EXPECT_TRUE(device.Dispatch(**mm, 0, bindings, {}).ok());
  }
  const int threads = (*mm)->status().host_threads;
  EXPECT_TRUE(device.Release(range).ok());
  return threads;
}

TEST(SimBackendTest, AShortOperatorRunsOnItsWorkersThreadAlone) {
  EXPECT_EQ(HostThreadsOfASmallOperator(/*parallel_launch_min_us=*/400), 1);
}

TEST(SimBackendTest, ALimitBelowEveryLaunchKeepsEveryThread) {
  // A matrix product through the dispatcher takes more than a microsecond.
  EXPECT_EQ(HostThreadsOfASmallOperator(/*parallel_launch_min_us=*/1), KernelThreadsNow().openmp);
}

TEST(SimBackendTest, RangesOutsideOrUnalignedAreRefused) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "dev"}, DefaultOsSysCalls());
  ASSERT_TRUE(backend.ok());
  SimDevice& device = (*backend)->sim_device(0);
  const DeviceRange hbm = device.hbm();

  EXPECT_EQ(device.Acquire({hbm.address + 100, kHbmPageBytes}, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device.Acquire({hbm.end(), kHbmPageBytes}, 0).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device.Acquire({hbm.address - kHbmPageBytes, kHbmPageBytes}, 0).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device.Acquire({hbm.end() - kHbmPageBytes, 2 * kHbmPageBytes}, 0).code(),
            absl::StatusCode::kOutOfRange);

  EXPECT_TRUE(device.arena().HostPointer(hbm.end() - 1, 1).ok());
  EXPECT_EQ(device.arena().HostPointer(hbm.end() - 1, 2).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device.arena().HostPointer(hbm.address, ~uint64_t{0}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(SimBackendTest, UnknownPresetNamesTheKnownOnes) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "inf2"}, DefaultOsSysCalls());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(backend.status().message(), HasSubstr("\"inf2\"; known presets: dev"));
}

TEST(SimBackendTest, ReservationFailureIsResourceExhausted) {
  ::testing::NiceMock<testing::MockOsSysCalls> sys_calls;
  EXPECT_CALL(sys_calls, Mmap(_, _, _, _, _, _))
      .WillOnce(Return(SysCallPtr{reinterpret_cast<void*>(-1), ENOMEM}));
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "trn3"}, sys_calls);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(backend.status().message(), HasSubstr("device 0: cannot reserve"));
}

TEST(SimBackendTest, CommitFailureIsResourceExhausted) {
  ::testing::NiceMock<testing::MockOsSysCalls> sys_calls;
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "dev"}, sys_calls);
  ASSERT_TRUE(backend.ok());
  EXPECT_CALL(sys_calls, Mprotect(_, _, _)).WillOnce(Return(testing::Fails(ENOMEM)));
  Device* device = (*backend)->devices()[0];
  absl::Status status = device->Acquire({device->hbm().address, kHbmPageBytes}, 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("cannot commit 65536 bytes"));
}

}  // namespace
}  // namespace neuron::rtd::hal::sim
