"""NKI's dtypes, however a kernel spells them: nki.language's names (torch
dtypes here), NumPy's (the legacy neuronxcc.nki used np.float32), ml_dtypes'
(bfloat16 and the fp8 formats, as NKI's simulator takes NumPy arrays),
strings, and Python's bool/int/float.

float8_e4m3 (1S,4E,3M with infinities, as ml_dtypes.float8_e4m3) has no
torch dtype: it is a CustomDType, stored as bytes (torch.uint8) and
converted by the interpreter under its own dtype number.
"""

import torch

try:
    import ml_dtypes
    import numpy
except ImportError:  # NumPy and ml_dtypes are optional for device tensors.
    ml_dtypes = numpy = None


class CustomDType:
    """A dtype the kernel format knows and torch does not."""

    def __init__(self, name, itemsize, code, packed=False):
        self.name = name
        self.itemsize = itemsize
        # The plan's dtype number: past c10::ScalarType's.
        self.code = code
        self.is_floating_point = True
        # Four values to an element (the MX formats of NeuronCore-v4).
        self.packed = packed

    def __repr__(self):
        return f"nl.{self.name}"

    def to(self, tensor):
        return tensor.view(torch.uint8)


# The plan's numbers for dtypes beyond c10::ScalarType (neuron/rtd/nki_kernel.h).
float8_e4m3 = CustomDType("float8_e4m3", 1, 100)
# MX formats of NeuronCore-v4 (nc_matmul_mx, quantize_mx): named, not run.
float8_e5m2_x4 = CustomDType("float8_e5m2_x4", 4, 101, packed=True)
float8_e4m3fn_x4 = CustomDType("float8_e4m3fn_x4", 4, 102, packed=True)
float4_e2m1fn_x4 = CustomDType("float4_e2m1fn_x4", 2, 103, packed=True)


class DType:
    """A tensor's dtype as a kernel sees it (NkiTensor.dtype): equal to
    every spelling of the same dtype (nl.float32 of either API, np.float32,
    torch.float32, "float32"), as kernels of both APIs compare them."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        try:
            return normalize(other) == self.value
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return repr(self.value)

    def __str__(self):
        return str(self.value)

    itemsize = property(lambda self: self.value.itemsize)
    is_floating_point = property(lambda self: self.value.is_floating_point)
    name = property(lambda self: name(self.value))

_BY_NAME = {
    "float32": torch.float32, "float": torch.float32, "float16": torch.float16,
    "half": torch.float16, "bfloat16": torch.bfloat16, "tfloat32": torch.float32,
    "float8_e4m3": float8_e4m3, "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2_x4": float8_e5m2_x4, "float8_e4m3fn_x4": float8_e4m3fn_x4,
    "float4_e2m1fn_x4": float4_e2m1fn_x4,
    "float8_e5m2": torch.float8_e5m2, "float8_e8m0fnu": torch.float8_e8m0fnu,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "uint8": torch.uint8,
    "uint16": torch.uint16, "uint32": torch.uint32, "bool": torch.uint8, "bool_": torch.uint8,
}


def normalize(value):
    """The dtype `value` names (a torch.dtype or CustomDType); TypeError
    for what names none."""
    if isinstance(value, DType):
        return value.value
    if isinstance(value, CustomDType):
        return value
    if isinstance(value, torch.dtype):
        value = name(value)
    if value is bool:
        return torch.uint8
    if value is float:
        return torch.float32
    if value is int:
        return torch.int32
    spelled = value if isinstance(value, str) else _numpy_name(value)
    if spelled in _BY_NAME:
        return _BY_NAME[spelled]
    raise TypeError(f"{value!r} is not an NKI dtype (nki.language's float32, bfloat16, "
                    "float16, float8_e4m3, float8_e4m3fn, float8_e5m2, int8/16/32, uint8/16/32, "
                    "bool_)")


def _numpy_name(value):
    if numpy is None:
        return None
    try:
        return numpy.dtype(value).name
    except TypeError:
        return None


def itemsize(dtype):
    return normalize(dtype).itemsize


def name(dtype):
    dtype = dtype.value if isinstance(dtype, DType) else dtype
    if isinstance(dtype, CustomDType):
        return dtype.name
    return str(dtype).removeprefix("torch.")


def code(dtype):
    """The plan's dtype number (a torch dtype, or a CustomDType's number)."""
    dtype = normalize(dtype)
    return dtype.code if isinstance(dtype, CustomDType) else dtype


def storage(dtype):
    """The torch dtype of the memory holding `dtype`'s elements."""
    dtype = normalize(dtype)
    return torch.uint8 if isinstance(dtype, CustomDType) else dtype


def is_float(dtype):
    return normalize(dtype).is_floating_point


def promote(a, b):
    a, b = normalize(a), normalize(b)
    if a == b:
        return a
    if isinstance(a, CustomDType) or isinstance(b, CustomDType):
        return torch.float32
    return torch.promote_types(a, b)


# -- NumPy arrays in and out (nki.simulate) ------------------------------------

def is_numpy(value):
    return type(value).__module__ == "numpy" and type(value).__name__ == "ndarray"


def from_numpy(array):
    """(a CPU tensor sharing the array's memory, the dtype the kernel sees)."""
    kind = array.dtype.name
    if kind == "bfloat16":
        return torch.from_numpy(array.view(numpy.int16)).view(torch.bfloat16), torch.bfloat16
    if kind in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
        dtype = _BY_NAME[kind]
        return torch.from_numpy(array.view(numpy.uint8)).view(dtype), dtype
    if kind == "float8_e4m3":
        return torch.from_numpy(array.view(numpy.uint8)), float8_e4m3
    if kind == "bool":
        return torch.from_numpy(array.view(numpy.uint8)), torch.uint8
    tensor = torch.from_numpy(array)
    if tensor.dtype in (torch.float64, torch.int64):
        raise TypeError(f"a NumPy array of {kind}: NKI has no 64-bit types; pass float32 or "
                        "int32")
    return tensor, tensor.dtype


def numpy_dtype(dtype):
    """The NumPy (ml_dtypes) dtype of an NKI dtype."""
    spelled = name(normalize(dtype))
    if spelled == "bool":
        return numpy.dtype(numpy.bool_)
    return numpy.dtype(getattr(ml_dtypes, spelled, None) or getattr(numpy, spelled))


def to_numpy(tensor, dtype):
    """The tensor as a NumPy array of `dtype` (ml_dtypes' types for bfloat16
    and fp8)."""
    if dtype is float8_e4m3:
        return tensor.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3)
    if dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu):
        return tensor.view(torch.uint8).numpy().view(getattr(ml_dtypes, name(dtype)))
    return tensor.numpy()
