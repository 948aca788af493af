// libFuzzer target for loading an executable: the body decoder and its
// bounds (daemon/exec; a NEFF's header, gzip stream and tar), then the
// backend's preparation against the operator's schema (daemon/hal/sim). Whatever bytes a client sends as an
// executable must load or be refused, never crash the daemon. With GCC,
// corpus_replay_main.cc drives it over the seed corpus
// (tests/fuzz/corpus/executable_load) and mutations of it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "daemon/common/os_sys_calls.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/hal/backend_factory.h"
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
                    neuron::rtd::exec::ExecutableBodyKind::kNeff}) {
    neuron::rtd::exec::ExecutableCache cache(SharedBackend());
    (void)cache.Load(neuron::rtd::ContentHash(body), "fuzz", body, kind, /*uid=*/1000);
  }
  return 0;
}
