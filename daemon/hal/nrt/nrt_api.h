// The part of AWS's Neuron runtime C API (libnrt.so.1, `nrt/nrt.h`) that
// neuron-rtd uses, declared here from its public documentation (nothing of
// AWS's headers is copied; see docs/design/nrt-backend.md for the sources).
// The daemon never links libnrt: it resolves these names with dlsym
// (NrtLibrary), and tests/fake_nrt defines them for the tests. Types keep
// the C ABI: enums are int-sized, structs are laid out as documented.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NRT_API_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NRT_API_H_

#include <stddef.h>
#include <stdint.h>

extern "C" {

// NRT_STATUS (nrt_status.h). Values never change; new ones are appended.
typedef enum {
  NRT_SUCCESS = 0,
  NRT_FAILURE = 1,
  NRT_INVALID = 2,
  NRT_INVALID_HANDLE = 3,
  NRT_RESOURCE = 4,
  NRT_TIMEOUT = 5,
  NRT_HW_ERROR = 6,
  NRT_QUEUE_FULL = 7,
  NRT_LOAD_NOT_ENOUGH_NC = 9,
  NRT_UNSUPPORTED_NEFF_VERSION = 10,
  NRT_UNINITIALIZED = 13,
  NRT_CLOSED = 14,
  NRT_QUEUE_EMPTY = 15,
  NRT_EXEC_UNIT_UNRECOVERABLE = 101,
  NRT_EXEC_BAD_INPUT = 1002,
  NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003,
  NRT_EXEC_COMPLETED_WITH_ERR = 1004,
  NRT_EXEC_NC_BUSY = 1005,
  NRT_EXEC_OOB = 1006,
  NRT_COLL_PENDING = 1100,
  NRT_EXEC_HW_ERR_COLLECTIVES = 1200,
  NRT_EXEC_HW_ERR_HBM_UE = 1201,
  NRT_EXEC_HW_ERR_NC_UE = 1202,
  NRT_EXEC_HW_ERR_DMA_ABORT = 1203,
  NRT_EXEC_SW_NQ_OVERFLOW = 1204,
  NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
} NRT_STATUS;

typedef enum {
  NRT_FRAMEWORK_TYPE_INVALID = 0,
  NRT_FRAMEWORK_TYPE_NO_FW = 1,
  NRT_FRAMEWORK_TYPE_TENSORFLOW = 2,
  NRT_FRAMEWORK_TYPE_PYTORCH = 3,
  NRT_FRAMEWORK_TYPE_MXNET = 4,
} nrt_framework_type_t;

typedef enum {
  NRT_TENSOR_PLACEMENT_DEVICE = 0,
  NRT_TENSOR_PLACEMENT_HOST = 1,
  NRT_TENSOR_PLACEMENT_VIRTUAL = 2,
} nrt_tensor_placement_t;

typedef enum {
  NRT_TENSOR_USAGE_INPUT = 0,
  NRT_TENSOR_USAGE_OUTPUT = 1,
} nrt_tensor_usage_t;

// The element type codes of runtime 2.x headers from 2026 (hardware codes);
// older runtimes numbered them otherwise (NrtDtypeName decides by version).
typedef int nrt_dtype_t;

typedef struct nrt_model nrt_model_t;
typedef struct nrt_tensor nrt_tensor_t;
typedef void nrt_tensor_set_t;

typedef struct {
  char name[256];
  nrt_tensor_usage_t usage;
  size_t size;  // bytes
  nrt_dtype_t dtype;
  uint32_t* shape;
  uint32_t ndim;
} nrt_tensor_info_t;

typedef struct {
  uint64_t tensor_count;
  nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

typedef struct {
  uint64_t rt_major;
  uint64_t rt_minor;
  uint64_t rt_patch;
  uint64_t rt_maintenance;
  char rt_detail[128];
  char git_hash[64];
} nrt_version_t;

// nrt_instance_info_t's family values used here.
enum { NRT_INSTANCE_FAMILY_TRN2 = 5, NRT_INSTANCE_FAMILY_TRN3 = 14 };

typedef struct {
  uint32_t family;
  uint32_t size;
  char arch_name[16];
  char device_revision[8];
} nrt_instance_info_t;

typedef struct {
  size_t bytes_used;
  size_t bytes_limit;
} nrt_vnc_memory_stats_t;

// Required.
NRT_STATUS nrt_init(nrt_framework_type_t framework, const char* framework_version,
                    const char* fal_version);
void nrt_close(void);
NRT_STATUS nrt_get_total_nc_count(uint32_t* count);
NRT_STATUS nrt_get_visible_nc_count(uint32_t* count);
NRT_STATUS nrt_load(const void* neff, size_t size, int32_t vnc, int32_t vnc_count,
                    nrt_model_t** model);
NRT_STATUS nrt_unload(nrt_model_t* model);
NRT_STATUS nrt_get_model_tensor_info(nrt_model_t* model, nrt_tensor_info_array_t** info);
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t* info);
NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t** set);
void nrt_destroy_tensor_set(nrt_tensor_set_t** set);
NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t* set, const char* name,
                                        nrt_tensor_t* tensor);
NRT_STATUS nrt_execute(nrt_model_t* model, const nrt_tensor_set_t* inputs,
                       nrt_tensor_set_t* outputs);
NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t placement, int vnc, size_t size,
                               const char* name, nrt_tensor_t** tensor);
void nrt_tensor_free(nrt_tensor_t** tensor);
NRT_STATUS nrt_tensor_read(const nrt_tensor_t* tensor, void* buffer, size_t offset, size_t size);
NRT_STATUS nrt_tensor_write(nrt_tensor_t* tensor, const void* buffer, size_t offset,
                            size_t size);
NRT_STATUS nrt_tensor_copy(const nrt_tensor_t* source, size_t source_offset,
                           nrt_tensor_t* destination, size_t destination_offset, size_t size);
size_t nrt_tensor_get_size(const nrt_tensor_t* tensor);
NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t* source, size_t offset, size_t size,
                                     const char* name, nrt_tensor_t** slice);
const char* nrt_get_status_as_str(NRT_STATUS status);

// Optional: older runtimes lack some of them.
NRT_STATUS nrt_get_version(nrt_version_t* version, size_t size);
NRT_STATUS nrt_get_instance_info(nrt_instance_info_t* info, size_t size);
NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t* stats, size_t size,
                                    size_t* written);
NRT_STATUS nrt_tensor_memset(nrt_tensor_t* tensor, uint64_t offset, int value, size_t size);

}  // extern "C"

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NRT_API_H_
