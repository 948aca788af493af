#include "daemon/server/device_proto.h"

namespace neuron::rtd {

v1::BackendKind ToProto(hal::BackendKind kind) {
  switch (kind) {
    case hal::BackendKind::kSim:
      return v1::BACKEND_KIND_SIM;
    case hal::BackendKind::kHardware:
      return v1::BACKEND_KIND_HARDWARE;
  }
  return v1::BACKEND_KIND_UNSPECIFIED;
}

namespace {

v1::Architecture ArchitectureToProto(hal::Architecture architecture) {
  switch (architecture) {
    case hal::Architecture::kTrainium2:
      return v1::ARCHITECTURE_TRAINIUM2;
    case hal::Architecture::kTrainium3:
      return v1::ARCHITECTURE_TRAINIUM3;
  }
  return v1::ARCHITECTURE_UNSPECIFIED;
}

void DeviceToProto(const hal::Device& device, uint64_t hbm_used, v1::DeviceInfo* out) {
  const hal::DeviceInfo& info = device.info();
  out->set_index(info.index);
  out->set_instance_type(info.instance_type);
  out->set_architecture(ArchitectureToProto(info.architecture));
  out->set_backend(ToProto(info.backend));
  out->set_physical_cores(info.physical_cores);
  out->set_logical_nc_config(info.logical_nc_config);
  for (uint32_t core = 0; core < info.logical_cores(); ++core) {
    v1::CoreInfo* core_info = out->add_cores();
    core_info->set_index(info.first_core_index + core);
    core_info->set_device_index(info.index);
    core_info->set_physical_cores(info.logical_nc_config);
    core_info->set_fault(device.CoreFault(core));
  }
  out->set_hbm_total_bytes(info.hbm_total_bytes);
  out->set_hbm_used_bytes(hbm_used);
  for (uint32_t neighbour : info.connected_devices) out->add_connected_devices(neighbour);
  out->set_bus_id(info.bus_id);
  out->set_stream_priority_levels(info.stream_priority_levels);
  out->set_topology_source(info.topology_source);
}

}  // namespace

void DevicesToProto(const hal::Backend& backend, const memory::MemoryManager& memory,
                    google::protobuf::RepeatedPtrField<v1::DeviceInfo>* out) {
  for (const hal::Device* device : backend.devices()) {
    DeviceToProto(*device, memory.stats(device->info().index).used_bytes, out->Add());
  }
}

void KeepGrantedCores(const session::Grant& grant,
                      google::protobuf::RepeatedPtrField<v1::DeviceInfo>* devices) {
  for (int device = devices->size() - 1; device >= 0; --device) {
    auto* cores = devices->Mutable(device)->mutable_cores();
    for (int core = cores->size() - 1; core >= 0; --core) {
      if (!grant.HasCore(cores->Get(core).index())) cores->DeleteSubrange(core, 1);
    }
    if (cores->empty()) devices->DeleteSubrange(device, 1);
  }
}

}  // namespace neuron::rtd
