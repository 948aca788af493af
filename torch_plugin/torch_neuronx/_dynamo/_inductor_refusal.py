"""What TorchInductor finds for the neuron device: a clear refusal.

Inductor generates Triton or C++ for the devices it knows; for a
PrivateUse1 device it looks up ``Scheduling`` and the wrapper code
generators on the device module (``torch.neuron``), which hands out these
when asked. Without them a ``torch.compile(model)`` of a model on neuron
failed with ``KeyError: 'neuron'`` deep in inductor. Imported only by
inductor's lookup, so ``import torch`` stays cheap.
"""

from torch._inductor.codegen.common import DeviceOpOverrides, register_device_op_overrides

MESSAGE = (
    "torch.compile's default backend (TorchInductor) cannot generate code for the neuron "
    "device: compile with torch.compile(model, backend=\"neuron\"), or call "
    "torch.compiler.set_default_backend(\"neuron\") once before compiling")


class _RefuseEveryAttribute(type):
    # Inductor asks the classes themselves first (supports_caching, create).
    def __getattr__(cls, name):
        raise RuntimeError(MESSAGE)


class _Refusal(metaclass=_RefuseEveryAttribute):
    def __init__(self, *args, **kwargs):
        raise RuntimeError(MESSAGE)


Scheduling = _Refusal
PythonWrapperCodegen = _Refusal
CppWrapperCodegen = _Refusal
WrapperFxCodegen = _Refusal

# Looked up before the wrapper code generator: its absence was the KeyError.
register_device_op_overrides("neuron", DeviceOpOverrides())
