"""What TorchInductor finds for the neuron device: a clear refusal.

Inductor generates Triton or C++ for the devices it knows; for a
PrivateUse1 device it looks up ``Scheduling`` and the wrapper code
generators on the device module (``torch.neuron``), which hands out these
when asked. Without them a graph on neuron that reaches inductor (other
than through torch.compile, which routes it to the neuron backend) failed
with ``KeyError: 'neuron'`` deep in inductor. Imported only by
inductor's lookup, so ``import torch`` stays cheap.
"""

from torch._inductor.codegen.common import DeviceOpOverrides, register_device_op_overrides

MESSAGE = (
    "TorchInductor cannot generate code for the neuron device: torch.compile(model) sends "
    "graphs on neuron to the neuron backend, but this graph reached TorchInductor another way "
    "(torch._dynamo.optimize(\"inductor\"), compile_fx, AOTInductor); compile it with "
    "backend=\"neuron\"")


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
