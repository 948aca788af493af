"""Every name AWS documents for NKI, in both APIs, is here: implemented, or
listed in docs/nki.md as not supported, with a NotImplementedError that
names it when called. The lists are the names of AWS's API reference (the
current nki 0.6 of Neuron SDK 2.32 and the legacy neuronxcc.nki of SDK
2.26)."""

import importlib
import os
import re

import pytest

import nki  # noqa: F401

DOCUMENTED = {
    "nki": "jit simulate",
    "nki.language": """
        bool_ int8 int16 int32 uint8 uint16 uint32 float16 float32 bfloat16 tfloat32 float8_e4m3
        float8_e4m3fn float8_e5m2 float8_e5m2_x4 float8_e4m3fn_x4 float8_e8m0fnu float4_e2m1fn_x4
        sbuf psum hbm private_hbm shared_hbm tile_size average prelu bypass MemoryRegion NKIObject
        NkiTensor is_hbm is_on_chip is_psum is_sbuf add subtract multiply divide maximum minimum
        abs_max abs_min abs square power equal not_equal less less_equal greater greater_equal
        bitwise_and bitwise_or bitwise_xor invert left_shift right_shift logical_and logical_or
        logical_xor logical_not exp log sqrt rsqrt tanh sigmoid relu gelu gelu_apprx_sigmoid
        gelu_apprx_tanh gelu_dx gelu_apprx_sigmoid_dx silu silu_dx softplus mish erf erf_dx
        reciprocal copy sin cos tan arctan ceil floor trunc negative sign fmod mod sum max min
        mean prod var all softmax rms_norm where dropout ones full zeros_like empty_like
        random_seed expand_dims broadcast_to transpose matmul no_reorder load_transpose2d
        gather_flattened ds affine_range sequential_range static_range dynamic_range fori_loop
        while_loop ndarray zeros load store program_id num_programs program_ndim shared_constant
        shared_identity_matrix device_print rand""",
    "nki.isa": """
        tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine engine reduce_cmd
        dge_mode oob_mode matmul_perf_mode nc_version dma_engine NkiInstruction
        NkiValidationError VirtualRegister get_nc_sub_version get_nc_version dma_copy tensor_copy
        memset tensor_copy_predicated nc_matmul nc_matmul_mx nc_transpose dma_transpose
        tensor_tensor tensor_scalar tensor_reduce tensor_partition_reduce tensor_scalar_cumulative
        activation activation_reduce activate2 iota affine_select local_gather nc_n_gather
        bn_stats bn_aggr tensor_tensor_scan nc_stream_shuffle rng dropout set_rng_seed
        rand_set_state rand_get_state rand2 exponential reciprocal max8 sequence_bounds
        scalar_tensor_tensor tensor_scalar_reduce core_barrier dma_compute quantize_mx
        range_select select_reduce sendrecv register_alloc register_move register_load
        register_store nc_find_index8 nc_match_replace8 nonzero_with_count topk""",
    "nki.collectives": """
        ReplicaGroup all_reduce all_gather all_gather_v reduce_scatter all_to_all all_to_all_v
        collective_permute collective_permute_implicit collective_permute_implicit_reduce
        collective_permute_implicit_current_processing_rank_id rank_id""",
    "nki.typing": "tensor",
    "neuronxcc.nki": "FrameworkKernel tensor baremetal benchmark jit profile simulate_kernel",
    "neuronxcc.nki.language": """
        bfloat16 bool_ float16 float32 float8_e4m3 float8_e5m2 hbm int16 int32 int8 mgrid nc
        par_dim private_hbm psum sbuf shared_hbm spmd_dim tfloat32 tile_size uint16 uint32 uint8
        abs add affine_range all all_reduce arange arctan atomic_rmw bitwise_and bitwise_or
        bitwise_xor broadcast_to ceil copy cos device_print divide dropout ds empty_like equal erf
        erf_dx exp expand_dims finfo floor fmod full gather_flattened gelu gelu_apprx_sigmoid
        gelu_apprx_tanh gelu_dx gemm_grid gemm_stationary_grid greater greater_equal invert
        left_shift less less_equal load load_transpose2d log logical_and logical_not logical_or
        logical_xor loop_reduce matmul max maximum mean min minimum mish mod multiply ndarray
        negative not_equal num_programs ones power prod program_id program_ndim rand random_seed
        reciprocal relu right_shift rms_norm rsqrt sequential_range shared_constant
        shared_identity_matrix sigmoid sign silu silu_dx sin softmax softplus sqrt square
        static_cast static_range store subtract sum tan tanh transpose trunc var where zeros
        zeros_like""",
    "neuronxcc.nki.isa": """
        dge_mode dma_engine engine fp32 gpsimd_engine nc_version oob_mode reduce_cmd
        scalar_engine tensor_engine unknown_engine vector_engine activation activation_reduce
        affine_select bn_aggr bn_stats builtin_custom_op dma_copy dma_transpose dropout
        get_nc_version iota local_gather max8 memset nc_find_index8 nc_match_replace8 nc_matmul
        nc_stream_shuffle nc_transpose range_select reciprocal scalar_tensor_tensor select_reduce
        sequence_bounds tensor_copy tensor_copy_dynamic_dst tensor_copy_dynamic_src
        tensor_copy_predicated tensor_partition_reduce tensor_reduce tensor_scalar
        tensor_scalar_reduce tensor_tensor tensor_tensor_scan""",
    "neuronxcc.nki.compiler": """
        psum sbuf allocation_scope enable_stack_allocator force_auto_alloc multi_buffer no_reorder
        skip_middle_end_transformations""",
    "neuronxcc.nki.typing": "tensor",
}

_DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "nki.md")


def _not_supported_in_docs():
    """The names docs/nki.md's "Not supported" table lists (`module.name`)."""
    with open(_DOCS) as handle:
        text = handle.read()
    section = text.split("## Not supported", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([\w.]+)`", section, flags=re.MULTILINE))


def _names():
    for module, names in DOCUMENTED.items():
        for name in names.split():
            yield module, name


@pytest.mark.parametrize("module,name", list(_names()))
def test_a_documented_name_is_implemented_or_listed_as_not_supported(module, name):
    value = getattr(importlib.import_module(module), name, None)
    assert value is not None, f"{module}.{name} is documented by AWS and missing here"
    why = getattr(value, "__nki_unsupported__", None)
    listed = f"{module}.{name}" in _not_supported_in_docs()
    if why is None:
        assert not listed, f"{module}.{name} is implemented but docs/nki.md lists it as not " \
            "supported"
        return
    assert listed, f"{module}.{name} raises NotImplementedError but docs/nki.md does not list " \
        "it under 'Not supported'"
    with pytest.raises(NotImplementedError, match=re.escape(name)):
        value()


def test_every_name_the_docs_list_as_not_supported_is_documented_by_aws():
    documented = {f"{module}.{name}" for module, name in _names()}
    assert _not_supported_in_docs() <= documented
