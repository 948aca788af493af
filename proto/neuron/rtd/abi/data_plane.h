/*
 * Messages on a session's data-plane connection: a SOCK_SEQPACKET Unix
 * socket (OpenSessionResponse.data_plane_address) that binds a client
 * process to its session. The client sends one attach message. The daemon
 * refuses it with an attach reply (a non-zero status) and closes, or accepts
 * it by sending the session's completion page and staging arena; later it
 * sends every region it creates for the session. Each region travels as a
 * region message carrying its file descriptors (SCM_RIGHTS). The
 * connection's end is the authoritative signal that the client has gone: the
 * daemon then closes the session at once.
 */
#ifndef NEURON_RTD_ABI_DATA_PLANE_H_
#define NEURON_RTD_ABI_DATA_PLANE_H_

#include <stdint.h>

/* "NRAT", "NRAR", "NRRM", little-endian. */
#define NEURON_RTD_ATTACH_MAGIC 0x5441524eu
#define NEURON_RTD_ATTACH_REPLY_MAGIC 0x5241524eu
#define NEURON_RTD_REGION_MAGIC 0x4d52524eu
#define NEURON_RTD_ATTACH_TOKEN_BYTES 32u

/* Kinds of shared region: the values of neuron.rtd.v1.SharedRegionKind
 * (daemon/server/runtime_service.cc checks that they agree). */
enum neuron_rtd_region_kind {
  NEURON_RTD_REGION_COMPLETION_PAGE = 1,
  NEURON_RTD_REGION_COMMAND_RING = 2,
  NEURON_RTD_REGION_STAGING = 3,
  NEURON_RTD_REGION_HOST_MEMORY = 4
};

#ifdef __cplusplus
extern "C" {
#endif

struct neuron_rtd_attach_message {
  uint32_t magic;
  uint16_t abi_version_major;
  uint16_t abi_version_minor;
  uint64_t session_id;
  uint8_t token[NEURON_RTD_ATTACH_TOKEN_BYTES];
};

struct neuron_rtd_attach_reply {
  uint32_t magic;
  int32_t status; /* NrtStatus: 0 attached; otherwise the daemon closes */
  uint64_t session_id;
};

/*
 * A region: `kind` is a neuron.rtd.v1.SharedRegionKind. Carries one memfd
 * (the memory, sealed against resizing), and for a command ring a second
 * descriptor: the ring's doorbell eventfd.
 */
struct neuron_rtd_region_message {
  uint32_t magic;
  uint32_t kind;
  uint64_t region_id;
  uint64_t size_bytes;
  uint32_t fd_count;
  uint32_t reserved0;
};

#ifdef __cplusplus
} /* extern "C" */
static_assert(sizeof(neuron_rtd_attach_message) == 48, "attach layout changed");
static_assert(sizeof(neuron_rtd_attach_reply) == 16, "attach reply layout changed");
static_assert(sizeof(neuron_rtd_region_message) == 32, "region layout changed");
#endif

#endif /* NEURON_RTD_ABI_DATA_PLANE_H_ */
