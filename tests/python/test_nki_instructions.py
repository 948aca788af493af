"""nki.isa's instructions one by one against NumPy, each run in
nki.simulate and on the device (the daemon decodes and runs the same
instructions): scans, the accumulators, selections, the top-8 family,
gathers, batch-norm statistics, fp8 and random numbers."""

import ml_dtypes
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl

rng = np.random.default_rng(7)


def run(kernel, *arguments):
    """The kernel's outputs in nki.simulate, checked equal to the device's
    (NumPy arrays through nki.baremetal's path)."""
    simulated = nki.simulate(nki.jit(kernel))(*arguments)
    on_device = nki.jit(kernel, mode="baremetal")(*arguments)
    for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (simulated, on_device))):
        np.testing.assert_array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return simulated


def test_tensor_tensor_scan_is_a_linear_recurrence_from_a_per_partition_initial():
    a = rng.random((128, 64), np.float32)
    b = rng.standard_normal((128, 64), np.float32)
    initial = rng.standard_normal((128, 1), np.float32)

    def kernel(a, b, initial):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        result = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(result, nl.load(a), nl.load(b), nl.load(initial), nl.multiply,
                                nl.add)
        nl.store(out, result)
        return out

    expected = np.empty_like(a)
    state = initial[:, 0]
    for i in range(a.shape[1]):
        state = a[:, i] * state + b[:, i]
        expected[:, i] = state
    np.testing.assert_allclose(run(kernel, a, b, initial), expected, rtol=1e-5, atol=1e-5)


def test_tensor_scalar_cumulative_carries_the_accumulator_to_the_next_instruction():
    x = np.ones((128, 16), np.float32)

    def kernel(x):
        out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        first = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
        second = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(first, tile, nl.multiply, nl.add, 2.0)
        nisa.tensor_scalar_cumulative(second, tile, nl.multiply, nl.add, 2.0,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
        nl.store(out[:, 0:16], first)
        nl.store(out[:, 16:32], second)
        return out

    expected = np.tile(np.arange(1, 33, dtype=np.float32) * 2, (128, 1))
    np.testing.assert_allclose(run(kernel, x), expected)


def test_activation_accumulates_across_instructions_with_reduce_cmd():
    x = rng.standard_normal((128, 64), np.float32)

    def kernel(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        squares = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(squares, nl.square, tile[:, 0:32], reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(squares, nl.square, tile[:, 32:64], reduce_op=nl.add, reduce_res=total,
                        reduce_cmd=nisa.reduce_cmd.reduce)
        nl.store(out, total)
        return out

    np.testing.assert_allclose(run(kernel, x), (x * x).sum(1, keepdims=True), rtol=1e-5)


def test_tensor_partition_reduce_sums_over_the_partitions():
    x = rng.standard_normal((128, 8, 4), np.float32)

    def kernel(x):
        out = nl.ndarray((1, 8, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        result = nl.ndarray((1, 8, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(result, nl.add, nl.load(x))
        nl.store(out, result)
        return out

    np.testing.assert_allclose(run(kernel, x), x.sum(0, keepdims=True), rtol=1e-5, atol=1e-5)


def test_tensor_scalar_reduce_writes_the_result_and_its_negated_reduction():
    x = rng.standard_normal((64, 32), np.float32)

    def kernel(x):
        out = nl.ndarray((64, 33), dtype=nl.float32, buffer=nl.shared_hbm)
        result = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.sbuf)
        biggest = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(result, nl.load(x), nl.multiply, 3.0, nl.maximum,
                                  reduce_res=biggest, reduce_res_negate=True)
        nl.store(out[:, 0:32], result)
        nl.store(out[:, 32:33], biggest)
        return out

    out = run(kernel, x)
    np.testing.assert_allclose(out[:, :32], 3 * x, rtol=1e-6)
    np.testing.assert_allclose(out[:, 32], -(3 * x).max(1), rtol=1e-6)


def test_bn_stats_and_bn_aggr_give_the_mean_and_variance():
    x = rng.standard_normal((128, 1024), np.float32)

    def kernel(x):
        out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        stats = nl.ndarray((128, 12), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_stats(stats[:, 0:6], tile[:, 0:512])
        nisa.bn_stats(stats[:, 6:12], tile[:, 512:1024])
        moments = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(moments, stats)
        nl.store(out, moments)
        return out

    out = run(kernel, x)
    np.testing.assert_allclose(out[:, 0], x.mean(1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[:, 1], x.var(1), rtol=1e-4, atol=1e-5)


def test_max8_and_nc_find_index8_find_the_top_eight_and_where_they_are():
    x = rng.standard_normal((128, 100), np.float32)

    def kernel(x):
        values = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        where = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(top, tile)
        index = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_find_index8(index, tile, top)
        nl.store(values, top)
        nl.store(where, index)
        return values, where

    values, where = run(kernel, x)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(where, order)


def test_nc_match_replace8_replaces_the_matches_and_gives_their_indices():
    data = np.array([[1, 2, 3, 4] + [8] * 7 + [5] * 5], np.float32).repeat(32, 0)
    vals = np.array([[3] + [8] * 7], np.float32).repeat(32, 0)

    def kernel(data, vals):
        out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        where = nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        replaced = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
        index = nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_match_replace8(replaced, nl.load(data), nl.load(vals), -1.0, dst_idx=index)
        nl.store(out, replaced)
        nl.store(where, index)
        return out, where

    out, where = run(kernel, data, vals)
    # AWS's documented example: the last value takes the earliest match.
    np.testing.assert_array_equal(where[0], [2, 10, 9, 8, 7, 6, 5, 4])
    np.testing.assert_array_equal(out[0], [1, 2, -1, 4] + [-1] * 7 + [5] * 5)


def test_affine_select_keeps_the_lower_triangle():
    x = rng.standard_normal((128, 128), np.float32)

    def kernel(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        result = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(result, [[-1, 128]], 1, nl.load(x), -9.0, cmp_op=nl.greater_equal)
        nl.store(out, result)
        return out

    np.testing.assert_array_equal(run(kernel, x), np.where(np.tril(np.ones((128, 128))) > 0,
                                                           x, -9.0))


def test_range_select_and_select_reduce_keep_the_running_maximum():
    x = rng.standard_normal((128, 64), np.float32)
    low = rng.integers(0, 32, (128, 1)).astype(np.float32)

    def kernel(x, low):
        out = nl.ndarray((128, 65), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        bound = nl.load(low)
        selected = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        best = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(selected, tile, nl.greater_equal, nl.less, bound,
                          nl.add(bound, 16.0), reduce_res=best)
        nl.store(out[:, 0:64], selected)
        nl.store(out[:, 64:65], best)
        return out

    out = run(kernel, x, low)
    index = np.arange(64)[None, :]
    inside = (index >= low) & (index < low + 16)
    expected = np.where(inside, x, np.finfo(np.float32).min)
    np.testing.assert_array_equal(out[:, :64], expected)
    np.testing.assert_array_equal(out[:, 64], expected.max(1))


def test_nc_stream_shuffle_spreads_one_partition_to_its_group():
    x = rng.standard_normal((1, 16), np.float32)

    def kernel(x):
        out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        spread = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(spread, nl.load(x), [0] * 32)
        nl.store(out, spread)
        return out

    np.testing.assert_array_equal(run(kernel, x), np.repeat(x, 32, 0))


def test_nc_n_gather_and_local_gather_pick_elements_by_index():
    data = rng.standard_normal((16, 64), np.float32)
    index = rng.integers(0, 60, (16, 4)).astype(np.uint16)

    def kernel(data, index):
        gathered = nl.ndarray((16, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        local = nl.ndarray((16, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(data)
        where = nl.load(index)
        picked = nl.ndarray((16, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(picked, tile, nl.copy(where, dtype=nl.uint32))
        pairs = nl.ndarray((16, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.local_gather(pairs, tile, where, num_elem_per_idx=2)
        nl.store(gathered, picked)
        nl.store(local, pairs)
        return gathered, local

    gathered, local = run(kernel, data, index)
    np.testing.assert_array_equal(gathered, np.take_along_axis(data, index.astype(np.int64), 1))
    ids = index.T.reshape(-1)  # partition-first
    expected = np.concatenate([data[:, i:i + 2] for i in ids], axis=1)
    np.testing.assert_array_equal(local, expected)


def test_sequence_bounds_gives_each_segments_start_and_end():
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.float32)

    def kernel(ids):
        out = nl.ndarray((1, 2, 9), dtype=nl.float32, buffer=nl.shared_hbm)
        bounds = nl.ndarray((1, 2, 9), dtype=nl.float32, buffer=nl.sbuf)
        nisa.sequence_bounds(bounds, nl.load(ids))
        nl.store(out, bounds)
        return out

    np.testing.assert_array_equal(run(kernel, ids)[0], [[9, 1, 1, 3, 3, 3, 9, 7, 7],
                                                         [-1, 3, 3, 6, 6, 6, -1, 9, 9]])


def test_nonzero_with_count_lists_the_nonzero_indices_of_each_cores_first_partition():
    src = np.zeros((32, 8), np.float32)
    src[0, [1, 4]] = 5
    src[16, [0, 7, 3]] = 1

    def kernel(src):
        out = nl.ndarray((32, 9), dtype=nl.int32, buffer=nl.shared_hbm)
        found = nl.zeros((32, 9), dtype=nl.int32, buffer=nl.sbuf)
        nisa.nonzero_with_count(found, nl.load(src), index_offset=10)
        nl.store(out, found)
        return out

    out = run(kernel, src)
    np.testing.assert_array_equal(out[0], [11, 14, -1, -1, -1, -1, -1, -1, 2])
    np.testing.assert_array_equal(out[16], [10, 13, 17, -1, -1, -1, -1, -1, 3])
    assert not out[1].any()


def test_bit_operators_work_on_the_integers_bits():
    a = rng.integers(0, 1 << 30, (8, 16)).astype(np.int32)
    b = rng.integers(0, 1 << 30, (8, 16)).astype(np.int32)

    def kernel(a, b):
        out = nl.ndarray((8, 16), dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, nl.bitwise_xor(nl.load(a), nl.right_shift(nl.load(b), 3)))
        return out

    np.testing.assert_array_equal(run(kernel, a, b), a ^ (b >> 3))


@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn,
                                   ml_dtypes.float8_e5m2, ml_dtypes.bfloat16])
def test_narrow_float_arrays_round_trip_and_round_like_ml_dtypes(dtype):
    x = (rng.standard_normal((32, 64)) * 50).astype(np.float32)

    def kernel(x, dtype):
        out = nl.ndarray(x.shape, dtype=dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(x), 1.5, dtype=dtype))
        return out

    out = run(kernel, x, np.dtype(dtype))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.astype(np.float32),
                                  (x * np.float32(1.5)).astype(dtype).astype(np.float32))


def test_random_numbers_repeat_after_the_same_seed():
    def kernel(x):
        out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        for round_ in range(2):
            nl.random_seed(1234)
            nl.store(out[round_], nl.rand((128, 64), nl.float32))
        return out

    out = run(kernel, np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(out[0], out[1])
    assert 0 <= out.min() and out.max() < 1 and 0.45 < out.mean() < 0.55


def test_dropout_zeroes_about_its_rate():
    x = np.ones((128, 512), np.float32)

    def kernel(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.dropout(nl.load(x), 0.25))
        return out

    out = run(kernel, x)
    assert set(np.unique(out)) <= {0.0, 1.0}
    assert 0.22 < (out == 0).mean() < 0.28


# -- indirect DMA: offsets read from a tile when the kernel runs ------------------------

def test_a_vector_offset_gathers_rows_and_an_index_tile_scatters_them():
    table = rng.standard_normal((64, 16), np.float32)
    rows = rng.permutation(64)[:32].astype(np.int32).reshape(32, 1)

    def kernel(table, rows):
        gathered = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        scattered = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        index = nl.load(rows)
        tile = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(tile, table.ap([[16, 32], [1, 16]], vector_offset=index))
        nl.store(gathered, tile)
        zeros = nl.zeros((64, 16), dtype=nl.float32)
        nl.store(scattered, zeros)
        nisa.dma_copy(scattered.ap([[16, 32], [1, 16]], vector_offset=index), tile)
        return gathered, scattered

    gathered, scattered = run(kernel, table, rows)
    np.testing.assert_array_equal(gathered, table[rows[:, 0]])
    expected = np.zeros((64, 16), np.float32)
    expected[rows[:, 0]] = table[rows[:, 0]]
    np.testing.assert_array_equal(scattered, expected)


def test_a_scalar_offset_and_select_by_a_tile_move_the_whole_view():
    table = rng.standard_normal((8, 32), np.float32)
    which = np.array([[5]], np.int32)

    def kernel(table, which):
        out = nl.ndarray((2, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        index = nl.load(which)
        row = nl.ndarray((1, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(row, table.ap([[32, 1], [1, 32]], scalar_offset=index, indirect_dim=0))
        nl.store(out[0:1, :], row)
        again = nl.ndarray((1, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(again, table.select(0, index))
        nl.store(out[1:2, :], again)
        return out

    np.testing.assert_array_equal(run(kernel, table, which), table[[5, 5]])


def test_dma_compute_adds_into_rows_picked_by_an_index_duplicates_included():
    rows = np.array([[1], [3], [1], [0]], np.int32)
    updates = rng.standard_normal((4, 8), np.float32)

    def kernel(rows, updates):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.ones((4, 8), dtype=nl.float32))
        index = nl.load(rows)
        target = out.ap([[8, 4], [1, 8]], vector_offset=index)
        nisa.dma_compute(target, [target, nl.load(updates)], nl.add)
        return out

    expected = np.ones((4, 8), np.float32)
    np.add.at(expected, rows[:, 0], updates)
    np.testing.assert_allclose(run(kernel, rows, updates), expected, rtol=1e-6)


def test_an_index_outside_the_tensor_fails_the_launch_naming_it():
    table = np.zeros((8, 4), np.float32)

    def kernel(table, rows):
        out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(tile, table.ap([[4, 2], [1, 4]], vector_offset=nl.load(rows)))
        nl.store(out, tile)
        return out

    with pytest.raises(ValueError, match="indirect index of HBM tensor 'table' is outside it"):
        nki.simulate(nki.jit(kernel))(table, np.array([[1], [9]], np.int32))
