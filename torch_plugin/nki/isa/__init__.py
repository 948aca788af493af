"""nki.isa: one call, one NeuronCore instruction, with its destination
given explicitly as the first argument (the current NKI API).

Each instruction checks the hardware's rules as it is traced (memory
spaces, partition counts and limits, matmul sizes) and raises
NkiValidationError naming the rule and the kernel's line. docs/nki.md lists
the instructions that are not supported, each raising NotImplementedError
that names it.
"""

from nki import _target
from nki._errors import NkiValidationError, unsupported_api
from nki.isa import constants
from nki.isa.constants import (dge_mode, dma_engine, engine, gpsimd_engine, matmul_perf_mode,
                               nc_version, oob_mode, reduce_cmd, scalar_engine, tensor_engine,
                               unknown_engine, vector_engine)
from nki.isa._checks import check_on_chip, check_tensor
from nki.isa._move import (dma_compute, dma_copy, dma_transpose, iota, memset, tensor_copy,
                           tensor_copy_predicated)
from nki.isa._random import dropout, rand2, rng, set_rng_seed
from nki.isa._registers import (VirtualRegister, register_alloc, register_load, register_move,
                                register_store)
from nki.isa._select import (affine_select, local_gather, max8, nc_find_index8,
                             nc_match_replace8, nc_n_gather, nc_stream_shuffle,
                             nonzero_with_count, range_select, select_reduce, sequence_bounds)
from nki.isa._tensor_engine import nc_matmul, nc_transpose
from nki.isa._vector import (activation, activation_reduce, bn_aggr, bn_stats, exponential,
                             reciprocal, scalar_tensor_tensor, tensor_partition_reduce,
                             tensor_reduce, tensor_scalar, tensor_scalar_cumulative,
                             tensor_scalar_reduce, tensor_tensor, tensor_tensor_scan)


class NkiInstruction:
    """The handle AWS's tracer returns for an instruction (for
    depends_on); instructions here run in program order and return None."""

    def depends_on(self, *instructions):
        return self


_CORES = "a kernel's instances run one after another on one simulated core"
_V4 = "an instruction of NeuronCore-v4 (trn3); this simulator models trn1 and trn2"
nc_matmul_mx = unsupported_api("nki.isa.nc_matmul_mx", _V4 + " (MX formats)")
quantize_mx = unsupported_api("nki.isa.quantize_mx", _V4 + " (MX formats)")
activate2 = unsupported_api("nki.isa.activate2", _V4)
core_barrier = unsupported_api("nki.isa.core_barrier", _CORES)
sendrecv = unsupported_api("nki.isa.sendrecv", _CORES)
topk = unsupported_api("nki.isa.topk", "its 16-partition snake layout is not modelled yet")
rand_set_state = unsupported_api("nki.isa.rand_set_state", "AWS does not document the XORWOW "
                                 "state layout it would set")
rand_get_state = unsupported_api("nki.isa.rand_get_state", "AWS does not document the XORWOW "
                                 "state layout it would return")


def get_nc_version():
    return nc_version.gen3 if _target.current().name == "trn2" else nc_version.gen2


def get_nc_sub_version():
    return 0
