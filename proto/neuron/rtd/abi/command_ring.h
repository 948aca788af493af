/*
 * The shared-memory data-plane ABI of neuron-rtd: command rings, command
 * records and the completion page. The one definition, included by the
 * daemon and by libneuronrt alike.
 *
 * Ring protocol: the client writes a whole record at (tail % capacity), then
 * publishes tail += length with a release store, then (after a full fence)
 * rings the doorbell (writes 1 to the stream's eventfd) only when it reads
 * consumer_sleeping == 1. A record never wraps: when it does not fit before
 * the end of the record area the client first writes a PAD record that fills
 * the rest. The daemon reads records in order and publishes head (bytes it
 * has consumed) with a release store; space up to head may be reused. Before
 * it sleeps the daemon stores consumer_sleeping = 1, fences, and reads tail
 * again.
 *
 * Layout rules:
 *  - Every structure has a fixed size and explicit padding; sizes and field
 *    offsets are checked at compile time below. Integers are little-endian
 *    (both ends run on the same host).
 *  - Fields that the two processes hand over concurrently (ring head/tail,
 *    completion values, futex words) are accessed only with atomic
 *    operations (std::atomic_ref or __atomic builtins); every other field is
 *    written before the release store that publishes it.
 *  - The daemon copies each record out of shared memory before it decodes
 *    it, and never trusts a value it reads from shared memory: a client may
 *    rewrite any byte at any time.
 *
 * Versioning: a client whose NEURON_RTD_ABI_VERSION_MAJOR differs from the
 * daemon's must not open a session (Runtime.GetRuntimeInfo tells). Minor
 * versions only add opcodes or use reserved fields that were zero before;
 * the daemon refuses an opcode it does not know with NRT_INVALID.
 */
#ifndef NEURON_RTD_ABI_COMMAND_RING_H_
#define NEURON_RTD_ABI_COMMAND_RING_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NEURON_RTD_ABI_VERSION_MAJOR 1u
/* 2: records of up to 32 KiB and launches of up to 3840 addresses (a
 * compiled graph's inputs and outputs), rings of at least 32 KiB.
 * 3: COLLECTIVE records carry a group of operations (no daemon before 3
 * executed a COLLECTIVE record).
 * 4: a PROFILE record carries the framework's correlation id in the header's
 * `correlation_id` (reserved, always 0, before). */
#define NEURON_RTD_ABI_VERSION_MINOR 4u

/* "NRRG" and "NRCP", little-endian. */
#define NEURON_RTD_RING_MAGIC 0x4752524eu
#define NEURON_RTD_COMPLETION_MAGIC 0x5043524eu

#define NEURON_RTD_CACHE_LINE 64u
/* Records start and end on this boundary, which is also the size of a
 * record header: the space left before the end of the ring always holds at
 * least a PAD record's header. */
#define NEURON_RTD_RECORD_ALIGN 32u
/* Bounds that the daemon enforces on every record. The smallest ring holds
 * the largest record. */
#define NEURON_RTD_MAX_RECORD_BYTES 32768u
#define NEURON_RTD_MAX_OP_NAME_BYTES 128u
#define NEURON_RTD_MAX_LAUNCH_ARGS 3840u
/* Operations in one COLLECTIVE record (one group). */
#define NEURON_RTD_MAX_COLLECTIVE_OPS 512u
#define NEURON_RTD_MIN_RING_BYTES 32768u
#define NEURON_RTD_MAX_RING_BYTES (64u * 1024u * 1024u)

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes in the completion page: the values of neuron.rtd.v1.NrtStatus
 * (the Neuron runtime's NRT_STATUS numbers). */
enum neuron_rtd_status {
  NEURON_RTD_STATUS_SUCCESS = 0,
  NEURON_RTD_STATUS_FAILURE = 1,
  NEURON_RTD_STATUS_INVALID = 2,
  NEURON_RTD_STATUS_INVALID_HANDLE = 3,
  NEURON_RTD_STATUS_RESOURCE = 4,
  NEURON_RTD_STATUS_TIMEOUT = 5,
  NEURON_RTD_STATUS_CLOSED = 14,
  NEURON_RTD_STATUS_EXEC_BAD_INPUT = 1002,
  NEURON_RTD_STATUS_EXEC_OOB = 1006
};

/* Command kinds. 0 is never valid, so zeroed memory is never a command. */
enum neuron_rtd_opcode {
  NEURON_RTD_OP_INVALID = 0,
  /* Filler up to the end of the ring, so that no record wraps. */
  NEURON_RTD_OP_PAD = 1,
  NEURON_RTD_OP_LAUNCH = 2,
  NEURON_RTD_OP_COPY = 3,
  NEURON_RTD_OP_FILL = 4,
  NEURON_RTD_OP_WAIT = 5,
  NEURON_RTD_OP_SIGNAL = 6,
  NEURON_RTD_OP_COLLECTIVE = 7,
  NEURON_RTD_OP_MARKER = 8,
  NEURON_RTD_OP_COUNT_ /* one past the last; not an opcode */
};

/*
 * The control block at offset 0 of a ring region. The record area follows at
 * `header_bytes` and holds `capacity_bytes` (a power of two). `tail` and
 * `head` count bytes since creation and never wrap; a record starts at
 * (offset % capacity_bytes).
 */
struct neuron_rtd_ring_header {
  /* Written once by the daemon before the region is passed. */
  uint32_t magic;
  uint16_t abi_version_major;
  uint16_t abi_version_minor;
  uint32_t header_bytes;
  uint32_t reserved0;
  uint64_t capacity_bytes;
  uint64_t stream_id;
  uint8_t reserved1[NEURON_RTD_CACHE_LINE - 32];

  /* Producer (client) cache line. */
  uint64_t tail;
  uint8_t reserved2[NEURON_RTD_CACHE_LINE - 8];

  /* Consumer (daemon) cache line. */
  uint64_t head;
  uint8_t reserved3[NEURON_RTD_CACHE_LINE - 8];

  /* Doorbell: see the ring protocol above. The doorbell itself is an eventfd
   * passed with the ring. */
  uint32_t consumer_sleeping;
  uint32_t reserved5;
  uint8_t reserved4[NEURON_RTD_CACHE_LINE - 8];
};

/*
 * Every record begins with this header. `length` covers the header, the
 * opcode's payload and the trailing op name, rounded up to
 * NEURON_RTD_RECORD_ALIGN.
 */
struct neuron_rtd_record_header {
  uint32_t length;
  uint16_t opcode;          /* enum neuron_rtd_opcode */
  uint16_t flags;           /* NEURON_RTD_RECORD_FLAG_*; unknown bits refused */
  /* Stream timeline value that completes when this command has finished.
   * Strictly increasing within a stream; PAD records carry 0. */
  uint64_t sequence;
  /* Bytes of op name (UTF-8, no terminator) after the payload, for error
   * context and profiling; 0 for none. */
  uint16_t op_name_bytes;
  uint16_t reserved0;
  uint32_t payload_bytes;
  /* (ABI 1.4) With NEURON_RTD_RECORD_FLAG_PROFILE: the framework's id of the
   * operation that issued the command (Kineto's correlation id; 0 for none),
   * returned with the command's timestamps. Without the flag it must be 0. */
  uint64_t correlation_id;
};

/* Asks for the command's start and end timestamps, its core, stream and
 * engine, in the session's profile buffer (Runtime.DrainProfile). */
#define NEURON_RTD_RECORD_FLAG_PROFILE 0x1u
#define NEURON_RTD_RECORD_FLAGS_KNOWN 0x1u

/* Where a copy reads or writes. */
enum neuron_rtd_location_kind {
  NEURON_RTD_LOCATION_INVALID = 0,
  /* `address` is a device virtual address inside one of the session's
   * segments. */
  NEURON_RTD_LOCATION_DEVICE = 1,
  /* `address` is an offset into the session's staging arena. */
  NEURON_RTD_LOCATION_STAGING = 2,
  /* `address` is an offset into registered host memory `memory_id`. */
  NEURON_RTD_LOCATION_HOST_MEMORY = 3
};

struct neuron_rtd_location {
  uint32_t kind; /* enum neuron_rtd_location_kind */
  uint32_t reserved0;
  uint64_t memory_id;
  uint64_t address;
};

struct neuron_rtd_copy_payload {
  struct neuron_rtd_location src;
  struct neuron_rtd_location dst;
  uint64_t bytes;
};

/* Fills `bytes` at a device address with a repeated 1-, 2-, 4- or 8-byte
 * pattern; `bytes` must be a multiple of the pattern width. */
struct neuron_rtd_fill_payload {
  uint64_t device_address;
  uint64_t bytes;
  uint64_t pattern;
  uint32_t pattern_bytes;
  uint32_t reserved0;
};

/* Blocks the stream until timeline `stream_id` of the same session reaches
 * `value`. Resolved in the daemon, never on the client. */
struct neuron_rtd_wait_payload {
  uint64_t stream_id;
  uint64_t value;
};

/* SIGNAL has no payload: it completes its sequence once every earlier
 * command of the stream has, which is what an event record needs when the
 * stream has no command in flight to attach to. */

/*
 * Runs executable `executable_id` on the stream's core. The payload is
 * followed by `arg_count` device addresses (uint64_t each) and then
 * `scalar_bytes` of immediate operands whose meaning the executable defines.
 */
/*
 * Executables that every daemon has, with ids below
 * NEURON_RTD_FIRST_LOADED_EXECUTABLE; loaded executables get ids from there.
 *
 * NEURON_RTD_EXEC_BUILTIN_ADD_F32: out[i] = a[i] + b[i] over float32.
 *   arguments: a, b, out (device addresses); scalars: uint64_t element count.
 */
#define NEURON_RTD_EXEC_BUILTIN_ADD_F32 1u
#define NEURON_RTD_FIRST_LOADED_EXECUTABLE 1024u

struct neuron_rtd_launch_payload {
  uint64_t executable_id;
  uint32_t arg_count;
  uint32_t scalar_bytes;
};

/* What each rank's operation of a collective means (count: the op's
 * element_count; n: the communicator's size; r: the rank):
 *   ALL_REDUCE      send[count] of every rank, reduced, into every recv[count]
 *   ALL_GATHER      send[count] of rank i into every recv[i*count .. (i+1)*count]
 *   REDUCE_SCATTER  send[n*count] of every rank, reduced, slice r into recv[count]
 *   BROADCAST       the root's send[count] into every other rank's recv[count]
 *   REDUCE          send[count] of every rank, reduced, into the root's recv[count]
 *   SEND, RECV      send[count] to `peer`; recv[count] from `peer` (the k-th SEND
 *                   from a rank to a peer matches the peer's k-th RECV from it)
 *   BARRIER         nothing moves; completes when every rank has arrived
 * Ranks number their operations in the order they issue them (`sequence`,
 * from 0): a rank's collectives (all but SEND and RECV) on the communicator,
 * and separately its SENDs to each peer and its RECVs from each peer. The
 * k-th collective of every rank meets the others' k-th, whatever streams they
 * were issued on and whenever those streams reach them; their kind, count,
 * dtype, op and root must agree. The k-th SEND from a rank to a peer meets
 * that peer's k-th RECV from it. */
enum neuron_rtd_collective_kind {
  NEURON_RTD_COLLECTIVE_INVALID = 0,
  NEURON_RTD_COLLECTIVE_ALL_REDUCE = 1,
  NEURON_RTD_COLLECTIVE_ALL_GATHER = 2,
  NEURON_RTD_COLLECTIVE_REDUCE_SCATTER = 3,
  NEURON_RTD_COLLECTIVE_BROADCAST = 4,
  NEURON_RTD_COLLECTIVE_REDUCE = 5,
  NEURON_RTD_COLLECTIVE_SEND = 6,
  NEURON_RTD_COLLECTIVE_RECV = 7,
  NEURON_RTD_COLLECTIVE_BARRIER = 8,
  NEURON_RTD_COLLECTIVE_KIND_COUNT_
};

enum neuron_rtd_reduce_op {
  NEURON_RTD_REDUCE_NONE = 0,
  NEURON_RTD_REDUCE_SUM = 1,
  NEURON_RTD_REDUCE_PRODUCT = 2,
  NEURON_RTD_REDUCE_MIN = 3,
  NEURON_RTD_REDUCE_MAX = 4,
  NEURON_RTD_REDUCE_AVG = 5,
  /* Each rank's input times `scale`, summed (PyTorch's PREMUL_SUM). */
  NEURON_RTD_REDUCE_PREMUL_SUM = 6,
  NEURON_RTD_REDUCE_OP_COUNT_
};

/* Element types on the wire (collectives and fills of typed data). */
enum neuron_rtd_dtype {
  NEURON_RTD_DTYPE_INVALID = 0,
  NEURON_RTD_DTYPE_FLOAT32 = 1,
  NEURON_RTD_DTYPE_BFLOAT16 = 2,
  NEURON_RTD_DTYPE_FLOAT16 = 3,
  NEURON_RTD_DTYPE_INT8 = 4,
  NEURON_RTD_DTYPE_UINT8 = 5,
  NEURON_RTD_DTYPE_INT32 = 6,
  NEURON_RTD_DTYPE_INT64 = 7,
  NEURON_RTD_DTYPE_BOOL = 8,
  NEURON_RTD_DTYPE_COUNT_
};

/* Bytes per element of a wire dtype; 0 for one that is not known. */
static inline uint32_t neuron_rtd_dtype_bytes(uint32_t dtype) {
  switch (dtype) {
    case NEURON_RTD_DTYPE_FLOAT32: return 4u;
    case NEURON_RTD_DTYPE_BFLOAT16: return 2u;
    case NEURON_RTD_DTYPE_FLOAT16: return 2u;
    case NEURON_RTD_DTYPE_INT8: return 1u;
    case NEURON_RTD_DTYPE_UINT8: return 1u;
    case NEURON_RTD_DTYPE_INT32: return 4u;
    case NEURON_RTD_DTYPE_INT64: return 8u;
    case NEURON_RTD_DTYPE_BOOL: return 1u;
    default: return 0u;
  }
}

/* A COLLECTIVE record's payload: this header, then `op_count` operations.
 * The operations form one group (as NCCL's ncclGroupStart/ncclGroupEnd):
 * the daemon posts them all before it waits for any, so two ranks that each
 * send to the other and then receive from it in one group do not deadlock.
 * The record completes when every operation has. */
struct neuron_rtd_collective_payload {
  uint64_t communicator_handle;
  uint32_t op_count; /* 1 .. NEURON_RTD_MAX_COLLECTIVE_OPS */
  uint32_t reserved0;
};

struct neuron_rtd_collective_op {
  uint32_t kind;      /* enum neuron_rtd_collective_kind */
  uint32_t reduce_op; /* enum neuron_rtd_reduce_op; NONE unless the kind reduces */
  uint32_t dtype;     /* enum neuron_rtd_dtype */
  uint32_t peer;      /* root for BROADCAST and REDUCE, peer rank for SEND/RECV, else 0 */
  uint64_t send_address;
  uint64_t recv_address;
  uint64_t element_count;
  double scale;       /* the PREMUL_SUM factor; 0 otherwise */
  uint64_t sequence;  /* the issue-order number described above */
};

enum neuron_rtd_marker_kind {
  NEURON_RTD_MARKER_INSTANT = 0,
  NEURON_RTD_MARKER_RANGE_PUSH = 1,
  NEURON_RTD_MARKER_RANGE_POP = 2
};

/* A profiling marker; the record's op name is the marker's label. */
struct neuron_rtd_marker_payload {
  uint64_t marker_id;
  uint32_t kind; /* enum neuron_rtd_marker_kind */
  uint32_t reserved0;
};

/*
 * The completion page: a read-only mirror for the client, written only by
 * the daemon. A header, then `slot_count` slots, one per stream.
 */
enum neuron_rtd_session_state {
  NEURON_RTD_SESSION_OPEN = 0,
  /* Sticky: the session was killed, its device reset, or the daemon is
   * stopping. Every wait must end with `session_status`. */
  NEURON_RTD_SESSION_CLOSED = 1
};

struct neuron_rtd_completion_page_header {
  uint32_t magic;
  uint16_t abi_version_major;
  uint16_t abi_version_minor;
  uint32_t slot_count;
  uint32_t session_state;  /* enum neuron_rtd_session_state */
  int32_t session_status;  /* NrtStatus when closed */
  uint32_t reserved0;
  uint8_t reserved1[NEURON_RTD_CACHE_LINE - 24];
};

struct neuron_rtd_completion_slot {
  /* Highest sequence whose command, and every earlier one, has finished. */
  uint64_t completed;
  /* First failed command of the stream that poisoned it (a fault: device
   * memory the session does not own, a malformed record, a lost session):
   * its sequence and NrtStatus. Sticky.
   * error_sequence is 0 while the stream is healthy. The full context comes
   * from Runtime.GetStreamErrors. */
  uint64_t error_sequence;
  int32_t error_status;
  /* Futex word: incremented by the daemon after each publish of `completed`
   * or an error; waiters sleep on it after a bounded spin. */
  uint32_t wake;
  /* Set by a waiter before it sleeps, so the daemon skips FUTEX_WAKE when
   * nobody sleeps. */
  uint32_t waiters;
  uint32_t reserved0;
  /* (ABI 1.1) Commands of the stream that failed without poisoning it: an
   * operator refused its arguments, device memory is intact, and the stream
   * went on (their sequences still complete). Written before `completed`
   * covers them; the client reports each once, at its next synchronization,
   * with the details from Runtime.GetStreamErrors. */
  uint64_t operator_errors;
  uint8_t reserved1[NEURON_RTD_CACHE_LINE - 40];
};

/* The opcode's name, for messages. */
static inline const char* neuron_rtd_opcode_name(uint32_t opcode) {
  switch (opcode) {
    case NEURON_RTD_OP_PAD: return "PAD";
    case NEURON_RTD_OP_LAUNCH: return "LAUNCH";
    case NEURON_RTD_OP_COPY: return "COPY";
    case NEURON_RTD_OP_FILL: return "FILL";
    case NEURON_RTD_OP_WAIT: return "WAIT";
    case NEURON_RTD_OP_SIGNAL: return "SIGNAL";
    case NEURON_RTD_OP_COLLECTIVE: return "COLLECTIVE";
    case NEURON_RTD_OP_MARKER: return "MARKER";
    default: return "UNKNOWN";
  }
}

/* The aligned length of a record with the given payload and op name, or 0
 * when that exceeds NEURON_RTD_MAX_RECORD_BYTES. */
static inline uint32_t neuron_rtd_record_length(uint32_t payload_bytes, uint32_t op_name_bytes) {
  const uint64_t raw =
      (uint64_t)sizeof(struct neuron_rtd_record_header) + payload_bytes + op_name_bytes;
  const uint64_t aligned =
      (raw + NEURON_RTD_RECORD_ALIGN - 1) & ~(uint64_t)(NEURON_RTD_RECORD_ALIGN - 1);
  return aligned > NEURON_RTD_MAX_RECORD_BYTES ? 0u : (uint32_t)aligned;
}

/* Writes a whole record (header, payload, op name, zero padding) at `out`,
 * which must hold neuron_rtd_record_length(payload_bytes, op_name_bytes)
 * bytes. Returns that length, or 0 (writing nothing) when the record would
 * exceed NEURON_RTD_MAX_RECORD_BYTES. The one encoder of the record layout. */
static inline uint32_t neuron_rtd_encode_record(void* out, uint16_t opcode, uint64_t sequence,
                                                const void* payload, uint32_t payload_bytes,
                                                const char* op_name, uint32_t op_name_bytes) {
  const uint32_t length = neuron_rtd_record_length(payload_bytes, op_name_bytes);
  if (length == 0 || op_name_bytes > 0xffffu) return 0;
  struct neuron_rtd_record_header header;
  memset(&header, 0, sizeof(header));
  header.length = length;
  header.opcode = opcode;
  header.sequence = sequence;
  header.op_name_bytes = (uint16_t)op_name_bytes;
  header.payload_bytes = payload_bytes;
  char* bytes = (char*)out;
  memcpy(bytes, &header, sizeof(header));
  if (payload_bytes > 0) memcpy(bytes + sizeof(header), payload, payload_bytes);
  if (op_name_bytes > 0) memcpy(bytes + sizeof(header) + payload_bytes, op_name, op_name_bytes);
  const uint32_t used = (uint32_t)sizeof(header) + payload_bytes + op_name_bytes;
  memset(bytes + used, 0, length - used);
  return length;
}

/* Marks a record written by neuron_rtd_encode_record, before it is
 * published, for profiling under the framework's `correlation_id`. */
static inline void neuron_rtd_mark_record_profiled(void* record, uint64_t correlation_id) {
  struct neuron_rtd_record_header header;
  memcpy(&header, record, sizeof(header));
  header.flags = (uint16_t)(header.flags | NEURON_RTD_RECORD_FLAG_PROFILE);
  header.correlation_id = correlation_id;
  memcpy(record, &header, sizeof(header));
}

#ifdef __cplusplus
} /* extern "C" */
#define NEURON_RTD_STATIC_ASSERT static_assert
#else
#define NEURON_RTD_STATIC_ASSERT _Static_assert
#endif

NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_ring_header) == 4 * NEURON_RTD_CACHE_LINE,
                         "ring header layout changed");
NEURON_RTD_STATIC_ASSERT(offsetof(struct neuron_rtd_ring_header, tail) == NEURON_RTD_CACHE_LINE,
                         "ring tail must start the producer cache line");
NEURON_RTD_STATIC_ASSERT(offsetof(struct neuron_rtd_ring_header, head) ==
                             2 * NEURON_RTD_CACHE_LINE,
                         "ring head must start the consumer cache line");
NEURON_RTD_STATIC_ASSERT(offsetof(struct neuron_rtd_ring_header, consumer_sleeping) ==
                             3 * NEURON_RTD_CACHE_LINE,
                         "doorbell must start its own cache line");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_record_header) == 32,
                         "record header layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_location) == 24, "location layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_copy_payload) == 56, "copy layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_fill_payload) == 32, "fill layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_wait_payload) == 16, "wait layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_launch_payload) == 16, "launch layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_collective_payload) == 16,
                         "collective layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_collective_op) == 56,
                         "collective op layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_collective_payload) +
                                 NEURON_RTD_MAX_COLLECTIVE_OPS *
                                     sizeof(struct neuron_rtd_collective_op) +
                                 NEURON_RTD_MAX_OP_NAME_BYTES + 32u <=
                             NEURON_RTD_MAX_RECORD_BYTES,
                         "a group of the most collective ops must fit one record");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_marker_payload) == 16, "marker layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_completion_page_header) ==
                             NEURON_RTD_CACHE_LINE,
                         "completion page header layout changed");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_completion_slot) == NEURON_RTD_CACHE_LINE,
                         "completion slot must be one cache line");
NEURON_RTD_STATIC_ASSERT(offsetof(struct neuron_rtd_completion_slot, operator_errors) == 32,
                         "completion slot layout changed");
NEURON_RTD_STATIC_ASSERT(NEURON_RTD_MAX_RECORD_BYTES % NEURON_RTD_RECORD_ALIGN == 0,
                         "record bound must be aligned");
NEURON_RTD_STATIC_ASSERT(NEURON_RTD_MAX_RECORD_BYTES <= NEURON_RTD_MIN_RING_BYTES,
                         "the smallest ring must hold the largest record");
NEURON_RTD_STATIC_ASSERT(sizeof(struct neuron_rtd_record_header) +
                                 sizeof(struct neuron_rtd_launch_payload) +
                                 NEURON_RTD_MAX_LAUNCH_ARGS * 8u + NEURON_RTD_MAX_OP_NAME_BYTES <=
                             NEURON_RTD_MAX_RECORD_BYTES,
                         "a launch of the most addresses must fit in a record");

#undef NEURON_RTD_STATIC_ASSERT

#endif /* NEURON_RTD_ABI_COMMAND_RING_H_ */
