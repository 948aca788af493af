"""PyTorch's own distributed tests (vendored unchanged beside this file) on
the neuron device and the `neuron` c10d backend.

The harness classes the torch wheel ships (MultiProcessTestCase,
DTensorTestBase, FSDPTest in torch.testing._internal) pick their device and
backend from what they know (CUDA, HPU, XPU) and fall back to the CPU and
gloo otherwise. This package points them at neuron before any vendored test
module is imported.

Why a package: MultiProcessTestCase spawns a fresh interpreter per rank that
imports the test class by its module name (`upstream.test_...`), so this
`__init__` runs in every rank as well as in the pytest process, and the
ranks see the same harness as the parent. The ranks inherit
NEURON_RTD_ADDRESS from tests/conftest.py and are sessions of the pytest
session's daemon.
"""

import functools

import torch
import torch.distributed as dist

import torch_neuronx  # noqa: F401  (registers the device and the backend)
from torch.testing._internal import common_distributed, common_fsdp
from torch.testing._internal.distributed._tensor import common_dtensor

DEVICE_TYPE = "neuron"
# What DTensorTestBase.init_pg accepts for a PrivateUse1 device: its list of
# backends names "cpu:gloo,<device>:<backend>" but no bare PrivateUse1 name.
DTENSOR_BACKEND = f"cpu:gloo,{DEVICE_TYPE}:neuron"
# FSDPTest passes its module's DISTRIBUTED_BACKEND to init_process_group as
# is ("nccl" on CUDA): the bare backend name.
FSDP_BACKEND = "neuron"


def device_count() -> int:
    return torch.neuron.device_count()


def _skip_if_lt_x_gpu(x, *, allow_cpu=False):
    """common_distributed.skip_if_lt_x_gpu counting neuron devices too (the
    wheel's counts CUDA, HPU and XPU devices only); otherwise the original
    decides (and skips)."""
    upstream = _original_skip_if_lt_x_gpu

    def decorator(func):
        fallback = upstream(x, allow_cpu=allow_cpu)(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if device_count() >= x:
                return func(*args, **kwargs)
            return fallback(*args, **kwargs)

        return wrapper

    return decorator


_original_skip_if_lt_x_gpu = common_distributed.skip_if_lt_x_gpu
_original_dtensor_backend = common_dtensor.DTensorTestBase.backend


def _dtensor_backend(self) -> str:
    if self.device_type == DEVICE_TYPE:
        return DTENSOR_BACKEND
    return _original_dtensor_backend.fget(self)


_original_dtensor_init_pg = common_dtensor.DTensorTestBase.init_pg
_original_fsdp_run = common_fsdp.FSDPTest._run.__func__


def _bind_rank_to_device(rank: int) -> None:
    """What the harness does for a rank on CUDA and XPU (and torchrun's
    LOCAL_RANK does): rank r uses device r % device count."""
    torch.accelerator.set_device_index(rank % device_count())


def _dtensor_init_pg(self, eager_init, backend=None) -> None:
    if self.device_type == DEVICE_TYPE:
        _bind_rank_to_device(self.rank)
    _original_dtensor_init_pg(self, eager_init, backend)


def _run(cls, rank, test_name, file_name, pipe, **kwargs):
    # Named _run: the rank's process finds its target by this name (pickle).
    _bind_rank_to_device(rank)
    return _original_fsdp_run(cls, rank, test_name, file_name, pipe, **kwargs)


def apply() -> None:
    # common_dtensor already derives DEVICE_TYPE ("neuron"), PG_BACKEND
    # ("neuron") and NUM_DEVICES (min(4, device count)) from torch.accelerator.
    assert common_dtensor.DEVICE_TYPE == DEVICE_TYPE, common_dtensor.DEVICE_TYPE
    common_dtensor.DTensorTestBase.backend = property(_dtensor_backend)
    # init_pg binds a rank to its device for nccl and xccl only.
    common_dtensor.DTensorTestBase.init_pg = _dtensor_init_pg

    # Decorators bind at the test module's import, which comes after this.
    common_distributed.skip_if_lt_x_gpu = _skip_if_lt_x_gpu
    common_dtensor.skip_if_lt_x_gpu = _skip_if_lt_x_gpu  # skip_unless_torch_gpu

    # common_fsdp knows CUDA, HPU and XPU; anything else is the CPU with gloo.
    common_fsdp.DEVICE_TYPE = DEVICE_TYPE
    common_fsdp.DISTRIBUTED_BACKEND = FSDP_BACKEND
    common_fsdp.DEVICE_COUNT = device_count()
    # FSDPTest._run binds a rank to its device on CUDA and XPU only.
    common_fsdp.FSDPTest._run = classmethod(_run)
    assert dist.is_backend_available(FSDP_BACKEND)


apply()
