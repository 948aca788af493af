#!/usr/bin/env python3
"""Writes the seed corpus of fabric_message_fuzz (corpus/fabric_message/):
for each operation host 0's rank can have pending, the messages host 1's
daemon sends to complete it, in the layout of
proto/neuron/rtd/abi/fabric_message.h. Run after changing that layout or
fabric_message_fuzz.cc's input format; commit the result."""
import pathlib
import struct

HEADER = struct.Struct("<IHH16sIIQIIIIQQQIIIIQd")
assert HEADER.size == 112
MAGIC, VERSION = 0x4446524E, 2
HELLO, DATA, ABORT = 1, 2, 3
REDUCE, RESULT, POINT_TO_POINT = 1, 2, 3
DIRECT, RING, DOUBLING = 0, 1, 2
# Byte 0's bit choosing the ring for all-reduces (fabric_message_fuzz.cc).
BY_RING = 0x40
ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, SEND, BARRIER = 1, 2, 3, 4, 6, 8
SUM, FLOAT32 = 1, 1
KEY = b"k" * 16
COUNT = 4


def message(kind, phase, offset, payload, *, type_=DATA, reduce_op=0, root=0, count=COUNT,
            source_rank=0, dest_rank=0, step=0, algorithm=DIRECT):
    header = HEADER.pack(MAGIC, VERSION, type_, KEY, 1, phase, 0, source_rank, dest_rank, step,
                         algorithm, offset, len(payload), 0, kind, reduce_op, FLOAT32, root,
                         count, 0.0)
    body = header + payload
    return struct.pack("<H", len(body)) + body


def floats(*values):
    return struct.pack(f"<{len(values)}f", *values)


SEEDS = {
    # Recursive doubling: one exchange of the whole buffer.
    "all_reduce": bytes([0, COUNT])
    + message(ALL_REDUCE, REDUCE, 0, floats(1, 2, 3, 4), reduce_op=SUM, step=1,
              algorithm=DOUBLING),
    # The ring: host 0 reduces segment 1 (elements 2-3), then gets segment 0.
    "ring_all_reduce": bytes([BY_RING, COUNT])
    + message(ALL_REDUCE, REDUCE, 8, floats(3, 4), reduce_op=SUM, algorithm=RING)
    + message(ALL_REDUCE, RESULT, 0, floats(1, 2), reduce_op=SUM, algorithm=RING),
    "all_gather": bytes([1, COUNT]) + message(ALL_GATHER, RESULT, 16, floats(5, 6, 7, 8)),
    "reduce_scatter": bytes([2, COUNT])
    + message(REDUCE_SCATTER, REDUCE, 0, floats(1, 1, 1, 1), reduce_op=SUM),
    "broadcast": bytes([3, COUNT]) + message(BROADCAST, RESULT, 0, floats(9, 9, 9, 9), root=1),
    "receive": bytes([4, COUNT])
    + message(SEND, POINT_TO_POINT, 0, floats(1, 2, 3, 4), source_rank=1, dest_rank=0),
    "barrier": bytes([5, 0]) + message(BARRIER, RESULT, 0, b"", count=0),
    "abort": bytes([0, COUNT]) + message(0, 0, 0, b"rank 1 left", type_=ABORT),
    "split_all_reduce": bytes([BY_RING, COUNT])
    + message(ALL_REDUCE, REDUCE, 8, floats(3), reduce_op=SUM, algorithm=RING)
    + message(ALL_REDUCE, REDUCE, 12, floats(4), reduce_op=SUM, algorithm=RING)
    + message(ALL_REDUCE, RESULT, 0, floats(1, 2), reduce_op=SUM, algorithm=RING),
}


def main():
    corpus = pathlib.Path(__file__).resolve().parent / "corpus" / "fabric_message"
    corpus.mkdir(parents=True, exist_ok=True)
    for old in corpus.glob("*.bin"):
        old.unlink()
    for name, data in SEEDS.items():
        (corpus / f"{name}.bin").write_bytes(data)


if __name__ == "__main__":
    main()
