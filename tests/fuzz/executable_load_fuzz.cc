// libFuzzer target for loading an executable: the body decoder and its
// bounds (daemon/exec; a NEFF's header, gzip stream and tar; an NKI
// kernel's checks), then the backend's preparation against the operator's
// schema (daemon/hal/sim). An NKI kernel that loads is also run by the
// interpreter on zeroed HBM, since its checks are what keep it inside its
// memory. Whatever bytes a client sends as an executable must load or be
// refused, never crash the daemon. With GCC,
// corpus_replay_main.cc drives it over the seed corpus
// (tests/fuzz/corpus/executable_load) and mutations of it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <variant>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "daemon/common/os_sys_calls.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/hal/backend_factory.h"
#include "daemon/hal/sim/nki/nki_interpreter.h"
#include "neuron/rtd/content_hash.h"

namespace {

neuron::rtd::hal::Backend& SharedBackend() {
  static neuron::rtd::hal::Backend* backend = [] {
    auto created = neuron::rtd::hal::CreateBackend(
        neuron::rtd::hal::BackendOptions{.kind = "sim", .logical_nc_config = 0,
                                         .sim_preset = "dev"},
        neuron::rtd::DefaultOsSysCalls());
    if (!created.ok()) __builtin_trap();
    return created->release();
  }();
  return *backend;
}

// Runs a kernel that loaded when its HBM tensors are small.
void RunLoadedKernel(const neuron::rtd::NkiKernelPlan& plan) {
  constexpr uint64_t kMaxBytes = 4 << 20;
  uint64_t total = 0;
  std::vector<std::vector<uint8_t>> memory;
  std::vector<neuron::rtd::nki::NkiHbmBuffer> buffers;
  for (const neuron::rtd::NkiAllocation& allocation : plan.allocations) {
    if (allocation.space != neuron::rtd::NkiSpace::kHbm) continue;
    const uint64_t bytes =
        static_cast<uint64_t>(allocation.elements) * neuron::rtd::NkiElementBytes(allocation.dtype);
    total += bytes;
    if (total > kMaxBytes) return;
    if (allocation.address_index >= buffers.size()) buffers.resize(allocation.address_index + 1);
    memory.emplace_back(bytes);
    buffers[allocation.address_index] = {.data = memory.back().data(), .bytes = bytes};
  }
  static neuron::rtd::nki::NkiCoreMemory core(neuron::rtd::NkiTarget{});
  if (!core.Holds(plan.target)) return;
  (void)neuron::rtd::nki::RunNkiKernel(plan, buffers, core);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As the daemon does: malformed messages are not worth a log line each.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  // A cache per input: each load is judged alone, and memory stays flat.
  // The body is tried as each kind a loader may announce.
  for (auto kind : {neuron::rtd::exec::ExecutableBodyKind::kEagerOp,
                    neuron::rtd::exec::ExecutableBodyKind::kGraph,
                    neuron::rtd::exec::ExecutableBodyKind::kNeff,
                    neuron::rtd::exec::ExecutableBodyKind::kNki}) {
    neuron::rtd::exec::ExecutableCache cache(SharedBackend());
    auto loaded = cache.Load(neuron::rtd::ContentHash(body), "fuzz", body, kind, /*uid=*/1000);
    if (!loaded.ok()) continue;
    const auto& spec = loaded->hold.executable()->spec;
    if (const auto* kernel = std::get_if<neuron::rtd::NkiKernelPlan>(&spec)) {
      RunLoadedKernel(*kernel);
    }
  }
  return 0;
}
