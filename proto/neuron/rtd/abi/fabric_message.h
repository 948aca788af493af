/*
 * The messages neuron-rtd daemons exchange over libfabric for communicators
 * that span hosts. The one definition, used by every daemon.
 *
 * A message is this header followed by `bytes` of payload, sent as one
 * libfabric message. Both ends are neuron-rtd daemons of the same major ABI
 * (NEURON_RTD_FABRIC_VERSION); integers are little-endian (every supported
 * host is). A receiver trusts nothing in a message: it checks the magic,
 * version, group key, the sender's host index, the lengths and offsets
 * against what it expects before it copies a byte.
 *
 * Flows. A communicator spanning hosts is known on every daemon by its
 * 16-byte group key (random, shared by the ranks through the c10d store).
 *  - HELLO: once its ranks of the communicator have joined, a daemon sends
 *    one to every other host and waits for one from each before the ranks'
 *    join returns; no data flows to a daemon before it is ready. `index` is
 *    the fingerprint of the hosts and ranks the sender was given, `total`
 *    the largest all-reduce (bytes) it runs by recursive doubling: both must
 *    be every daemon's.
 *  - DATA: the bytes one host moves to another for collective `index`
 *    (phase says which step of the algorithm), or for the `index`-th send
 *    from `source_rank` to `dest_rank`. The bytes of one (index, phase,
 *    source host) arrive as one or more messages at `offset`s into a buffer
 *    of `total` bytes; at least one message is sent even when total is 0.
 *    Algorithms of several steps per phase (a ring, recursive doubling)
 *    number them in `step`; `algorithm` says which one the sender runs.
 *    The collective's description (kind ... scale) lets the receiver check
 *    that every host issued the same collective.
 *  - ABORT: the sender's communicator failed (a rank left, a timeout); the
 *    payload is the reason in UTF-8. Receivers fail the communicator too.
 */
#ifndef NEURON_RTD_ABI_FABRIC_MESSAGE_H_
#define NEURON_RTD_ABI_FABRIC_MESSAGE_H_

#include <stdint.h>

#define NEURON_RTD_FABRIC_MAGIC 0x4446524eu /* "NRFD" */
#define NEURON_RTD_FABRIC_VERSION 2u
#define NEURON_RTD_FABRIC_GROUP_KEY_BYTES 16u
/* The longest ABORT reason a daemon sends. */
#define NEURON_RTD_FABRIC_MAX_REASON_BYTES 1024u

enum neuron_rtd_fabric_type {
  NEURON_RTD_FABRIC_HELLO = 1,
  NEURON_RTD_FABRIC_DATA = 2,
  NEURON_RTD_FABRIC_ABORT = 3
};

/* Which step of a collective a DATA message belongs to. */
enum neuron_rtd_fabric_phase {
  /* Inputs, or partial reductions, for the receiving host to reduce. */
  NEURON_RTD_FABRIC_PHASE_REDUCE = 1,
  /* Results (or inputs) for the receiving host to copy out. */
  NEURON_RTD_FABRIC_PHASE_RESULT = 2,
  /* A send to a rank of the receiving host. */
  NEURON_RTD_FABRIC_PHASE_POINT_TO_POINT = 3
};

/* How a collective's data moves between hosts. */
enum neuron_rtd_fabric_algorithm {
  /* Each host sends each other host its share in one step. */
  NEURON_RTD_FABRIC_ALGORITHM_DIRECT = 0,
  /* All-reduce: a ring reduce-scatter then a ring all-gather, H-1 steps
   * each, every host sending to the next host only. */
  NEURON_RTD_FABRIC_ALGORITHM_RING = 1,
  /* All-reduce of small buffers: log2(H) exchanges of the whole buffer with
   * the host whose index differs in one bit (hosts past the largest power of
   * two fold into a partner first: step 0). */
  NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING = 2
};

struct neuron_rtd_fabric_header {
  uint32_t magic;
  uint16_t version;
  uint16_t type; /* enum neuron_rtd_fabric_type */
  uint8_t group_key[NEURON_RTD_FABRIC_GROUP_KEY_BYTES];
  uint32_t source_host; /* the sender's host index in the communicator */
  uint32_t phase;       /* enum neuron_rtd_fabric_phase (DATA) */
  uint64_t index;       /* collective number, or the send's per-pair number */
  uint32_t source_rank; /* POINT_TO_POINT: sending rank */
  uint32_t dest_rank;   /* POINT_TO_POINT: receiving rank */
  uint32_t step;        /* the algorithm's step within the phase */
  uint32_t algorithm;   /* enum neuron_rtd_fabric_algorithm (DATA) */
  uint64_t offset;      /* of this payload in the (index, phase) buffer */
  uint64_t bytes;       /* payload bytes after the header */
  uint64_t total;       /* bytes of the whole (index, phase) buffer */
  /* The collective as the sender's ranks issued it. */
  uint32_t kind;      /* enum neuron_rtd_collective_kind */
  uint32_t reduce_op; /* enum neuron_rtd_reduce_op */
  uint32_t dtype;     /* enum neuron_rtd_dtype */
  uint32_t root;      /* BROADCAST and REDUCE */
  uint64_t element_count;
  double scale;
};

#ifdef __cplusplus
static_assert(sizeof(struct neuron_rtd_fabric_header) == 112, "fabric header layout changed");
#endif

#endif /* NEURON_RTD_ABI_FABRIC_MESSAGE_H_ */
