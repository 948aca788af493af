"""The Tensor engine's instructions: nc_matmul (the 128x128 systolic array,
accumulating in PSUM) and nc_transpose."""

import math

import torch

from nki import _target, _trace
from nki._errors import fail
from nki.isa._checks import check_tensor, engine_view, partitions_match

_FLOAT32 = torch.float32


def _fp8(tensor):
    return tensor.dtype.itemsize == 1 and tensor.dtype.is_floating_point


def nc_matmul(dst, stationary, moving, accumulate=None, is_stationary_onezero=False,
              is_moving_onezero=False, is_transpose=False, tile_position=None, tile_size=None,
              perf_mode=None, name=None):
    """dst[M, N] = stationary[K, M]^T @ moving[K, N] on the Tensor engine:
    the contraction runs along the partitions; dst is a float32 PSUM tile.
    accumulate=None overwrites a PSUM tile no matmul has written yet and adds
    to it afterwards; True or False say so explicitly. is_transpose=True
    makes it a transpose: dst = moving^T (stationary is the identity)."""
    target = _target.current()
    check_tensor(dst, "dst", "nc_matmul")
    dst = engine_view(dst, "dst", "nc_matmul")
    if dst._allocation.space != "psum":
        fail("err_unsupported_memory", "Expected operand 'dst' of 'nc_matmul' to be in address "
             f"space 'psum', but got a tile in '{dst._allocation.space}' instead.")
    stationary = engine_view(stationary, "stationary", "nc_matmul")
    moving = engine_view(moving, "moving", "nc_matmul")
    if is_transpose:
        return _transpose_mode(dst, stationary, moving)
    for tile, what in ((stationary, "stationary"), (moving, "moving")):
        if tile._allocation.space != "sbuf":
            fail("err_unsupported_memory", f"Expected operand '{what}' of 'nc_matmul' to be in "
                 f"address space 'sbuf', but got a tile in '{tile._allocation.space}' instead.")
    if dst.dtype != _FLOAT32:
        fail("err_unsupported_dtype", f"nc_matmul accumulates in float32 PSUM; dst is {dst.dtype}")
    if (stationary.dtype == _FLOAT32) != (moving.dtype == _FLOAT32):
        fail("err_unsupported_dtype", "nc_matmul: when one input is float32 the other must be "
             f"too (stationary {stationary.dtype}, moving {moving.dtype})")
    partitions_match("nc_matmul", stationary=stationary, moving=moving)
    double_row = "double_row" in str(getattr(perf_mode, "value", perf_mode) or "")
    contraction = stationary.shape[0]
    columns = math.prod(stationary.shape[1:])
    free = math.prod(moving.shape[1:])
    if double_row:
        # Two rows of the contraction per partition: stationary [K, 2, M],
        # moving [K, 2, N], fp8 only.
        if stationary.ndim != 3 or moving.ndim != 3 or stationary.shape[1] != 2 or \
                moving.shape[1] != 2:
            fail("err_shape_mismatch", "nc_matmul(perf_mode=double_row) takes stationary "
                 f"[K, 2, M] and moving [K, 2, N]; got {list(stationary.shape)} and "
                 f"{list(moving.shape)}")
        if not (_fp8(stationary) and _fp8(moving)):
            fail("err_unsupported_dtype", "nc_matmul(perf_mode=double_row) multiplies fp8 tiles")
        columns //= 2
        free //= 2
    if contraction > target.partitions:
        fail("err_num_partition_exceed_arch_limit", f"number of partitions {contraction} exceed "
             f"architecture limitation of {target.partitions}.")
    if columns > target.gemm_stationary_fmax:
        fail("err_size_of_dimension_exceed_arch_limit", f"free size {columns} of 'stationary"
             f"{list(stationary.shape)}' of 'nc_matmul' exceed architecture limitation of "
             f"{target.gemm_stationary_fmax} (tile_size.gemm_stationary_fmax).")
    if free > target.gemm_moving_fmax:
        fail("err_size_of_dimension_exceed_arch_limit", f"free size {free} of 'moving"
             f"{list(moving.shape)}' of 'nc_matmul' exceed architecture limitation of "
             f"{target.gemm_moving_fmax} (tile_size.gemm_moving_fmax).")
    if dst.shape[0] != columns or dst.size != columns * free:
        fail("err_shape_mismatch", f"nc_matmul of stationary{list(stationary.shape)} and "
             f"moving{list(moving.shape)} gives [{columns}, {free}]; dst is {list(dst.shape)}")
    if accumulate is None:
        accumulate = dst._allocation.accumulated
    # Under a mask over dst [M, N]: stationary's columns are M, moving's N.
    _trace.current().record("nc_matmul", [dst, stationary, moving],
                            flags=[accumulate, False, double_row],
                            mask_dims={1: {1: 0}, 2: {1: 1}})
    dst._allocation.accumulated = True


def _transpose_mode(dst, stationary, moving):
    """nc_matmul(is_transpose=True): the Tensor engine's transpose mode,
    dst = stationary^T exactly (moving is the identity)."""
    if dst._allocation.space != "psum" or stationary._allocation.space != "sbuf":
        fail("err_unsupported_memory", "nc_matmul(is_transpose=True) reads SBUF and writes PSUM")
    if dst.dtype != stationary.dtype:
        fail("err_unsupported_dtype", f"a transpose keeps the dtype: dst is {dst.dtype}, "
             f"stationary {stationary.dtype}")
    columns = stationary.size // stationary.shape[0]
    if dst.shape[0] != columns or dst.size != stationary.size:
        fail("err_shape_mismatch", f"the transpose of stationary{list(stationary.shape)} is "
             f"[{columns}, {stationary.shape[0]}]; dst is {list(dst.shape)}")
    _trace.current().record("nc_matmul", [dst, stationary, moving], flags=[False, True])


def nc_transpose(dst, data, engine=None, name=None):
    """dst[F, P] = data[P, F]^T (Tensor engine into PSUM, or Vector engine
    for tiles of at most 32x32)."""
    dst = engine_view(dst, "dst", "nc_transpose")
    data = engine_view(data, "data", "nc_transpose")
    rows, columns = data.shape[0], data.size // max(1, data.shape[0])
    if columns > 128:
        fail("err_size_of_dimension_exceed_arch_limit", f"size of dimension 1 in "
             f"'data{list(data.shape)}' of 'nc_transpose' exceed architecture limitation of 128.")
    if dst.shape[0] != columns or dst.size != rows * columns:
        fail("err_shape_mismatch", f"nc_transpose of data{list(data.shape)} gives "
             f"[{columns}, {rows}]; dst is {list(dst.shape)}")
    _trace.current().record("nc_transpose", [dst, data], mask_dims={1: {0: 1, 1: 0}})
