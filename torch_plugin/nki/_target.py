"""The NeuronCore a kernel is traced for: trn2 (NeuronCore-v3) unless
NEURON_PLATFORM_TARGET_OVERRIDE names another. Figures from the AWS Neuron
documentation (NKI architecture guides; usable SBUF bytes per partition as
the compiler's target information gives them)."""

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    partitions: int
    sbuf_partition_bytes: int
    psum_partition_bytes: int
    psum_bank_bytes: int
    gemm_stationary_fmax: int
    gemm_moving_fmax: int


_TARGETS = {
    "trn1": Target("trn1", 128, 180_224, 16_384, 2_048, 128, 512),
    "trn2": Target("trn2", 128, 212_984, 16_384, 2_048, 128, 512),
}


def current():
    name = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2").lower()
    if name not in _TARGETS:
        raise ValueError(f"NEURON_PLATFORM_TARGET_OVERRIDE={name!r}: this simulator knows "
                         f"{sorted(_TARGETS)}")
    return _TARGETS[name]
