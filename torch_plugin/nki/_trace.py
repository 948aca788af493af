"""Tracing a kernel: its allocations, the instructions it issues, and the
placement of its tiles in SBUF and PSUM.

Calling a kernel runs its Python once per argument signature with proxy
tensors (NkiTensor): loops unroll, helpers inline, and every nki.isa call
(nki.language's functions lower to them) appends one instruction to a flat
list, as NKI's compiler "specializes" a kernel. Hardware rules are checked
as each call is traced; a violation raises NkiValidationError naming the
rule and the kernel's line.
"""

import dataclasses
import math
import threading

from nki import _dtypes, _index
from nki._errors import NkiValidationError, fail, user_location
from nki._tensor import NkiTensor, contiguous_strides

__all__ = ["Allocation", "Buffer", "NkiTensor", "NkiValidationError", "SPACE_CODES", "Trace",
           "contiguous_strides", "current", "fail", "hbm", "place_tiles", "psum", "sbuf",
           "shared_hbm", "tracing"]


class Buffer:
    """A memory space (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm)."""

    def __init__(self, name, space):
        self.name = name
        self.space = space  # "hbm", "sbuf" or "psum"

    def __repr__(self):
        return f"nl.{self.name}"


SPACE_CODES = {"hbm": 0, "sbuf": 1, "psum": 2}

sbuf = Buffer("sbuf", "sbuf")
psum = Buffer("psum", "psum")
hbm = Buffer("hbm", "hbm")
shared_hbm = Buffer("shared_hbm", "hbm")

# Instructions whose operands a DMA queue moves element by element (in
# each view's own order); every other instruction runs on an engine that
# walks partitions first.
_DMA_OPCODES = frozenset({"dma_copy", "dma_transpose", "dma_compute"})


@dataclasses.dataclass(eq=False)
class Allocation:
    buffer: Buffer
    dtype: object
    # On chip: (partitions, free elements...).
    shape: tuple
    name: str
    # HBM: "argument" (a tensor the caller passed), "output" (returned to
    # the caller) or "scratch" (the kernel's own, not returned).
    role: str = ""
    argument: int = -1
    elements: int = 0
    first_use: int = -1
    last_use: int = -1
    written: bool = False
    # PSUM: a matmul has written it (accumulate=None accumulates after).
    accumulated: bool = False
    index: int = -1
    address_index: int = -1
    byte_offset: int = 0
    partition_start: int = 0
    # Placed by the kernel (nl.ndarray(address=...)), not by the allocator.
    fixed: bool = False
    location: str = None
    # The same memory seen as another dtype (NkiTensor.view): placed, and
    # passed at launch, with the allocation it aliases.
    alias_of: "Allocation" = None

    @property
    def root(self):
        return self.alias_of.root if self.alias_of is not None else self

    @property
    def space(self):
        return self.buffer.space

    @property
    def on_chip(self):
        return self.space != "hbm"

    @property
    def free_elements(self):
        return math.prod(self.shape[1:]) if len(self.shape) > 1 else 1

    @property
    def element_bytes(self):
        return _dtypes.itemsize(self.dtype)


class Trace:
    """What tracing one kernel instance records."""

    def __init__(self, name, target):
        self.name = name
        self.target = target
        self.allocations = []
        self.instructions = []
        self.locations = []
        self._location_index = {}
        self.program_id = (0,)
        self.grid = (1,)
        # nl.shared_hbm tensors in creation order: every instance of a grid
        # shares them (the i-th such ndarray of each instance is one tensor).
        self._shared = []
        self._shared_used = 0

    def begin_instance(self, program_id):
        self.program_id = program_id
        self._shared_used = 0

    def shared_output(self, shape, dtype, name):
        if self._shared_used < len(self._shared):
            allocation = self._shared[self._shared_used]
            if allocation.shape != tuple(shape) or allocation.dtype != dtype:
                fail("err_shared_hbm_mismatch", "every instance of a grid creates the same "
                     f"nl.shared_hbm tensors; '{allocation.name}' was {list(allocation.shape)} "
                     f"{allocation.dtype}, now {list(shape)} {dtype}")
        else:
            allocation = self.allocate(shared_hbm, dtype, shape, name, role="output")
            self._shared.append(allocation)
        self._shared_used += 1
        return allocation

    def allocate(self, buffer, dtype, shape, name, role=""):
        allocation = Allocation(buffer=buffer, dtype=_dtypes.normalize(dtype), shape=tuple(shape),
                                name=name or f"t{len(self.allocations)}", role=role,
                                location=user_location())
        self.allocations.append(allocation)
        return allocation

    def alias(self, allocation, dtype):
        """`allocation`'s memory as `dtype` (of the same element size)."""
        alias = dataclasses.replace(allocation, dtype=dtype, alias_of=allocation,
                                    first_use=-1, last_use=-1, written=False)
        self.allocations.append(alias)
        return alias

    def record(self, opcode, operands, *, writes=(0,), alu=(), activation=None, scalars=(),
               flags=(), axes=(), mask_dims=None):
        """Appends the instruction, under the active mask (one instruction
        per box of it; `mask_dims[i]` maps operand i's dimensions to the
        mask's axes where the instruction's shape is not elementwise).
        Partition-broadcast views read by an engine are copied to the
        partitions by DMA first."""
        mask = _index.active_mask()
        dims = mask_dims or {}
        self.last_call = _Call(mask.shape if mask is not None else None, dims.get(0))
        if mask is None:
            self._emit(opcode, operands, writes, alu, activation, scalars, flags, axes)
            self.last_call.pieces.append((len(self.instructions) - 1, None))
            return
        for box in _index.boxes(mask):
            pieces = [None if operand is None else
                      _in_box(operand, box, mask.shape, dims.get(i))
                      for i, operand in enumerate(operands)]
            self._emit(opcode, pieces, writes, alu, activation, scalars, flags, axes)
            self.last_call.pieces.append((len(self.instructions) - 1, box))

    def _emit(self, opcode, operands, writes, alu, activation, scalars, flags, axes):
        engine = opcode not in _DMA_OPCODES
        views = []
        for i, operand in enumerate(operands):
            if operand is None:
                views.append(None)
                continue
            operand.check_bounds()
            if operand._indirect is not None:
                if engine:
                    fail("err_unsupported_indirect_access", f"'{opcode}' reads an indirect view "
                         f"of '{operand.name}': only a DMA follows offsets read at run time")
                index_allocation = operand._indirect.index._allocation
                if index_allocation.first_use < 0:
                    index_allocation.first_use = len(self.instructions)
                index_allocation.last_use = len(self.instructions)
            if engine and operand._allocation.on_chip:
                operand = operand.compute_view()
                if operand.shape[0] > 1 and operand.strides[0] == 0:
                    if i in writes:
                        fail("err_invalid_partition_broadcast", f"'{opcode}' writes a view of "
                             f"'{operand.name}' that repeats one partition")
                    operand = self._spread_partitions(operand)
            views.append(operand)
        position = len(self.instructions)
        for i, operand in enumerate(views):
            if operand is None:
                continue
            allocation = operand._allocation
            if allocation.first_use < 0:
                allocation.first_use = position
            allocation.last_use = position
            if i in writes:
                allocation.written = True
                allocation.root.written = True
        location = user_location() or "?"
        source = self._location_index.setdefault(location, len(self.locations))
        if source == len(self.locations):
            self.locations.append(location)
        self.instructions.append((opcode, views, list(alu), activation,
                                  [float(s) for s in scalars], [bool(f) for f in flags],
                                  [int(a) for a in axes], source))

    def last_destinations(self):
        """The destinations the last recorded call wrote (one per piece of
        its mask), if it was the last thing traced; else []."""
        call = getattr(self, "last_call", None)
        if call is None or not call.pieces or call.pieces[-1][0] != len(self.instructions) - 1:
            return []
        return [self.instructions[index][1][0] for index, _ in call.pieces]

    def retarget_last(self, view, accumulate=False):
        """The last recorded call writes `view` instead of its destination
        (which it alone used): each piece of it the same piece of `view`; a
        matmul then accumulates into `view`."""
        call = self.last_call
        allocation = view._allocation
        first, last = call.pieces[0][0], call.pieces[-1][0]
        for index, box in call.pieces:
            opcode, operands, alu, activation, scalars, flags, axes, source = \
                self.instructions[index]
            old = operands[0]._allocation
            old.first_use = old.last_use = -1
            old.written = False
            piece = view if box is None else _in_box(view, box, call.mask_shape, call.dims)
            if opcode not in _DMA_OPCODES:
                piece = piece.compute_view()
            if opcode == "nc_matmul":
                flags = [accumulate or flags[0]] + flags[1:]
            self.instructions[index] = (opcode, [piece] + operands[1:], alu, activation,
                                        scalars, flags, axes, source)
        if allocation.first_use < 0:
            allocation.first_use = first
        allocation.last_use = last
        allocation.written = allocation.root.written = True
        if accumulate:
            allocation.accumulated = True

    def _spread_partitions(self, view):
        """A partition-broadcast view copied into a tile of its shape: a DMA
        reads the one partition once per destination partition (engines
        read one partition per lane)."""
        if view._allocation.space == "psum":
            fail("err_unsupported_memory", f"a partition broadcast of PSUM tile '{view.name}': "
                 "copy it to SBUF first (DMA cannot read PSUM)")
        shape = (view.shape[0], math.prod(view.shape[1:]))
        tile = self.allocate(sbuf, view.dtype, shape, f"{view.name}_bcast")
        spread = NkiTensor(tile, view.shape, (shape[1],) + contiguous_strides(view.shape[1:]))
        self._emit("dma_copy", [spread, view], (0,), (), None, (), (), ())
        return spread


class _Call:
    """What one record() emitted: (instruction index, mask box or None) per
    piece, and how its destination met the mask."""

    def __init__(self, mask_shape, dims):
        self.mask_shape = mask_shape
        self.dims = dims
        self.pieces = []


def _in_box(operand, box, mask_shape, dims):
    """The part of `operand` an instruction under a mask touches: each of
    its dimensions that matches a mask axis (by position, or by `dims`,
    operand dimension -> mask axis) narrowed to the box."""
    bounds = []
    for dim, size in enumerate(operand.shape):
        axis = dims.get(dim) if dims is not None else dim
        if axis is not None and axis < len(box) and mask_shape[axis] == size and size > 1:
            bounds.append(box[axis])
        else:
            bounds.append((0, size - 1))
    return operand.with_box(bounds)


_local = threading.local()


def current():
    """The trace under way on this thread; an error outside a kernel."""
    trace = getattr(_local, "trace", None)
    if trace is None:
        fail("err_nki_api_outside_of_nki_kernel",
             "nki.language and nki.isa calls run inside an @nki.jit kernel")
    return trace


def active():
    return getattr(_local, "trace", None)


class tracing:
    def __init__(self, trace):
        self._trace = trace

    def __enter__(self):
        if getattr(_local, "trace", None) is not None:
            raise RuntimeError("a kernel is already being traced on this thread")
        _local.trace = self._trace
        return self._trace

    def __exit__(self, *exc):
        _local.trace = None


def _footprint_bytes(tile, align):
    return -(-tile.free_elements * tile.element_bytes // align) * align


def _partitions_meet(a, b):
    return a.partition_start < b.partition_start + b.shape[0] and \
        b.partition_start < a.partition_start + a.shape[0]


def place_tiles(trace):
    """Gives every tile its byte offset: a first-fit over the tiles live at
    once (first to last use) whose partitions meet it, PSUM tiles on whole
    2 KiB banks; tiles the kernel placed (nl.ndarray(address=...)) stay
    where it put them, and a tile's aliases (other dtypes' views of it) go
    where it goes. Raises the allocator's error when the live tiles do not
    fit."""
    aliases = [a for a in trace.allocations if a.alias_of is not None and a.first_use >= 0]
    for alias in aliases:
        root = alias.root
        root.first_use = alias.first_use if root.first_use < 0 else \
            min(root.first_use, alias.first_use)
        root.last_use = max(root.last_use, alias.last_use)
    target = trace.target
    for space, capacity, align in (("sbuf", target.sbuf_partition_bytes, 64),
                                   ("psum", target.psum_partition_bytes, target.psum_bank_bytes)):
        tiles = sorted((a for a in trace.allocations
                        if a.space == space and a.first_use >= 0 and a.alias_of is None),
                       key=lambda a: (a.first_use, a.index))
        fixed = [tile for tile in tiles if tile.fixed]
        live = []
        for tile in tiles:
            live = [other for other in live if other.last_use >= tile.first_use]
            if tile.fixed:
                continue
            size = _footprint_bytes(tile, align)
            blocking = [other for other in live + [f for f in fixed
                                                  if f.first_use <= tile.last_use
                                                  and f.last_use >= tile.first_use]
                        if _partitions_meet(other, tile)]
            offset = 0
            for other in sorted(blocking, key=lambda a: a.byte_offset):
                if offset + size <= other.byte_offset:
                    break
                offset = max(offset, other.byte_offset + _footprint_bytes(other, align))
            if offset + size > capacity:
                used = sum(_footprint_bytes(o, align) for o in blocking)
                names = ", ".join(f"'{o.name}'" for o in blocking[:8])
                raise NkiValidationError(
                    "err_out_of_memory",
                    f"{space.upper()} is full: tile '{tile.name}' needs {size} bytes per "
                    f"partition while {len(blocking)} live tiles ({names}) hold {used} of "
                    f"{capacity}", tile.location)
            tile.byte_offset = offset
            live.append(tile)
    for alias in aliases:
        alias.partition_start = alias.root.partition_start
        alias.byte_offset = alias.root.byte_offset
        alias.address_index = alias.root.address_index
