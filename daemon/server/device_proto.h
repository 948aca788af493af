// HAL device descriptions in their wire form.
#ifndef NEURON_RTD_DAEMON_SERVER_DEVICE_PROTO_H_
#define NEURON_RTD_DAEMON_SERVER_DEVICE_PROTO_H_

#include "daemon/hal/device.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/session/grant.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "neuron/rtd/v1/common.pb.h"

namespace neuron::rtd {

v1::BackendKind ToProto(hal::BackendKind kind);

// Every device of the backend, in index order, with the HBM its sessions hold.
void DevicesToProto(const hal::Backend& backend, const memory::MemoryManager& memory,
                    google::protobuf::RepeatedPtrField<v1::DeviceInfo>* out);

// What a grant's peer sees: its cores, on the devices that have them.
void KeepGrantedCores(const session::Grant& grant,
                      google::protobuf::RepeatedPtrField<v1::DeviceInfo>* devices);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_DEVICE_PROTO_H_
