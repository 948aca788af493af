"""The legacy neuronxcc.nki API: index expressions and their bounds, masks,
nl.par_dim block tiles, instructions that return results, tile assignment
and PSUM accumulation, partition broadcasts, NumPy dtypes and operators,
nki.jit's modes and the legacy run helpers."""

import ml_dtypes
import numpy as np
import pytest
import torch

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki import NkiValidationError

rng = np.random.default_rng(3)


def test_arange_expressions_index_tiles_and_affine_offsets():
    @nki.jit
    def shifted_copy(x):
        out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(256)[None, :]
        nl.store(out[i_p, i_f], value=nl.load(x[i_p + 128, 2 * i_f + 1]))
        return out

    x = rng.standard_normal((256, 512), np.float32)
    np.testing.assert_array_equal(shifted_copy(x), x[128:, 1::2])


def test_mgrid_unpacks_and_names_its_axes():
    @nki.jit
    def copy(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        grid = nl.mgrid[0:64, 0:32]
        i_p, i_f = nl.mgrid[0:64, 0:32]
        nl.store(out[grid.p, grid.x], value=nl.load(x[i_p, i_f]))
        return out

    x = rng.standard_normal((64, 32), np.float32)
    np.testing.assert_array_equal(copy(x), x)


def test_a_mask_excuses_indices_past_the_edge_and_leaves_masked_elements_unwritten():
    @nki.jit
    def square_corner(x):
        out = nl.ndarray((64, 256), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(512)[None, :]
        tile = nl.load(x[i_p, i_f])
        squares = nl.square(tile, mask=(i_p < 64) & (i_f < 256))
        nl.store(out[i_p, i_f], value=squares, mask=(i_p < 64) & (i_f < 256))
        return out

    x = rng.standard_normal((128, 512), np.float32)
    np.testing.assert_allclose(square_corner(x), x[:64, :256] ** 2)


def test_an_index_past_the_edge_without_a_mask_is_refused_at_the_kernels_line():
    @nki.jit
    def past_the_end(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        nl.store(out, value=nl.load(x[i_p + 1, nl.arange(64)[None, :]]))
        return out

    with pytest.raises(NkiValidationError, match="err_tensor_access_out_of_bound.*"
                       r"test_nki_legacy.py:\d+"):
        past_the_end(np.zeros((128, 64), np.float32))


def lower_triangle_kernel():
    """A new kernel (with a cache of its own, so each test traces it) that
    loads the lower triangle of x into a zeroed tile under a mask."""
    @nki.jit
    def lower(x):
        out = nl.ndarray((32, 32), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:32, 0:32]
        tile = nl.zeros((32, 32), dtype=x.dtype)
        tile[i_p, i_f] = nl.load(x[i_p, i_f], mask=(i_f <= i_p))
        nl.store(out, value=tile)
        return out

    return lower


def test_a_triangular_mask_runs_one_box_per_row():
    x = rng.standard_normal((32, 32), np.float32)
    np.testing.assert_array_equal(lower_triangle_kernel()(x), np.tril(x))


def test_a_masked_load_into_a_tile_under_a_tracer_that_reads_locals():
    # A tracer (a debugger, coverage) that reads frames' locals adds
    # references; the load must still write the tile in place, leaving the
    # masked-out zeros, as without it.
    import sys

    lower = lower_triangle_kernel()

    def tracer(frame, event, arg):
        frame.f_locals  # noqa: B018 (what debuggers do)
        return tracer

    x = rng.standard_normal((32, 32), np.float32)
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = lower(x)
    finally:
        sys.settrace(previous)
    np.testing.assert_array_equal(result, np.tril(x))


def test_mixing_slices_and_index_expressions_names_the_rule():
    @nki.jit
    def mixed(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(x[nl.arange(128)[:, None], 0:64]))
        return out

    with pytest.raises(NkiValidationError, match="err_mixed_index"):
        mixed(np.zeros((128, 64), np.float32))


def test_block_tiles_of_par_dim_and_psum_accumulation():
    @nki.jit
    def blocked_matmul(lhs_t, rhs):
        out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        blocks = nl.ndarray((2, nl.par_dim(128), 128), dtype=lhs_t.dtype)
        for k in nl.affine_range(2):
            blocks[k] = nl.load(lhs_t[k * 128:(k + 1) * 128, :])
        acc = nl.zeros((128, 256), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            acc += nisa.nc_matmul(blocks[k], nl.load(rhs[k * 128:(k + 1) * 128, :]))
        nl.store(out, value=nl.copy(acc))
        return out

    lhs_t = rng.standard_normal((256, 128), np.float32)
    rhs = rng.standard_normal((256, 256), np.float32)
    np.testing.assert_allclose(blocked_matmul(lhs_t, rhs), lhs_t.T @ rhs, rtol=1e-4, atol=1e-3)
    traced = nki.trace(blocked_matmul, lhs_t, rhs)
    opcodes = [i[0] for i in traced.trace.instructions]
    # The second matmul accumulates in place: no add on the Vector engine.
    assert opcodes.count("nc_matmul") == 2 and "tensor_tensor" not in opcodes


def test_a_partition_broadcast_is_a_dma_the_estimate_counts():
    @nki.jit
    def scale_rows(x, g):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        weight = nl.load(g.reshape((1, g.shape[0])))
        nl.store(out, value=nl.multiply(nl.load(x), weight))
        return out

    x = rng.standard_normal((128, 64), np.float32)
    g = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(scale_rows(x, g), x * g, rtol=1e-6)
    traced = nki.trace(scale_rows, x, g)
    copies = [i for i in traced.trace.instructions if i[0] == "dma_copy"]
    assert len(copies) == 4  # two loads, the broadcast, the store
    estimate = nki.estimate(scale_rows)(x, g)
    assert estimate.busy_us["dma"] > 0


def test_numpy_operators_and_dtypes_are_accepted():
    @nki.jit
    def bias_then_scale(x):
        out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        tile = nl.load(x)
        result = nisa.tensor_scalar(data=tile, op0=np.add, operand0=1.0, op1=np.multiply,
                                    operand1=0.5, dtype=nl.bfloat16)
        nl.store(out, value=result)
        return out

    x = rng.standard_normal((32, 16), np.float32)
    out = bias_then_scale(x)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out, ((x + 1) * 0.5).astype(ml_dtypes.bfloat16))


def test_a_tiles_dtype_equals_every_spelling_of_it():
    seen = {}

    @nki.jit
    def probe(x):
        tile = nl.load(x)
        seen["dtype"] = tile.dtype
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=tile)
        return out

    probe(np.zeros((4, 4), np.float32))
    for spelling in (np.float32, nl.float32, torch.float32, "float32"):
        assert seen["dtype"] == spelling


def test_iota_of_an_expression_and_affine_select_of_a_predicate():
    @nki.jit
    def causal_positions(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        i_q, i_k = nl.mgrid[0:128, 0:128]
        positions = nisa.iota(i_q * 128 + i_k, dtype=nl.float32)
        nl.store(out, value=nisa.affine_select(i_q >= i_k, positions, -1.0))
        return out

    expected = np.where(np.tril(np.ones((128, 128))) > 0,
                        np.arange(128 * 128, dtype=np.float32).reshape(128, 128), -1.0)
    np.testing.assert_array_equal(causal_positions(np.zeros(1, np.float32)), expected)


def test_jit_modes_simulation_baremetal_and_benchmark():
    def double(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(x), 2.0))
        return out

    x = rng.standard_normal((128, 32), np.float32)
    np.testing.assert_array_equal(nki.jit(mode="simulation")(double)(x), 2 * x)
    np.testing.assert_array_equal(nki.baremetal(double)(x), 2 * x)
    benchmarked = nki.benchmark(double, warmup=2, iters=5, save_neff_name="file.neff")
    np.testing.assert_array_equal(benchmarked(x), 2 * x)
    latency = benchmarked.benchmark_result.nc_latency.get_latency_percentile(50)
    assert latency == nki.estimate(nki.jit(double))(x).total_us > 0
    with pytest.raises(TypeError, match="unexpected options"):
        nki.jit(double, no_such_option=1)


def test_simulate_kernel_and_a_grid_of_nc_and_spmd_dim():
    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        rows = nl.arange(64)[:, None]
        columns = nl.arange(a.shape[1])[None, :]
        nl.store(out[i * 64 + rows, columns], value=nl.add(nl.load(a[i * 64 + rows, columns]),
                                                           nl.load(b[i * 64 + rows, columns])))
        return out

    a = rng.standard_normal((256, 8), np.float32)
    b = rng.standard_normal((256, 8), np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(add[nl.spmd_dim(nl.nc(2), 2)], a, b), a + b)


def test_the_kernels_bundled_with_awss_compiler_name_where_to_find_them():
    with pytest.raises(ImportError, match="nki-samples"):
        import neuronxcc.nki.kernels  # noqa: F401


def test_a_value_bound_to_a_name_is_copied_not_retargeted():
    @nki.jit
    def keep(x):
        out = nl.ndarray((2, 128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        loaded = nl.load(x)
        tile = nl.ndarray((128, 64), dtype=x.dtype)
        tile[...] = loaded
        tile[...] = 0.0
        nl.store(out[0], value=loaded)
        nl.store(out[1], value=tile)
        return out

    x = rng.standard_normal((128, 64), np.float32)
    out = keep(x)
    np.testing.assert_array_equal(out[0], x)
    assert not out[1].any()


def test_psum_block_tiles_take_a_bank_each_and_a_kernel_may_return_an_hbm_tensor():
    @nki.jit
    def blocks(lhs_t, rhs):
        out = nl.ndarray((4, 128, 512), dtype=np.float32, buffer=nl.hbm)
        acc = nl.zeros((4, nl.par_dim(128), 512), np.float32, buffer=nl.psum)
        for b in nl.affine_range(4):
            acc[b] += nisa.nc_matmul(nl.load(lhs_t), nl.load(rhs[b]))
            nl.store(out[b], value=nl.copy(acc[b]))
        return out

    lhs_t = rng.standard_normal((128, 128), np.float32)
    rhs = rng.standard_normal((4, 128, 512), np.float32)
    np.testing.assert_allclose(blocks(lhs_t, rhs), lhs_t.T @ rhs, rtol=1e-4, atol=1e-3)


def test_psum_blocks_smaller_than_a_bank_share_banks():
    # 16 blocks of 128 float32 (512 bytes a partition): four to a bank, so
    # the tile takes 4 of PSUM's 8 banks (AWS's attention samples do this).
    @nki.jit
    def blocks(lhs_t, rhs):
        out = nl.ndarray((4, 4, 128, 128), dtype=np.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((4, 4, nl.par_dim(128), 128), dtype=np.float32, buffer=nl.psum)
        lhs = nl.load(lhs_t)
        for a in nl.affine_range(4):
            for b in nl.affine_range(4):
                acc[a, b] = nisa.nc_matmul(lhs, nl.load(rhs[a, b]))
        for a in nl.affine_range(4):
            for b in nl.affine_range(4):
                nl.store(out[a, b], value=nl.copy(acc[a, b]))
        return out

    lhs_t = rng.standard_normal((128, 128), np.float32)
    rhs = rng.standard_normal((4, 4, 128, 128), np.float32)
    np.testing.assert_allclose(blocks(lhs_t, rhs), lhs_t.T @ rhs, rtol=1e-4, atol=1e-3)

    @nki.jit
    def too_many(x):
        acc = nl.ndarray((40, nl.par_dim(128), 128), dtype=np.float32, buffer=nl.psum)
        return acc

    with pytest.raises(NkiValidationError, match="10 banks' worth; PSUM has 8"):
        too_many(np.zeros((1, 1), np.float32))


def test_legacy_constants_numpy_scalars_and_finfo_of_a_tiles_dtype():
    @nki.jit
    def clamp_average(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)
        lowest = nl.finfo(tile.dtype).min
        count = np.int32(x.shape[1]) * np.int32(1)
        floor = nl.full(x.shape, fill_value=nl.fp32.min, dtype=np.float32,
                        lazy_initialization=False)
        ceiling = nl.full(x.shape, np.float32(1e30), np.float32)
        zero = nl.zeros(shape=x.shape, dtype=np.float32)
        nl.store(out, value=nl.minimum(nl.maximum(nl.divide(tile, count), floor), ceiling) + zero)
        assert lowest == np.finfo(np.float32).min
        return out

    x = rng.standard_normal((8, 16), np.float32)
    np.testing.assert_allclose(clamp_average(x), x / 16, rtol=1e-6)
    # AWS's dma_transpose example imports the constants module by its legacy name.
    from neuronxcc.nki.isa.constants import dge_mode
    assert dge_mode is nki.isa.dge_mode


def test_dataclass_configurations_of_nkiobject_take_their_plain_attributes():
    import dataclasses

    @dataclasses.dataclass
    class Tiling(nl.NKIObject):
        rows: int = 128
        columns = None

    @nki.jit
    def scaled(x, tiling):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(x), float(tiling.columns)))
        return out

    x = rng.standard_normal((8, 16), np.float32)
    np.testing.assert_allclose(scaled(x, Tiling(columns=3)), 3 * x)


def test_an_index_tile_gathers_and_scatters_rows():
    @nki.jit(mode="simulation")
    def permute_rows(data, order):
        out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(32)[:, None]
        i_f = nl.arange(data.shape[1])[None, :]
        index = nl.load(order[i_p])
        rows = nl.load(data[index[i_p, 0], i_f])
        nl.store(out[index, i_f], value=rows)
        return out

    data = rng.standard_normal((32, 16), np.float32)
    order = rng.permutation(32).astype(np.int32)
    np.testing.assert_array_equal(permute_rows(data, order), data)
