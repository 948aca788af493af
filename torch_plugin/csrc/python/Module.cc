// torch_neuronx._C: what the Python package needs beyond PyTorch's generic
// device APIs (which reach the backend through the guard, hooks and
// allocator registered in csrc/runtime).
#include <torch/csrc/Generator.h>
#include <torch/extension.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "csrc/aten/GenericOp.h"
#include "csrc/python/CompiledGraphBindings.h"
#include "csrc/python/NeffBindings.h"
#include "csrc/python/NkiBindings.h"
#include "csrc/python/DistributedBindings.h"
#include "csrc/python/MemoryHistoryBindings.h"
#include "csrc/python/ProfilerBindings.h"
#include "csrc/python/SharingBindings.h"
#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/NeuronGenerator.h"

namespace torch_neuronx {
namespace {

namespace py = pybind11;

// Asks neuron-rtd with the GIL released (the call may wait on the daemon);
// a failure raises, saying what was being asked.
template <typename Ask>
auto AskDaemon(Ask ask, std::string_view what) {
  decltype(ask()) answer;
  {
    py::gil_scoped_release no_gil;
    answer = ask();
  }
  ThrowIfError(answer.status(), what);
  return *std::move(answer);
}

py::dict StatArrayDict(const c10::CachingAllocator::StatArray& stats) {
  py::dict result;
  const char* names[] = {"all", "small_pool", "large_pool"};
  for (size_t i = 0; i < stats.size(); ++i) {
    py::dict stat;
    stat["current"] = stats[i].current;
    stat["peak"] = stats[i].peak;
    stat["allocated"] = stats[i].allocated;
    stat["freed"] = stats[i].freed;
    result[names[i]] = stat;
  }
  return result;
}

py::dict MemoryStats(c10::DeviceIndex device) {
  CheckDevice(device);
  const c10::CachingDeviceAllocator::DeviceStats stats = NeuronAllocator().getDeviceStats(device);
  py::dict result;
  result["allocation"] = StatArrayDict(stats.allocation);
  result["segment"] = StatArrayDict(stats.segment);
  result["active"] = StatArrayDict(stats.active);
  result["allocated_bytes"] = StatArrayDict(stats.allocated_bytes);
  result["reserved_bytes"] = StatArrayDict(stats.reserved_bytes);
  result["active_bytes"] = StatArrayDict(stats.active_bytes);
  result["requested_bytes"] = StatArrayDict(stats.requested_bytes);
  result["num_alloc_retries"] = stats.num_alloc_retries;
  result["num_ooms"] = stats.num_ooms;
  result["num_device_alloc"] = stats.num_device_alloc;
  result["num_device_free"] = stats.num_device_free;
  return result;
}

// The chip (neuron device) that holds torch device `device`'s NeuronCore,
// as the daemon lists it, and that core's host-wide index.
std::pair<neuronrt::DeviceInfo, uint32_t> ChipOf(int device) {
  CheckDevice(device);
  Runtime& runtime = GetRuntime();
  const uint32_t core = runtime.session().cores().at(device);
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices =
      runtime.session().client().ListDevices();
  ThrowIfError(devices.status(), "listing neuron devices");
  for (const neuronrt::DeviceInfo& chip : *devices) {
    if (std::find(chip.cores.begin(), chip.cores.end(), core) != chip.cores.end()) {
      return {chip, core};
    }
  }
  TORCH_CHECK(false, "neuron-rtd lists no device with core ", core);
}

// What torch.neuron.get_device_properties reports of torch device `device`.
py::dict DeviceProperties(int device) {
  std::pair<neuronrt::DeviceInfo, uint32_t> found;
  {
    py::gil_scoped_release no_gil;
    found = ChipOf(device);
  }
  const auto& [chip, core] = found;
  py::dict properties;
  properties["architecture"] = chip.architecture;
  properties["instance_type"] = chip.instance_type;
  properties["backend"] = chip.backend;
  properties["neuron_device"] = chip.index;
  properties["core"] = core;
  properties["cores_per_device"] = chip.cores.size();
  properties["logical_nc_config"] = chip.logical_nc_config;
  properties["device_total_memory"] = chip.hbm_total_bytes;
  properties["device_used_memory"] = chip.hbm_used_bytes;
  return properties;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_neuronx native backend (PrivateUse1) on neuron-rtd";
  m.def("_set_daemon_binary", [](std::string path, std::string compiler_python) {
    Runtime::SetDaemonBinary(std::move(path), std::move(compiler_python));
  });
  m.def("_device_count", [] {
    py::gil_scoped_release no_gil;
    return static_cast<int>(DeviceCountNoThrow());
  });
  m.def("_init", [] {
    py::gil_scoped_release no_gil;
    (void)GetRuntime();
  });
  m.def("_is_initialized", [] { return Runtime::GetIfOpen() != nullptr; });
  m.def("_reachable", [] {
    py::gil_scoped_release no_gil;
    return Runtime::Reachable();
  });
  m.def("_is_in_bad_fork", &Runtime::InBadFork);
  m.def("_session_info", [] {
    Runtime& runtime = GetRuntime();
    py::dict info;
    info["session_id"] = runtime.session().id();
    info["address"] = runtime.session().client().address().target;
    info["cores"] = runtime.session().cores();
    return info;
  });
  m.def("_synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    ThrowIfError(GetRuntime().SynchronizeDevice(device < 0 ? CurrentDevice() : device),
                 "neuron synchronize");
  });
  m.def("_default_stream", [](int device) {
    CheckDevice(device);
    const c10::StreamData3 packed = DefaultStream(device).pack3();
    return py::make_tuple(packed.stream_id, packed.device_index,
                          static_cast<int>(packed.device_type));
  });
  m.def("_fallback_ops", &FallbackOps);
  m.def("_op_stats", [] {
    const GenericOpStats stats = GetGenericOpStats();
    py::dict result;
    result["executables"] = stats.executables;
    result["launches"] = stats.launches;
    result["plan_cache_hits"] = stats.plan_cache_hits;
    result["cpu_fallbacks"] = stats.cpu_fallbacks;
    return result;
  });
  m.def("_memory_stats", &MemoryStats);
  // The daemon's cores: engine time and commands so far (benchmarks).
  m.def("_core_stats", [] {
    const std::vector<neuronrt::CoreStats> cores =
        AskDaemon([] { return GetRuntime().session().client().GetStats(); },
                  "asking neuron-rtd for its cores' statistics")
            .cores;
    py::list result;
    for (const neuronrt::CoreStats& core : cores) {
      py::dict entry;
      entry["core"] = core.core;
      entry["busy_ns"] = core.busy_ns;
      entry["recent_compute_utilization"] = core.recent_compute_utilization;
      entry["completed"] = core.executions_completed;
      entry["failed"] = core.executions_failed;
      result.append(entry);
    }
    return result;
  });
  // Every session of the daemon, of every user (torch.neuron.list_processes).
  m.def("_list_sessions", [] {
    const std::vector<neuronrt::SessionInfo> sessions =
        AskDaemon([] { return GetRuntime().session().client().ListSessions(); },
                  "asking neuron-rtd for its sessions");
    py::list result;
    for (const neuronrt::SessionInfo& session : sessions) {
      py::dict entry;
      entry["session_id"] = session.session_id;
      entry["pid"] = session.owner.pid;
      entry["uid"] = session.owner.uid;
      entry["client_name"] = session.client_name;
      entry["cores"] = session.cores;
      entry["hbm_used_bytes"] = session.hbm_used_bytes;
      result.append(entry);
    }
    return result;
  });
  m.def("_device_properties", &DeviceProperties);
  m.def("_stream_priority", [](int device, int64_t stream_id) {
    CheckDevice(device);
    return AskDaemon([&] { return GetRuntime().StreamPriority(device, stream_id); },
                     "asking a neuron stream's priority");
  });
  m.def("_stream_priority_range", [] {
    const int highest = AskDaemon([] { return GetRuntime().HighestStreamPriority(); },
                                  "asking neuron-rtd for stream priorities");
    return py::make_tuple(0, highest);
  });
  m.def("_memory_info", [](int device) {
    CheckDevice(device);
    return NeuronAllocator().getMemoryInfo(device);
  });
  // The daemon's cap on what this process may hold on `device` (None: no
  // cap); set_per_process_memory_fraction.
  m.def("_set_memory_cap", [](int device, std::optional<uint64_t> cap_bytes) {
    CheckDevice(device);
    Runtime& runtime = GetRuntime();
    ThrowIfError(runtime.session().SetMemoryCap(runtime.core(device), cap_bytes),
                 absl::StrFormat("capping neuron:%d's memory", device));
  });
  m.def("_empty_cache", [] { NeuronAllocator().emptyCache(); });
  m.def("_reset_peak_memory_stats", [](int device) {
    CheckDevice(device);
    NeuronAllocator().resetPeakStats(device);
  });
  m.def("_reset_accumulated_memory_stats", [](int device) {
    CheckDevice(device);
    NeuronAllocator().resetAccumulatedStats(device);
  });
  m.def("_manual_seed_all", [](uint64_t seed) { ManualSeedAll(seed); });
  BindCompiledGraph(m);
  BindNeff(m);
  BindNki(m);
  BindDistributed(m);
  BindSharing(m);
  BindMemoryHistory(m);
  BindProfiler(m);
  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(DefaultGenerator(device)));
  });
}

}  // namespace torch_neuronx
