// neuron-rtd on its nrt backend, over the fake libnrt of tests/fake_nrt:
// NEFF executables end to end, the host path, faults of the runtime, and a
// second daemon on cores the first owns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/exec/neff_container.h"
#include "neuronrt/client.h"
#include "neuronrt/profiling.h"
#include "neuronrt/session.h"
#include "nlohmann/json.hpp"
#include "testing/fake_neuron_sysfs.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A test NEFF: the real container around the fake libnrt's neff.json.
std::string TestNeff(const std::string& op, int rows, int columns, uint32_t lnc = 2,
                     double factor = 1) {
  auto tensor = [](const char* name, const char* usage, int r, int c) {
    return absl::StrFormat(R"({"name": "%s", "usage": "%s", "dtype": "float32", "shape": [%d, %d]})",
                           name, usage, r, c);
  };
  std::string io = tensor("a", "input", rows, columns);
  if (op == "add") io += ", " + tensor("b", "input", rows, columns);
  io += ", " + tensor("out", "output", rows, columns);
  return rtd::exec::WriteNeff(
      absl::StrCat("test_", op), lnc,
      {{.name = "neff.json",
        .data = absl::StrFormat(R"({"io": [%s], "op": "%s", "factor": %f})", io, op, factor)}});
}

class NrtBackendTest : public ::testing::Test {
 protected:
  testing::Environment FakeEnvironment(const std::string& faults = "") {
    return {{"FAKE_NRT_DIR", dir_.Join("cores")},
            {"FAKE_NRT_CORES", "4"},
            {"FAKE_NRT_HBM_BYTES", std::to_string(64 << 20)},
            {"FAKE_NRT_FAIL", faults.empty() ? std::nullopt : std::optional<std::string>(faults)},
            {"NEURON_RT_VISIBLE_CORES", std::nullopt}};
  }

  // `sysfs`: the Neuron driver's device directories the daemon sees; none
  // by default (the host's own, if any, must not leak into tests).
  void Start(const std::string& faults = "",
             const std::vector<testing::FakeNeuronDevice>& sysfs = {},
             const std::vector<std::string>& more_args = {}) {
    socket_ = dir_.Join("rtd.sock");
    const std::string sysfs_root = dir_.Join("sysfs");
    std::filesystem::create_directories(sysfs_root);
    testing::WriteFakeNeuronSysfs(sysfs_root, sysfs);
    const std::string config = dir_.WriteFile(
        "rtd.toml", absl::StrFormat("[device]\nnrt_sysfs_root = \"%s\"\n", sysfs_root));
    std::vector<std::string> args = {"--config", config, "--socket", socket_,
                                     "--device-backend", "nrt", "--nrt-library",
                                     NEURON_FAKE_NRT_LIBRARY};
    args.insert(args.end(), more_args.begin(), more_args.end());
    auto daemon = testing::StartDaemon(args, FakeEnvironment(faults));
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    auto session = neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
  }

  // Four floats at each of `count` addresses of a fresh buffer on `core`.
  std::vector<uint64_t> Buffers(uint32_t core, int count) {
    neuronrt::DeviceBuffer buffer = *session_->Allocate(core, 1 << 16);
    std::vector<uint64_t> addresses;
    for (int i = 0; i < count; ++i) addresses.push_back(buffer.device_address + i * 1024);
    buffers_.push_back(buffer);
    return addresses;
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
  std::unique_ptr<neuronrt::Session> session_;
  std::vector<neuronrt::DeviceBuffer> buffers_;
};

TEST_F(NrtBackendTest, ANeffRunsOnACoreWithTheTensorsTheRuntimeReports) {
  Start();
  absl::StatusOr<neuronrt::Session::LoadedNeff> neff =
      session_->LoadNeff(TestNeff("add", 2, 2), "add");
  ASSERT_TRUE(neff.ok()) << neff.status();
  ASSERT_EQ(neff->tensors.size(), 3u);
  EXPECT_EQ(neff->tensors[0].name, "a");
  EXPECT_TRUE(neff->tensors[0].input);
  EXPECT_EQ(neff->tensors[2].name, "out");
  EXPECT_FALSE(neff->tensors[2].input);
  EXPECT_EQ(neff->tensors[2].size_bytes, 16u);
  EXPECT_EQ(neff->tensors[2].shape, (std::vector<uint32_t>{2, 2}));
  EXPECT_EQ(neff->tensors[2].dtype, 6);  // float32
  for (uint32_t core : {0u, 1u}) {
    std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(core);
    const std::vector<uint64_t> at = Buffers(core, 3);
    const std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
    ASSERT_TRUE(stream->CopyToDevice(at[0], a.data(), 16).ok());
    ASSERT_TRUE(stream->CopyToDevice(at[1], b.data(), 16).ok());
    ASSERT_TRUE(stream->Launch(neff->executable_id, at, {}, "add").ok());
    std::vector<float> out(4);
    ASSERT_TRUE(stream->CopyToHost(out.data(), at[2], 16).ok());
    EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44})) << "core " << core;
  }
  // Another process of the host reuses the loaded NEFF and learns its tensors.
  auto other = *neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
  absl::StatusOr<neuronrt::Session::LoadedNeff> again = other->LoadNeff(TestNeff("add", 2, 2));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->executable_id, neff->executable_id);
  EXPECT_EQ(again->tensors.size(), 3u);
}

TEST_F(NrtBackendTest, TensorsOfAnotherCoreAreStagedThroughTheLaunchingCore) {
  Start();
  auto neff = *session_->LoadNeff(TestNeff("scale", 2, 2, 2, 3.0));
  const std::vector<uint64_t> on_core_1 = Buffers(1, 2);
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  const std::vector<float> a = {1, 2, 3, 4};
  ASSERT_TRUE(stream->CopyToDevice(on_core_1[0], a.data(), 16).ok());
  ASSERT_TRUE(stream->Launch(neff.executable_id, on_core_1, {}, "scale").ok());
  std::vector<float> out(4);
  ASSERT_TRUE(stream->CopyToHost(out.data(), on_core_1[1], 16).ok());
  EXPECT_EQ(out, (std::vector<float>{3, 6, 9, 12}));
}

TEST_F(NrtBackendTest, LaunchesOfOneSignatureReuseTheirTensorSets) {
  // The third tensor set the runtime is asked for fails: a first launch
  // takes two, and launches on the same tensors take none after it.
  Start(/*faults=*/"nrt_allocate_tensor_set:1:3");
  auto neff = *session_->LoadNeff(TestNeff("scale", 2, 2, 2, /*factor=*/2));
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  const std::vector<uint64_t> at = Buffers(0, 2);
  std::vector<float> value = {1, 2, 3, 4};
  ASSERT_TRUE(stream->CopyToDevice(at[0], value.data(), 16).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(stream->Launch(neff.executable_id, at, {}, "scale").ok());
    ASSERT_TRUE(stream->Synchronize().ok()) << "launch " << i;
  }
  std::vector<float> out(4);
  ASSERT_TRUE(stream->CopyToHost(out.data(), at[1], 16).ok());
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8}));
  // Other tensors are another signature.
  const std::vector<uint64_t> elsewhere = Buffers(0, 2);
  ASSERT_TRUE(stream->Launch(neff.executable_id, elsewhere, {}, "scale").ok());
  absl::Status failed = stream->Synchronize();
  EXPECT_THAT(std::string(failed.message()), HasSubstr("nrt_allocate_tensor_set"));
}

TEST_F(NrtBackendTest, MemoryFreedAndAllocatedAgainIsNotReachedThroughAnOldTensorSet) {
  Start();
  auto neff = *session_->LoadNeff(TestNeff("copy", 2, 2));
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  std::vector<float> out(4);
  for (float round : {1.0f, 2.0f, 3.0f}) {
    neuronrt::DeviceBuffer buffer = *session_->Allocate(0, 1 << 16);
    const std::vector<uint64_t> at = {buffer.device_address, buffer.device_address + 1024};
    const std::vector<float> value(4, round);
    ASSERT_TRUE(stream->CopyToDevice(at[0], value.data(), 16).ok());
    ASSERT_TRUE(stream->Launch(neff.executable_id, at, {}, "copy").ok());
    ASSERT_TRUE(stream->CopyToHost(out.data(), at[1], 16).ok());
    EXPECT_EQ(out, value) << "round " << round;
    ASSERT_TRUE(session_->Free(buffer).ok());
  }
}

TEST_F(NrtBackendTest, ProfilesShowWhatRanOnTheHostInsteadOfTheCore) {
  Start();
  auto neff = *session_->LoadNeff(TestNeff("add", 2, 2), "add");
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  const std::vector<uint64_t> at = Buffers(0, 3);
  ASSERT_TRUE(session_->StartProfiling({}).ok());
  ASSERT_TRUE(stream->Launch(neff.executable_id, at, {}, "add").ok());
  const uint64_t count = 4;
  ASSERT_TRUE(stream
                  ->Launch(NEURON_RTD_EXEC_BUILTIN_ADD_F32, at,
                           std::span(reinterpret_cast<const uint8_t*>(&count), 8), "aten::add")
                  .ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  ASSERT_TRUE(session_->StopProfiling().ok());
  auto records = session_->DrainProfile();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->commands.size(), 2u);
  // A NEFF is a whole program of the core's engines; the add ran on the
  // host execution path.
  EXPECT_EQ(records->commands[0].engine, neuronrt::Engine::kUnspecified);
  EXPECT_EQ(records->commands[1].engine, neuronrt::Engine::kHost);
  EXPECT_STREQ(neuronrt::EngineName(records->commands[1].engine), "Host");
}

TEST_F(NrtBackendTest, WithoutTheSimPluginNeffsRunAndHostWorkIsRefusedNamingThePlugin) {
  const std::string absent = dir_.Join("absent/libneuron_rtd_sim.so");
  Start("", {}, {"--sim-plugin", absent});
  auto neff = *session_->LoadNeff(TestNeff("add", 2, 2), "add");
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  const std::vector<uint64_t> at = Buffers(0, 3);
  const std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
  ASSERT_TRUE(stream->CopyToDevice(at[0], a.data(), 16).ok());
  ASSERT_TRUE(stream->CopyToDevice(at[1], b.data(), 16).ok());
  ASSERT_TRUE(stream->Launch(neff.executable_id, at, {}, "add").ok());
  std::vector<float> out(4);
  ASSERT_TRUE(stream->CopyToHost(out.data(), at[2], 16).ok());
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));

  std::shared_ptr<neuronrt::Stream> host = *session_->CreateStream(0);
  const uint64_t count = 4;
  absl::Status refused =
      host->Launch(NEURON_RTD_EXEC_BUILTIN_ADD_F32, at,
                   std::span(reinterpret_cast<const uint8_t*>(&count), 8), "aten::add")
          .status();
  if (refused.ok()) refused = host->Synchronize();
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), AllOf(HasSubstr("host execution path"), HasSubstr(absent)));
}

TEST_F(NrtBackendTest, AMalformedNeffIsRefusedBeforeTheRuntimeSeesIt) {
  Start();
  std::string neff = TestNeff("copy", 2, 2);
  neff[8] = 3;  // header_size
  absl::StatusOr<neuronrt::Session::LoadedNeff> refused = session_->LoadNeff(neff);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("header_size"));
  std::string truncated = TestNeff("copy", 2, 2);
  truncated.resize(truncated.size() - 10);
  refused = session_->LoadNeff(truncated);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("data_size"));
  refused = session_->LoadNeff(TestNeff("copy", 2, 2, /*lnc=*/1));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("--lnc 1"));
}

TEST_F(NrtBackendTest, AnUnrecoverableCoreRefusesWorkWhileTheOthersGoOn) {
  Start(/*faults=*/"nrt_execute:101:1");
  auto neff = *session_->LoadNeff(TestNeff("copy", 2, 2));
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  const std::vector<uint64_t> at = Buffers(0, 2);
  ASSERT_TRUE(stream->Launch(neff.executable_id, at, {}, "copy").ok());
  absl::Status failed = stream->Synchronize();
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("NRT_EXEC_UNIT_UNRECOVERABLE"));
  std::shared_ptr<neuronrt::Stream> again = *session_->CreateStream(0);
  ASSERT_TRUE(again->Launch(neff.executable_id, at, {}, "copy").ok());
  failed = again->Synchronize();
  EXPECT_THAT(failed.message(), HasSubstr("core 0 of device 0 has failed"));
  EXPECT_THAT(failed.message(), HasSubstr("neuronctl reset 0"));
  std::shared_ptr<neuronrt::Stream> other_core = *session_->CreateStream(1);
  const std::vector<uint64_t> there = Buffers(1, 2);
  ASSERT_TRUE(other_core->Launch(neff.executable_id, there, {}, "copy").ok());
  EXPECT_TRUE(other_core->Synchronize().ok());
}

TEST_F(NrtBackendTest, NeuronctlShowsAFailedCoreAndResetRestartsTheRuntime) {
  Start(/*faults=*/"nrt_execute:101:1");
  auto neff = *session_->LoadNeff(TestNeff("copy", 2, 2));
  std::shared_ptr<neuronrt::Stream> stream = *session_->CreateStream(0);
  ASSERT_TRUE(stream->Launch(neff.executable_id, Buffers(0, 2), {}, "copy").ok());
  ASSERT_FALSE(stream->Synchronize().ok());
  auto neuronctl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {testing::NeuronctlBinary(), "--address", "unix:" + socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  };

  testing::CommandResult health = neuronctl({"health"});
  EXPECT_EQ(health.exit_code, 1) << "a failed core makes the daemon unhealthy";
  EXPECT_THAT(health.out, HasSubstr("core 0 failed"));
  EXPECT_THAT(health.out, HasSubstr("NRT_EXEC_UNIT_UNRECOVERABLE"));
  testing::CommandResult listed = neuronctl({"ls", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json devices = nlohmann::json::parse(listed.out);
  ASSERT_FALSE(devices.empty());
  EXPECT_THAT(devices.dump(), HasSubstr("NRT_EXEC_UNIT_UNRECOVERABLE"));

  // The runtime starts again: every session of the host ends, the core works.
  std::unique_ptr<neuronrt::Session> bystander =
      *neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
  testing::CommandResult reset = neuronctl({"reset", "0"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_THAT(reset.out, HasSubstr("2 session(s) ended"));
  absl::Status ended = bystander->Allocate(1, 4096).status();
  EXPECT_EQ(ended.code(), absl::StatusCode::kAborted) << ended;
  EXPECT_THAT(std::string(ended.message()), HasSubstr("was closed by neuron-rtd"));

  health = neuronctl({"health"});
  EXPECT_EQ(health.exit_code, 0) << health.out;
  auto session = *neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
  auto again = *session->LoadNeff(TestNeff("copy", 2, 2));
  neuronrt::DeviceBuffer buffer = *session->Allocate(0, 4096);
  std::shared_ptr<neuronrt::Stream> recovered = *session->CreateStream(0);
  const std::vector<uint64_t> at = {buffer.device_address, buffer.device_address + 1024};
  ASSERT_TRUE(recovered->Launch(again.executable_id, at, {}, "copy").ok());
  EXPECT_TRUE(recovered->Synchronize().ok());
  testing::CommandResult stats = neuronctl({"stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_TRUE(nlohmann::json::parse(stats.out)["cores"][0].contains("host_executed_launches"));
}

TEST_F(NrtBackendTest, DevicesAreTheDriversChipsWithTheirLinksWhereSysfsIsReadable) {
  // Four logical cores of two physical each: chips of four physical cores
  // make two devices, linked to each other (and to a chip not this
  // daemon's, left out).
  Start(/*faults=*/"", {{.index = 0, .physical_cores = 4, .connected_devices = {1, 5}},
                        {.index = 1, .physical_cores = 4, .connected_devices = {0},
                         .core_count_readable = false}});
  testing::CommandResult listed = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "ls", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json devices = nlohmann::json::parse(listed.out)["devices"];
  ASSERT_EQ(devices.size(), 2u) << listed.out;
  EXPECT_EQ(devices[0]["topology_source"], "sysfs");
  EXPECT_EQ(devices[0]["instance_type"], "trn2");
  EXPECT_EQ(devices[0]["cores"], 2);
  EXPECT_EQ(devices[0]["connected_devices"], nlohmann::json::array({1}));
  EXPECT_EQ(devices[1]["connected_devices"], nlohmann::json::array({0}));
  EXPECT_EQ(devices[1]["bus_id"], "neuron1");
  testing::CommandResult table = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "ls"});
  EXPECT_THAT(table.out, HasSubstr("topology from: sysfs"));
}

TEST_F(NrtBackendTest, DeviceStatsShowWhatTheRuntimeHoldsAndTheDriversEccCounts) {
  Start(/*faults=*/"", {{.index = 0,
                         .physical_cores = 4,
                         .mem_ecc_uncorrected = 2,
                         .mem_ecc_repairable_uncorrected = 1,
                         .sram_ecc_uncorrected = 0},
                        {.index = 1, .physical_cores = 4}});
  auto admin = *neuronrt::Client::Connect({.address = "unix:" + socket_});
  neuronrt::Stats stats = *admin->GetStats();
  ASSERT_EQ(stats.devices.size(), 2u);
  const neuronrt::EccCounts& ecc = stats.devices[0].ecc;
  EXPECT_EQ(ecc.mem_uncorrected, 2u);
  EXPECT_EQ(ecc.mem_repairable_uncorrected, 1u);
  EXPECT_EQ(ecc.sram_uncorrected, 0u);
  // The driver counts no corrected events; a chip without the files (an
  // older driver) reports none.
  EXPECT_FALSE(ecc.mem_corrected.has_value());
  EXPECT_FALSE(stats.devices[1].ecc.mem_uncorrected.has_value());
  EXPECT_EQ(stats.devices[0].runtime_bytes, 0u);

  // A loaded NEFF takes HBM in the runtime (the fake charges its size);
  // the daemon's own segments are tensors, not runtime memory.
  const std::string bytes = TestNeff("add", 2, 2);
  ASSERT_TRUE(session_->LoadNeff(bytes, "add").ok());
  Buffers(0, 1);
  stats = *admin->GetStats();
  EXPECT_EQ(stats.devices[0].runtime_bytes, bytes.size());
  EXPECT_EQ(stats.devices[0].tensors_bytes, 1u << 16);
  EXPECT_EQ(stats.devices[1].runtime_bytes, 0u);

  // neuronctl shows the same, and what the driver does not report as "-".
  testing::CommandResult shown = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "stats", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const nlohmann::json devices = nlohmann::json::parse(shown.out)["devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]["runtime_bytes"], bytes.size());
  EXPECT_EQ(devices[0]["ecc"], (nlohmann::json{{"mem_uncorrected", 2},
                                               {"mem_repairable_uncorrected", 1},
                                               {"sram_uncorrected", 0}}));
  EXPECT_TRUE(devices[1]["ecc"].empty());
  testing::CommandResult table = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "stats"});
  EXPECT_THAT(table.out, HasSubstr("-/2/1"));
}

TEST_F(NrtBackendTest, TheDriversMemoryAccountingSplitsProgramsFromTheRuntime) {
  // Chip 0's logical cores 0 and 1 are its physical cores 0-3 (LNC=2).
  Start(/*faults=*/"",
        {{.index = 0,
          .physical_cores = 4,
          .core_memory = {{0,
                           {{"tensors", 32 << 20},
                            {"model_code", 1000},
                            {"constants", 200},
                            {"model_shared_scratchpad", 30},
                            {"runtime_memory", 4}}},
                          {1, {{"tensors", 0}}},
                          {2, {{"tensors", 0}}},
                          {3, {{"nonshared_scratchpad", 5}, {"dma_rings", 6}}}}},
         {.index = 1, .physical_cores = 4}});
  auto admin = *neuronrt::Client::Connect({.address = "unix:" + socket_});
  neuronrt::Stats stats = *admin->GetStats();
  ASSERT_EQ(stats.devices.size(), 2u);
  ASSERT_TRUE(stats.devices[0].programs.has_value());
  EXPECT_EQ(stats.devices[0].programs->model_code, 1000u);
  EXPECT_EQ(stats.devices[0].programs->constants, 200u);
  EXPECT_EQ(stats.devices[0].programs->scratchpad, 35u);
  // The runtime's tensors count as its own until the daemon holds segments.
  EXPECT_EQ(stats.devices[0].runtime_bytes, (32u << 20) + 10);
  // Chip 1's driver has no memory nodes: libnrt's count, without parts.
  EXPECT_FALSE(stats.devices[1].programs.has_value());
  EXPECT_EQ(stats.devices[1].runtime_bytes, 0u);
  // Per logical core, as neuron-monitor reports it: core 0 is physical
  // cores 0 and 1, core 1 is 2 and 3.
  ASSERT_EQ(stats.devices[0].core_memory.size(), 2u);
  const auto& first = stats.devices[0].core_memory[0];
  EXPECT_EQ(first.core, 0u);
  EXPECT_EQ(first.tensors, 32u << 20);
  EXPECT_EQ(first.model_code, 1000u);
  EXPECT_EQ(first.constants, 200u);
  EXPECT_EQ(first.scratchpad, 30u);
  EXPECT_EQ(first.runtime, 4u);
  const auto& second = stats.devices[0].core_memory[1];
  EXPECT_EQ(second.core, 1u);
  EXPECT_EQ(second.scratchpad, 5u);
  EXPECT_EQ(second.runtime, 6u);
  EXPECT_TRUE(stats.devices[1].core_memory.empty());
  // Through a grant, only the granted core's.
  ASSERT_TRUE(admin->CreateGrant("tenant", {1}, 0, "test").ok());
  auto inside =
      neuronrt::Client::Connect({.address = "unix:" + dir_.Join("grants/tenant/neuron-rtd.sock")});
  ASSERT_TRUE(inside.ok()) << inside.status();
  absl::StatusOr<neuronrt::Stats> granted = (*inside)->GetStats();
  ASSERT_TRUE(granted.ok()) << granted.status();
  ASSERT_EQ(granted->devices.size(), 1u);
  ASSERT_EQ(granted->devices[0].core_memory.size(), 1u);
  EXPECT_EQ(granted->devices[0].core_memory[0].core, 1u);

  Buffers(0, 1);
  stats = *admin->GetStats();
  EXPECT_EQ(stats.devices[0].tensors_bytes, 1u << 16);
  EXPECT_LT(*stats.devices[0].runtime_bytes, (32u << 20) + 10);
  EXPECT_GE(*stats.devices[0].runtime_bytes, 10u);

  testing::CommandResult shown = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "stats", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const nlohmann::json devices = nlohmann::json::parse(shown.out)["devices"];
  EXPECT_EQ(devices[0]["program_bytes"],
            (nlohmann::json{{"model_code", 1000}, {"constants", 200}, {"scratchpad", 35}}));
  EXPECT_TRUE(devices[1]["program_bytes"].is_null());
  EXPECT_EQ(devices[0]["core_memory"][1],
            (nlohmann::json{{"core", 1}, {"tensors", 0}, {"model_code", 0}, {"constants", 0},
                            {"scratchpad", 5}, {"runtime", 6}}));
  EXPECT_TRUE(devices[1]["core_memory"].empty());
  testing::CommandResult table = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "stats"});
  EXPECT_THAT(table.out, HasSubstr("PROGRAMS"));
}

TEST_F(NrtBackendTest, WithoutSysfsTheRuntimesCountsDescribeTheDevices) {
  Start();
  testing::CommandResult listed = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "ls", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json devices = nlohmann::json::parse(listed.out)["devices"];
  ASSERT_EQ(devices.size(), 1u) << listed.out;
  EXPECT_EQ(devices[0]["topology_source"], "libnrt");
  EXPECT_EQ(devices[0]["cores"], 4);
}

TEST_F(NrtBackendTest, AChipThisDaemonDoesNotDriveIsRefusedNamingIt) {
  testing::WriteFakeNeuronSysfs(dir_.Join("trn1"),
                                {{.index = 0, .physical_cores = 2, .device_name = "Trainium1"}});
  testing::CommandResult result = testing::RunCommand(
      testing::DaemonArgv({"--config",
                           dir_.WriteFile("trn1.toml",
                                          absl::StrFormat("[device]\nnrt_sysfs_root = \"%s\"\n",
                                                          dir_.Join("trn1"))),
                           "--socket", dir_.Join("x.sock"), "--device-backend", "nrt",
                           "--nrt-library", NEURON_FAKE_NRT_LIBRARY}),
      FakeEnvironment());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("Trainium1"));
  EXPECT_THAT(result.err, HasSubstr("neuron-rtd drives Trainium2 and Trainium3"));
}

TEST_F(NrtBackendTest, ALoadTheRuntimeRefusesIsACleanError) {
  Start(/*faults=*/"nrt_load:10");
  absl::StatusOr<neuronrt::Session::LoadedNeff> refused =
      session_->LoadNeff(TestNeff("copy", 2, 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("NRT_UNSUPPORTED_NEFF_VERSION"));
  // The session goes on.
  EXPECT_TRUE(session_->Allocate(0, 4096).ok());
}

TEST_F(NrtBackendTest, ASecondDaemonOnTheSameCoresRefusesToStartSayingWhy) {
  Start();
  const std::string other_socket = dir_.Join("other.sock");
  testing::CommandResult second = testing::RunCommand(
      testing::DaemonArgv({"--socket", other_socket, "--device-backend", "nrt", "--nrt-library",
                           NEURON_FAKE_NRT_LIBRARY}),
      FakeEnvironment());
  EXPECT_NE(second.exit_code, 0);
  EXPECT_THAT(second.err, HasSubstr("a NeuronCore belongs to one process at a time"));
  EXPECT_THAT(second.err, HasSubstr("neuron-ls --wide"));
}

TEST_F(NrtBackendTest, AMissingLibraryIsNamedWithWhatToInstall) {
  testing::CommandResult result = testing::RunCommand(
      testing::DaemonArgv({"--socket", dir_.Join("x.sock"), "--device-backend", "nrt",
                           "--nrt-library", dir_.Join("nowhere/libnrt.so.1")}),
      FakeEnvironment());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("cannot load the Neuron runtime library"));
  EXPECT_THAT(result.err, HasSubstr("aws-neuronx-runtime-lib"));
}

TEST(SimBackendNeffTest, TheSimulatorRefusesANeffNamingTheBackend) {
  testing::TempDir dir;
  const std::string socket = dir.Join("rtd.sock");
  auto daemon = testing::StartDaemon({"--socket", socket});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto session = *neuronrt::Session::Open({.client = {.address = "unix:" + socket}});
  absl::StatusOr<neuronrt::Session::LoadedNeff> refused =
      session->LoadNeff(TestNeff("copy", 2, 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("nrt backend"));
}

}  // namespace
}  // namespace neuron
