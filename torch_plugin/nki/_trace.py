"""Tracing a kernel: proxies of its tensors, the instructions it issues, the
checks the compiler makes, and the placement of its tiles in SBUF and PSUM.

Calling a kernel runs its Python once per argument signature with proxy
tensors (NkiTensor): loops unroll, helpers inline, and every nki.isa call
(nki.language's functions lower to them) appends one instruction to a flat
list, as NKI's compiler "specializes" a kernel. Hardware rules are checked
as each call is traced; a violation raises NkiValidationError naming the
rule and the kernel's line.
"""

import dataclasses
import math
import os
import sys
import threading

import torch

from nki import _target

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NkiValidationError(AssertionError):
    """A kernel breaks a rule of the hardware or of NKI. Raised while the
    kernel is traced (its first call with a signature, or torch.compile);
    `code` is the compiler's name for the rule ("err_num_partition_exceed_arch_limit")."""

    def __init__(self, code, message, location=None):
        self.code = code
        self.location = location
        where = f" ({location})" if location else ""
        super().__init__(f"[{code}] {message}{where}")


def _user_location():
    """file:line of the innermost frame outside this package: the kernel's
    line that made the call."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def fail(code, message):
    raise NkiValidationError(code, message, _user_location())


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


@dataclasses.dataclass(eq=False)
class Allocation:
    buffer: Buffer
    dtype: torch.dtype
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
        return torch.empty((), dtype=self.dtype).element_size()


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class NkiTensor:
    """A tensor of a kernel being traced: a strided view of one allocation
    (an HBM tensor, or a tile in SBUF or PSUM) in its element coordinates."""

    def __init__(self, allocation, shape, strides, offset=0):
        self._allocation = allocation
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset = int(offset)

    dtype = property(lambda self: self._allocation.dtype)
    buffer = property(lambda self: self._allocation.buffer)
    name = property(lambda self: self._allocation.name)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __repr__(self):
        return (f"NkiTensor({self.name!r}, shape={list(self.shape)}, dtype={self.dtype}, "
                f"buffer={self.buffer})")

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        fail("err_unsupported_control_flow",
             "a tile's value is known only when the kernel runs: it cannot drive Python "
             "control flow")

    def __getitem__(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        if sum(1 for i in index if i is Ellipsis) > 1:
            fail("err_invalid_index", "an index may hold one '...'")
        if Ellipsis in index:
            at = index.index(Ellipsis)
            fill = len(self.shape) - (len(index) - 1)
            index = index[:at] + (slice(None),) * fill + index[at + 1:]
        if len(index) > len(self.shape):
            fail("err_invalid_index", f"{len(index)} indices for tensor '{self.name}' of "
                 f"{len(self.shape)} dimensions")
        index = index + (slice(None),) * (len(self.shape) - len(index))
        shape, strides, offset = [], [], self.offset
        for dim, (item, size, stride) in enumerate(zip(index, self.shape, self.strides)):
            if isinstance(item, slice):
                start = 0 if item.start is None else int(item.start)
                stop = size if item.stop is None else int(item.stop)
                step = 1 if item.step is None else int(item.step)
                if step <= 0:
                    fail("err_invalid_index", "slices step forward (step >= 1)")
                if start < 0 or stop > size or start > stop:
                    fail("err_tensor_access_out_of_bound",
                         f"Out-of-bound access for tensor `{self.name}` on dimension {dim}: "
                         f"index range [{start}, {stop - 1}] exceed dimension size of {size}")
                offset += start * stride
                shape.append(max(0, (stop - start + step - 1) // step))
                strides.append(stride * step)
            elif isinstance(item, int) or (isinstance(item, torch.SymInt)):
                position = int(item)
                if position < 0:
                    position += size
                if not 0 <= position < size:
                    fail("err_tensor_access_out_of_bound",
                         f"Out-of-bound access for tensor `{self.name}` on dimension {dim}: "
                         f"index {int(item)} exceed dimension size of {size}")
                offset += position * stride
                if dim == 0 and self._allocation.on_chip:
                    # The partition dimension stays, at size 1.
                    shape.append(1)
                    strides.append(stride)
            else:
                fail("err_invalid_index",
                     f"index {item!r} of tensor '{self.name}': use integers, slices or nl.ds")
        if not shape:
            shape, strides = [1], [1]
        return NkiTensor(self._allocation, shape, strides, offset)

    def is_contiguous(self):
        expected = _contiguous_strides(self.shape)
        return all(size == 1 or stride == want
                   for size, stride, want in zip(self.shape, self.strides, expected))

    def reshape(self, shape):
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != self.size:
            fail("err_invalid_reshape", f"cannot reshape '{self.name}' of shape "
                 f"{list(self.shape)} to {list(shape)}: element counts differ")
        if self._allocation.on_chip:
            if shape[0] != self.shape[0]:
                fail("err_invalid_reshape",
                     "a tile's reshape keeps its partition dimension "
                     f"({self.shape[0]}); got {list(shape)}")
            free = NkiTensor(self._allocation, self.shape[1:], self.strides[1:], 0)
            if not free.is_contiguous():
                fail("err_invalid_reshape", "only a tile whose free dimensions are contiguous "
                     "can be reshaped")
            return NkiTensor(self._allocation, shape,
                             (self.strides[0],) + _contiguous_strides(shape[1:]), self.offset)
        if not self.is_contiguous():
            fail("err_invalid_reshape", f"only a contiguous view of '{self.name}' can be "
                 "reshaped")
        return NkiTensor(self._allocation, shape, _contiguous_strides(shape), self.offset)

    def expand_dims(self, axis):
        """A view with a dimension of size 1 inserted at `axis` (not before a
        tile's partition dimension)."""
        axis = axis + self.ndim + 1 if axis < 0 else axis
        if not 0 <= axis <= self.ndim or (axis == 0 and self._allocation.on_chip):
            fail("err_invalid_index", f"expand_dims at {axis} of '{self.name}' "
                 f"{list(self.shape)}: a tile's partition dimension stays first")
        stride = self.strides[axis] * self.shape[axis] if axis < self.ndim else 1
        return NkiTensor(self._allocation, self.shape[:axis] + (1,) + self.shape[axis:],
                         self.strides[:axis] + (stride,) + self.strides[axis:], self.offset)

    def broadcast_to(self, shape):
        """A view repeating dimensions of size 1 to `shape` (free dimensions
        only on chip: partitions are not repeated by a view)."""
        shape = tuple(int(s) for s in shape)
        if len(shape) != self.ndim:
            fail("err_shape_mismatch", f"broadcast_to {list(shape)} of '{self.name}' "
                 f"{list(self.shape)}: the same number of dimensions")
        strides = []
        for dim, (have, want, stride) in enumerate(zip(self.shape, shape, self.strides)):
            if have == want:
                strides.append(stride)
            elif have == 1 and not (dim == 0 and self._allocation.on_chip):
                strides.append(0)
            else:
                fail("err_shape_mismatch", f"cannot broadcast '{self.name}' {list(self.shape)} "
                     f"to {list(shape)} (dimension {dim}; a tile's partitions are copied, "
                     "not broadcast)")
        return NkiTensor(self._allocation, shape, strides, self.offset)

    # Tile arithmetic as sugar for nki.language's functions.
    def _language(self):
        from nki import language
        return language

    def __add__(self, other):
        return self._language().add(self, other)

    def __radd__(self, other):
        return self._language().add(other, self)

    def __sub__(self, other):
        return self._language().subtract(self, other)

    def __rsub__(self, other):
        return self._language().subtract(other, self)

    def __mul__(self, other):
        return self._language().multiply(self, other)

    def __rmul__(self, other):
        return self._language().multiply(other, self)

    def __truediv__(self, other):
        return self._language().divide(self, other)

    def __rtruediv__(self, other):
        return self._language().divide(other, self)

    def __neg__(self):
        return self._language().negative(self)

    def access(self):
        """(allocation index, offset, [(stride, count)]) for the plan."""
        return (self._allocation.index, self.offset,
                [(stride, size) for stride, size in zip(self.strides, self.shape)])


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
        allocation = Allocation(buffer=buffer, dtype=dtype, shape=tuple(shape),
                                name=name or f"t{len(self.allocations)}", role=role,
                                location=_user_location())
        self.allocations.append(allocation)
        return allocation

    def record(self, opcode, operands, *, writes=(0,), alu=(), activation=None, scalars=(),
               flags=(), axes=()):
        position = len(self.instructions)
        for i, operand in enumerate(operands):
            if operand is None:
                continue
            allocation = operand._allocation
            if allocation.first_use < 0:
                allocation.first_use = position
            allocation.last_use = position
            if i in writes:
                allocation.written = True
        location = _user_location() or "?"
        source = self._location_index.setdefault(location, len(self.locations))
        if source == len(self.locations):
            self.locations.append(location)
        self.instructions.append((opcode, list(operands), list(alu), activation,
                                  [float(s) for s in scalars], [bool(f) for f in flags],
                                  [int(a) for a in axes], source))


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
    where it put them. Raises the allocator's error when the live tiles do
    not fit."""
    target = trace.target
    for space, capacity, align in (("sbuf", target.sbuf_partition_bytes, 64),
                                   ("psum", target.psum_partition_bytes, target.psum_bank_bytes)):
        tiles = sorted((a for a in trace.allocations if a.space == space and a.first_use >= 0),
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
