"""Operators on neuron against the same on the CPU, float32 and bfloat16,
and that none of them falls back to the CPU."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torch_neuronx

F32 = dict(rtol=1e-5, atol=1e-5)
BF16 = dict(rtol=2e-2, atol=2e-2)


def make(*shape, dtype=torch.float32, positive=False, seed=0):
    generator = torch.Generator().manual_seed(seed + len(shape) * 7 + sum(shape))
    x = torch.randn(*shape, generator=generator)
    return (x.abs() + 0.1 if positive else x).to(dtype)


OPS = {
    "add": lambda a, b: a + b * 2,
    "sub_mul_div": lambda a, b: (a - b) * a / (b.abs() + 1),
    "pow_sqrt_exp_log": lambda a, b: a.abs().sqrt() + torch.exp(b.clamp(max=2)) + torch.log(a.abs() + 1),
    "activations": lambda a, b: F.gelu(a) + F.relu(b) + torch.sigmoid(a) + torch.tanh(b) + F.silu(a),
    "sum_mean_amax": lambda a, b: torch.stack([a.sum(), a.mean(1).sum(), b.amax(0).sum(), a.var()]),
    "matmul": lambda a, b: a @ b.T,
    "bmm": lambda a, b: torch.bmm(a.reshape(2, 4, 8), b.reshape(2, 8, 4)),
    "softmax": lambda a, b: F.softmax(a, dim=-1) + F.log_softmax(b, dim=0),
    "layer_norm": lambda a, b: F.layer_norm(a, (8,)),
    "cat_stack": lambda a, b: torch.cat([a, b], 0) .sum(0) + torch.stack([a, b]).mean(0).sum(0),
    "where_cmp": lambda a, b: torch.where(a > b, a, b * 0.5),
    "cumsum": lambda a, b: torch.cumsum(a, dim=1),
    "sort_values": lambda a, b: torch.sort(a, dim=1).values,
    "topk": lambda a, b: torch.topk(a, 3, dim=1).values,
    "transpose_contiguous": lambda a, b: a.t().contiguous() * 1.5,
    "max_dim": lambda a, b: torch.max(a, dim=1).values + torch.argmax(b, dim=1).float(),
}


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, F32), (torch.bfloat16, BF16)],
                         ids=["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_cpu(name, dtype, tolerance):
    a, b = make(8, 8, dtype=dtype), make(8, 8, dtype=dtype, seed=1)
    expected = OPS[name](a, b)
    actual = OPS[name](a.to("neuron"), b.to("neuron"))
    assert actual.device.type == "neuron"
    torch.testing.assert_close(actual.cpu(), expected, **tolerance)


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, F32), (torch.bfloat16, BF16)],
                         ids=["float32", "bfloat16"])
def test_conv_pool_batchnorm_match_cpu(dtype, tolerance):
    x = make(2, 3, 10, 10, dtype=dtype)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).to(dtype)
    norm = torch.nn.BatchNorm2d(4).to(dtype)
    conv_n, norm_n = copy.deepcopy(conv).to("neuron"), copy.deepcopy(norm).to("neuron")
    expected = F.max_pool2d(norm(conv(x)), 2)
    actual = F.max_pool2d(norm_n(conv_n(x.to("neuron"))), 2)
    torch.testing.assert_close(actual.cpu(), expected, **tolerance)
    torch.testing.assert_close(norm_n.running_mean.cpu(), norm.running_mean, **tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_embedding_indexing_and_scatter_match_cpu(dtype):
    table = make(10, 4, dtype=dtype)
    ids = torch.tensor([[1, 3, 3], [0, 9, 2]])
    n_table, n_ids = table.to("neuron"), ids.to("neuron")
    torch.testing.assert_close(F.embedding(n_ids, n_table).cpu(), F.embedding(ids, table))
    torch.testing.assert_close(n_table[n_ids[0]].cpu(), table[ids[0]])
    torch.testing.assert_close(torch.gather(n_table, 1, n_ids[:, :2].T.contiguous() % 4).cpu(),
                               torch.gather(table, 1, ids[:, :2].T.contiguous() % 4))
    target = torch.zeros(3, 4, dtype=dtype)
    index = torch.tensor([[0, 1, 2, 0]])
    expected = target.scatter_add(0, index, torch.ones(1, 4, dtype=dtype))
    actual = target.to("neuron").scatter_add(0, index.to("neuron"),
                                             torch.ones(1, 4, dtype=dtype, device="neuron"))
    torch.testing.assert_close(actual.cpu(), expected)
    updated = table.clone()
    updated[ids[0]] = 0.5
    n_updated = n_table.clone()
    n_updated[n_ids[0]] = 0.5
    torch.testing.assert_close(n_updated.cpu(), updated)


def test_data_dependent_ops():
    x = torch.tensor([[1.0, 0.0, 3.0], [0.0, -2.0, 0.0]])
    n = x.to("neuron")
    assert torch.nonzero(n).cpu().tolist() == torch.nonzero(x).tolist()
    assert n[n > 0].cpu().tolist() == x[x > 0].tolist()
    assert torch.masked_select(n, n != 0).cpu().tolist() == torch.masked_select(x, x != 0).tolist()
    y, m = x.clone(), n.clone()
    y[y < 0] = 7
    m[m < 0] = 7
    assert m.cpu().tolist() == y.tolist()
    assert torch.unique(n).cpu().tolist() == torch.unique(x).tolist()
    values = torch.tensor([[3, 1, 3], [2, 1, 7]])
    expected = torch.unique(values, return_inverse=True, return_counts=True)
    actual = torch.unique(values.to("neuron"), return_inverse=True, return_counts=True)
    for a, e in zip(actual, expected):
        assert a.device.type == "neuron" and a.cpu().tolist() == e.tolist()
    assert torch.unique(torch.tensor([], device="neuron")).numel() == 0
    counts = torch.tensor([1, 3, 3, 0])
    assert torch.bincount(counts.to("neuron"), minlength=6).cpu().tolist() == torch.bincount(
        counts, minlength=6).tolist()
    assert torch.equal(n, n.clone()) and not torch.equal(n, n + 1)
    assert not {"aten::bincount", "aten::equal"} & set(torch_neuronx.get_fallback_ops())
    assert "aten::_unique2" not in torch_neuronx.get_fallback_ops()


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, F32), (torch.bfloat16, BF16)],
                         ids=["float32", "bfloat16"])
def test_cross_entropy_and_losses_match_cpu(dtype, tolerance):
    logits, target = make(6, 5, dtype=dtype), torch.tensor([0, 4, 2, 1, 3, 3])
    expected = F.cross_entropy(logits, target) + F.mse_loss(logits, logits * 0.5)
    actual = F.cross_entropy(logits.to("neuron"), target.to("neuron")) + F.mse_loss(
        logits.to("neuron"), logits.to("neuron") * 0.5)
    torch.testing.assert_close(actual.cpu(), expected, **tolerance)


def test_an_mlp_and_a_transformer_block_need_no_cpu_fallback(run_python):
    result = run_python(
        "import torch, torch_neuronx\n"
        "layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)\n"
        "mlp = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32))\n"
        "model = torch.nn.Sequential(layer, mlp).to('neuron')\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "x = torch.randn(2, 5, 32, device='neuron')\n"
        "loss = model(x).square().mean(); loss.backward(); opt.step()\n"
        "print(loss.item() > 0, torch_neuronx.get_fallback_ops())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True []", result.stdout + result.stderr


def test_a_librarys_own_operator_runs_on_cpu_copies_and_comes_back():
    # neuron-rtd runs ATen operators only: a library's own (torchvision::nms,
    # this one) run in the process on CPU copies (it was refused by the
    # daemon: "not an ATen or prims operator").
    library = torch.library.Library("neuron_test_ops", "DEF")
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: x * 2, "CPU")
    # With a meta kernel (as torchvision's nms has) the generic path would
    # build an executable that the daemon must refuse.
    library.impl("twice", lambda x: torch.empty_like(x), "Meta")
    x = torch.arange(4.0, device="neuron")
    y = torch.ops.neuron_test_ops.twice(x)
    assert y.device.type == "neuron"
    assert y.cpu().tolist() == [0.0, 2.0, 4.0, 6.0]
    assert "neuron_test_ops::twice" in torch_neuronx.get_fallback_ops()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.complex64],
                         ids=["float32", "int64", "complex64"])
def test_foreach_with_a_scalar_list_of_mixed_kinds_matches_cpu(dtype):
    cpu = [torch.ones(3, dtype=dtype) for _ in range(3)]
    scalars = [1, 2.5, 3 + 4.5j]
    expected = torch._foreach_add(cpu, scalars)
    actual = torch._foreach_add([t.to("neuron") for t in cpu], scalars)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got.cpu(), want)


def test_foreach_mm_multiplies_matrices_that_do_not_broadcast():
    a = [torch.randn(16, 24), torch.randn(3, 5)]
    b = [torch.randn(24, 8), torch.randn(5, 2)]
    actual = torch._foreach_mm([t.to("neuron") for t in a], [t.to("neuron") for t in b])
    for got, want in zip(actual, torch._foreach_mm(a, b)):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", [torch._foreach_addcdiv, torch._foreach_addcmul,
                                torch._foreach_addcdiv_, torch._foreach_addcmul_],
                         ids=["addcdiv", "addcmul", "addcdiv_", "addcmul_"])
def test_foreach_with_scalars_in_a_cpu_tensor_matches_cpu(op):
    cpu = [torch.rand(4) + 1 for _ in range(3)]
    device = [t.to("neuron") for t in cpu]
    scalars = torch.tensor([0.5, 2.0, -1.0])
    expected = op(cpu, cpu[::-1], cpu, scalars) or cpu
    actual = op(device, device[::-1], device, scalars) or device
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got.cpu(), want)
    with pytest.raises(RuntimeError, match="Expected scalars to be on CPU, got neuron:0 instead"):
        op(device, device, device, scalars.to("neuron"))
    with pytest.raises(RuntimeError, match="Expected length of scalars to match input of length 3"):
        op(device, device, device, scalars[:2])


def test_a_sampler_with_an_out_tensor_it_resizes_draws_once():
    # Resizing the out= tensor walks the call twice; the second walk must
    # send the seed the first drew, not draw another.
    state = torch.neuron.get_rng_state()
    expected = [torch.randperm(6, device="neuron").cpu() for _ in range(2)]
    torch.neuron.set_rng_state(state)
    out = torch.empty(0, dtype=torch.long, device="neuron")
    torch.randperm(6, out=out)
    after = torch.randperm(6, device="neuron")
    assert torch.equal(out.cpu(), expected[0]) and torch.equal(after.cpu(), expected[1])


def test_arange_into_an_out_tensor_of_another_count_warns_as_on_the_cpu():
    line = torch.zeros(1, 49, device="neuron")
    with pytest.warns(UserWarning, match="The out tensor will be resized to a tensor of shape \\(50,\\)"):
        torch.arange(-1, 1, 2.0 / 49, dtype=torch.float32, out=line)
    assert line.shape == (50,)
    torch.testing.assert_close(line.cpu(), torch.arange(-1, 1, 2.0 / 49, dtype=torch.float32))


def test_multilabel_margin_loss_of_one_sample_without_reduction_is_0_d_as_on_the_cpu():
    # Its meta kernel (a decomposition) makes the vector a batch of one.
    x = torch.randn(4, requires_grad=True)
    target = torch.tensor([1, -1, 0, 0])
    expected = torch.nn.functional.multilabel_margin_loss(x, target, reduction="none")
    on_device = x.detach().to("neuron").requires_grad_()
    got = torch.nn.functional.multilabel_margin_loss(on_device, target.to("neuron"), reduction="none")
    assert got.shape == expected.shape == ()
    torch.testing.assert_close(got.detach().cpu(), expected.detach())
    expected.backward()
    got.backward()
    torch.testing.assert_close(on_device.grad.cpu(), x.grad)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_with_an_empty_index_runs_as_on_the_cpu(reduce):
    # PyTorch's meta kernel reads a slice of the (empty) source and refuses
    # the call; the CPU's kernel accepts it, so neuron runs it there.
    expected = torch.arange(60.0).reshape(3, 4, 5)
    for include_self in (True, False):
        dest = expected.to("neuron")
        dest.index_reduce_(2, torch.zeros(0, dtype=torch.long, device="neuron"),
                           torch.zeros(3, 4, 0, device="neuron"), reduce, include_self=include_self)
        assert torch.equal(dest.cpu(), expected)
    with pytest.raises(IndexError, match="out of range"):
        torch.zeros(3, device="neuron").index_reduce_(0, torch.tensor([5], device="neuron"),
                                                      torch.ones(1, device="neuron"), reduce)


def test_an_unsigned_scalar_past_int64_runs_as_on_the_cpu():
    # An executable's integers are int64: such a call runs on the CPU.
    largest = 2**64 - 1
    assert torch.zeros(3, dtype=torch.uint64, device="neuron").fill_(largest).cpu().tolist() == [largest] * 3
    assert torch.full((2,), largest, dtype=torch.uint64, device="neuron").cpu().tolist() == [largest] * 2


def test_masked_select_refuses_a_mask_that_is_not_bool_as_the_cpu_does():
    values = torch.arange(4.0, device="neuron")
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        values.masked_select(torch.ones(4, dtype=torch.uint8, device="neuron"))
    assert values.masked_select(values > 1).cpu().tolist() == [2.0, 3.0]


@pytest.mark.parametrize("op", [torch.true_divide, torch.add, torch.sub, torch.mul, torch.pow,
                                torch.remainder, torch.div, torch.floor_divide, torch.xlogy])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_a_python_number_in_a_tensor_argument_takes_no_part_in_type_promotion(op, dtype):
    # torch.true_divide(3.5, t): Python passes 3.5 as a wrapped 0-d float64
    # tensor, which must not make the result float64.
    for tensor in (torch.tensor(2, dtype=dtype), torch.tensor([1, 2], dtype=dtype)):
        expected = op(3.5, tensor)
        result = op(3.5, tensor.to("neuron"))
        assert result.dtype == expected.dtype
        torch.testing.assert_close(result.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_floor_division_by_a_python_number_matches_the_cpu(dtype):
    # The number reaches the operator as a wrapped 0-d CPU tensor (MoE
    # routers and beam search divide indices so).
    values = torch.arange(-7, 9).to(dtype)
    for divisor in (2, 3, 2.5):
        expected = values // divisor
        result = values.to("neuron") // divisor
        assert result.dtype == expected.dtype
        torch.testing.assert_close(result.cpu(), expected)


@pytest.mark.parametrize("module, shape, memory_format", [
    (torch.nn.ReplicationPad2d((1, 2, 3, 1)), (2, 3, 4, 5), torch.channels_last),
    (torch.nn.ReplicationPad3d(1), (2, 3, 4, 5, 6), torch.channels_last_3d),
    (torch.nn.ReflectionPad3d(1), (2, 3, 4, 5, 6), torch.channels_last_3d),
], ids=["replication_pad2d", "replication_pad3d", "reflection_pad3d"])
def test_a_kernel_that_restrides_its_out_tensor_gives_the_cpus_values(module, shape, memory_format):
    # These CPU kernels restride a right-sized out= tensor to their input's
    # channels-last layout and write it so; the daemon puts the values back
    # in the layout the client reads.
    x = torch.randn(shape).contiguous(memory_format=memory_format)
    grad = torch.randn_like(module(x))
    on_cpu = x.clone().requires_grad_()
    module(on_cpu).backward(grad)
    on_neuron = x.to("neuron").requires_grad_()
    result = module(on_neuron)
    result.backward(grad.to("neuron"))
    torch.testing.assert_close(result.detach().cpu(), module(x))
    torch.testing.assert_close(on_neuron.grad.cpu(), on_cpu.grad)
