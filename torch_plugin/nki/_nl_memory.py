"""nki.language's tensors and data movement: creating tiles and HBM
tensors, nl.load / nl.store (DMAs), copies, and what tile assignment
(`tile[...] = value`, `tile += value`) lowers to."""

import math
import sys

from nki import _dtypes, _target, _trace, isa as nisa
from nki._errors import fail, unsupported
from nki._tensor import NkiTensor, contiguous_strides
from nki._trace import psum, sbuf, shared_hbm


class par_dim(int):
    """Marks the partition dimension of a tile's shape (the legacy API's
    nl.par_dim: block dimensions may come before it)."""


def _check_shape(shape, buffer, dtype, name):
    """(sizes, partition dimension) of a new tensor's shape."""
    shape = tuple(shape if isinstance(shape, (tuple, list)) else (shape,))
    marked = [d for d, size in enumerate(shape) if isinstance(size, par_dim)]
    sizes = tuple(int(s) for s in shape)
    if any(s <= 0 for s in sizes):
        fail("err_invalid_shape", f"tensor '{name}' has shape {list(sizes)}: sizes are positive")
    if len(marked) > 1:
        fail("err_invalid_shape", f"tensor '{name}' marks {len(marked)} partition dimensions")
    partition_dim = marked[0] if marked else 0
    if buffer.space == "hbm":
        return sizes, None
    target = _target.current()
    if len(sizes) < 2:
        # A tile has a partition and a free dimension.
        sizes = sizes + (1,)
    partitions = sizes[partition_dim]
    if partitions > target.partitions:
        fail("err_num_partition_exceed_arch_limit", f"number of partitions {partitions} exceed "
             f"architecture limitation of {target.partitions}.")
    free_bytes = math.prod(sizes) // partitions * _dtypes.itemsize(dtype)
    if buffer.space == "psum":
        blocks = math.prod(sizes[:partition_dim])
        block_bytes = free_bytes // blocks
        banks = target.psum_partition_bytes // target.psum_bank_bytes
        if block_bytes > target.psum_bank_bytes:
            fail("err_psum_tile_exceed_bank", f"a PSUM tile holds at most one 2 KiB bank per "
                 f"partition ({target.psum_bank_bytes // 4} float32); '{name}' "
                 f"{list(sizes)} of {_dtypes.name(dtype)} needs {block_bytes} bytes")
        needed = -(-blocks // _psum_blocks_per_bank(block_bytes))
        if needed > banks:
            fail("err_out_of_memory", f"PSUM tile '{name}' {list(sizes)} has {blocks} blocks of "
                 f"{block_bytes} bytes per partition, {needed} banks' worth; PSUM has {banks}")
    elif free_bytes > target.sbuf_partition_bytes:
        fail("err_out_of_memory", f"SBUF tile '{name}' {list(sizes)} needs {free_bytes} bytes per "
             f"partition; a partition has {target.sbuf_partition_bytes}")
    return sizes, partition_dim


def _psum_blocks_per_bank(block_bytes):
    """How many blocks of a PSUM tile share a bank: as many as fit, so that
    no block crosses a bank's boundary (an accumulation stays in its bank)."""
    return max(1, _target.current().psum_bank_bytes // block_bytes)


def ndarray(shape, dtype, buffer=sbuf, name="", address=None):
    """A new tensor in `buffer` (uninitialized). nl.shared_hbm tensors are
    the kernel's outputs when it returns them."""
    if buffer is None:
        buffer = sbuf
    if not isinstance(buffer, _trace.Buffer):
        fail("err_invalid_buffer", f"buffer={buffer!r}: use nl.sbuf, nl.psum, nl.hbm or "
             "nl.shared_hbm")
    dtype = _dtypes.normalize(dtype)
    if getattr(dtype, "packed", False):
        unsupported(f"a tensor of nl.{dtype.name}", "the MX formats are NeuronCore-v4's (trn3); "
                    "this simulator models trn1 and trn2")
    shape, partition_dim = _check_shape(shape, buffer, dtype, name or "ndarray")
    trace = _trace.current()
    if buffer.space == "hbm":
        if buffer is shared_hbm:
            allocation = trace.shared_output(shape, dtype, name)
        else:
            allocation = trace.allocate(buffer, dtype, shape, name, role="scratch")
        allocation.elements = math.prod(shape)
        if address is not None:
            fail("err_invalid_address", "address= places SBUF and PSUM tiles, not HBM tensors")
        return NkiTensor(allocation, shape, contiguous_strides(shape))
    partitions = shape[partition_dim]
    blocks, free = shape[:partition_dim], shape[partition_dim + 1:]
    # Blocks lie side by side in each partition; in PSUM, evenly spaced in
    # its banks, none across a bank's boundary.
    block_elements = math.prod(free)
    if buffer is psum and blocks:
        bank_bytes = _target.current().psum_bank_bytes
        per_bank = _psum_blocks_per_bank(block_elements * _dtypes.itemsize(dtype))
        block_elements = bank_bytes // per_bank // _dtypes.itemsize(dtype)
    row = math.prod(blocks) * block_elements
    allocation = trace.allocate(buffer, dtype, (partitions, row), name)
    if address is not None:
        _place(allocation, address, dtype)
    strides = tuple(s * block_elements for s in contiguous_strides(blocks)) + (row,) + \
        contiguous_strides(free)
    return NkiTensor(allocation, shape, strides, 0, partition_dim)


def _place(allocation, address, dtype):
    """A tile at `address` = (start partition, byte offset in each
    partition), as the kernel asks."""
    target = _target.current()
    try:
        partition, offset = (int(value) for value in address)
    except (TypeError, ValueError):
        fail("err_invalid_address", f"address={address!r}: give (start partition, byte offset)")
    partitions = allocation.shape[0]
    # Where an engine's access may start (the architecture guide).
    allowed = (0,) if partitions > 64 else (0, 64) if partitions > 32 else (0, 32, 64, 96)
    if partition not in allowed or partition + partitions > target.partitions:
        fail("err_invalid_address", f"a tile of {partitions} partitions starts at partition "
             f"{', '.join(map(str, allowed))}; address={address!r}")
    capacity = target.psum_partition_bytes if allocation.space == "psum" \
        else target.sbuf_partition_bytes
    size = allocation.free_elements * allocation.element_bytes
    element = _dtypes.itemsize(dtype)
    if offset < 0 or offset % element or offset + size > capacity:
        fail("err_invalid_address", f"{size} bytes per partition at byte {offset} do not fit "
             f"the {capacity} of a {allocation.space.upper()} partition (offsets are multiples of "
             f"the element size)")
    if allocation.space == "psum" and offset % target.psum_bank_bytes:
        fail("err_invalid_address", f"a PSUM tile starts on a {target.psum_bank_bytes}-byte bank "
             f"boundary; address={address!r}")
    allocation.partition_start = partition
    allocation.byte_offset = offset
    allocation.fixed = True


def full(shape, fill_value, dtype, buffer=sbuf, name=""):
    tile = ndarray(shape, dtype, buffer, name)
    nisa.memset(tile, fill_value)
    return tile


def zeros(shape, dtype, buffer=sbuf, name=""):
    return full(shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=sbuf, name=""):
    return full(shape, 1, dtype, buffer, name)


def ndarray_like(x, dtype=None, buffer=None, name=""):
    return ndarray(x.shape, dtype or x.dtype, buffer or x.buffer, name)


empty_like = ndarray_like


def zeros_like(x, dtype=None, buffer=None, name=""):
    return zeros(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def _tile_shape(src):
    # A 1-D tensor loads along the partitions, one element each: dim 0 is
    # the partition dimension in both APIs.
    return src.shape + (1,) if len(src.shape) == 1 else src.shape


def load(src, dtype=None, name=""):
    """An SBUF tile holding `src` (an HBM tensor), by DMA."""
    nisa.check_tensor(src, "src", "load")
    if src._allocation.space != "hbm":
        fail("err_unsupported_memory", "Expected operand 'src' of 'load' to be in address space "
             f"'hbm', but got a tile in '{src._allocation.space}' instead.")
    tile = ndarray(_tile_shape(src), dtype or src.dtype, sbuf, name)
    nisa.dma_copy(tile, src)
    return tile


def store(dst, value):
    """Writes tile `value` into HBM tensor `dst`, by DMA (PSUM through SBUF)."""
    nisa.check_tensor(dst, "dst", "store")
    nisa.check_tensor(value, "value", "store")
    if dst._allocation.space != "hbm":
        fail("err_unsupported_memory", "Expected operand 'dst' of 'store' to be in address space "
             f"'hbm', but got a tile in '{dst._allocation.space}' instead.")
    if dst.size != value.size:
        fail("err_store_dst_shape_smaller_than_other_shape" if dst.size < value.size
             else "err_shape_mismatch",
             f"store of value{list(value.shape)} into dst{list(dst.shape)}: element counts differ")
    if value._allocation.space == "psum":
        staged = ndarray(value.shape, value.dtype, sbuf)
        nisa.tensor_copy(staged, value)
        value = staged
    nisa.dma_copy(dst, value)


def copy(x, dtype=None):
    """A new SBUF tile with x's values."""
    tile = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_copy(tile, x)
    return tile


def load_transpose2d(src, dtype=None):
    """src[K, M] (HBM) loaded as the SBUF tile [M, K], by a transposing DMA."""
    nisa.check_tensor(src, "src", "load_transpose2d")
    if src._allocation.space != "hbm" or src.ndim != 2:
        fail("err_unsupported_memory", "load_transpose2d reads a 2-D HBM tensor")
    tile = ndarray((src.shape[1], src.shape[0]), dtype or src.dtype, sbuf)
    nisa.dma_transpose(tile, src)
    return tile


def broadcast_to(x, shape, dtype=None):
    """x repeated along its dimensions of size 1 to `shape`. A tile's
    partitions are repeated by a DMA into a new tile (the engines read one
    partition per lane); free dimensions by a view."""
    view = x.broadcast_to(shape)
    if x._allocation.on_chip and x.partitions == 1 and view.partitions > 1:
        spread = ndarray(view.shape, dtype or x.dtype, sbuf)
        nisa.dma_copy(spread, view)
        return spread
    if dtype is not None and _dtypes.normalize(dtype) != x.dtype:
        return copy(view, dtype)
    return view


def expand_dims(x, axis):
    """x with a dimension of size 1 inserted at `axis` (a view)."""
    return x.expand_dims(axis)


def shared_constant(constant, dtype=None):
    """A constant known while tracing (a NumPy array or a list) as an HBM
    tensor of the kernel: written by the kernel's first instructions."""
    import numpy
    values = numpy.asarray(constant)
    dtype = _dtypes.normalize(dtype if dtype is not None else values.dtype)
    shape = values.shape if values.ndim else (1,)
    flat = values.reshape(-1)
    tensor = ndarray(shape, dtype, _trace.hbm, name="shared_constant")
    rows = flat.size
    staging = ndarray((min(rows, 128), -(-rows // 128) if rows > 128 else 1), dtype, sbuf)
    columns = staging.shape[1]
    for p in range(staging.shape[0]):
        for c in range(columns):
            index = p * columns + c
            if index < rows:
                nisa.memset(staging[p:p + 1, c:c + 1], float(flat[index]))
    flat_view = tensor.reshape((flat.size,))
    full_rows = rows // columns
    if full_rows:
        nisa.dma_copy(flat_view[0:full_rows * columns].reshape((full_rows, columns)),
                      staging[0:full_rows, :])
    if rows % columns:
        nisa.dma_copy(flat_view[full_rows * columns:rows].reshape((1, rows % columns)),
                      staging[full_rows:full_rows + 1, 0:rows % columns])
    return tensor


def shared_identity_matrix(n, dtype=_dtypes.normalize("uint8"), dst=None):
    """The n x n identity (n <= 128) as an SBUF tile: iota and a compare."""
    if n > _target.current().partitions:
        fail("err_num_partition_exceed_arch_limit", f"shared_identity_matrix({n}): at most "
             f"{_target.current().partitions}")
    tile = dst if dst is not None else ndarray((n, n), dtype, sbuf)
    from nki._nl_math import OPERATORS
    nisa.affine_select(tile, [[-1, n]], 1, ones((n, n), dtype), 0, cmp_op=OPERATORS["equal"])
    return tile


# -- tile assignment ------------------------------------------------------------

def assign(target, value):
    """target[...] = value: a number fills, a tile is copied (by DMA when
    either side is in HBM). A value made by the instruction just traced,
    and held by nothing else, is written straight into the target instead."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        nisa.memset(target, value)
        return
    nisa.check_tensor(value, "value", "assignment")
    if _same_view(value, target):
        return
    if target._allocation.on_chip and _retarget(value, target):
        return
    if target._allocation.space == "hbm":
        store(target, value)
    elif value._allocation.space == "hbm":
        nisa.dma_copy(target, value)
    else:
        nisa.tensor_copy(target, value)


def _same_view(a, b):
    return a._allocation is b._allocation and a.offset == b.offset and \
        a.shape == b.shape and a.strides == b.strides


def accumulate(target, other, op):
    """target op= other in place (`tile += x`); a matmul result just
    traced accumulates into a PSUM target as the Tensor engine does."""
    from nki import language
    operator = getattr(language, op)
    if isinstance(other, NkiTensor) and target._allocation.space == "psum" and \
            _retarget(other, target, accumulate_matmul=op == "add"):
        return target
    result = operator(target, other)
    assign(target, result)
    return target


def _retarget(value, target, accumulate_matmul=False):
    """Makes the last traced call write `target` instead of `value` when
    `value` is its fresh, whole, otherwise unused destination; with
    accumulate_matmul, only a matmul, which then adds to `target`."""
    trace = _trace.current()
    allocation = value._allocation
    written = {id(d._allocation) for d in trace.last_destinations()}
    if written != {id(allocation)}:
        return False
    pieces = trace.last_call.pieces
    opcode = trace.instructions[pieces[-1][0]][0]
    if allocation.first_use != pieces[0][0] or allocation.alias_of is not None or \
            value.size != allocation.shape[0] * allocation.free_elements or \
            value.shape != target.shape or value.partition_dim != target.partition_dim or \
            accumulate_matmul != (opcode == "nc_matmul") or \
            (opcode == "nc_matmul" and target.dtype != allocation.dtype):
        return False
    # (A loop, not a generator: a closure over `value` would hold it too.)
    held = 0
    for index, _ in pieces:
        for operand in trace.instructions[index][1]:
            held += operand is value
    if not _is_temporary(value, held):
        return False
    trace.retarget_last(target, accumulate=accumulate_matmul)
    return True


def _is_temporary(value, held):
    """Whether nothing but the expression under evaluation holds `value`
    (besides this package's frames and the `held` references of the
    trace): a name bound to it in the kernel would see the target's memory
    after a retarget. CPython's reference count says, against the count
    _measure_temporary_references sees through the same number of frames."""
    # Measured at each use, not once: a tracer or profiler that came or went
    # since (sys.settrace reading frames' locals) changes the counts.
    temporary_references = _measure_temporary_references()
    return temporary_references is not None and \
        sys.getrefcount(value) - held <= temporary_references


def _measure_temporary_references():
    """The reference count _is_temporary sees for a temporary assigned by
    `tile[...] = value` or `tile += value` (each goes through assign or
    accumulate, then _retarget, then _is_temporary); None when a name bound
    to the value does not show in the count: never retarget then."""
    seen = {}

    def through(value):
        return through_retarget(value)

    def through_retarget(value):
        return counted(value)

    def counted(value):
        return sys.getrefcount(value)

    class Probe:
        def __setitem__(self, index, value):
            seen[index] = through(value)

        def __iadd__(self, other):
            seen["inplace"] = through(other)
            return self

    def fresh():
        return object()

    probe = Probe()
    probe["temporary"] = fresh()
    named = fresh()
    probe["named"] = named
    probe += fresh()
    if seen["named"] <= max(seen["temporary"], seen["inplace"]):
        return None
    return max(seen["temporary"], seen["inplace"])

