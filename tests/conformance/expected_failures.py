"""What the conformance suite does not expect `neuron` to reproduce.

RANDOM_OUTPUTS: operators whose values are random or uninitialized (the
device draws from its own generator; `empty` returns whatever memory held):
only shapes and dtypes are compared, and no gradients. RANDOM_SAMPLES: the
same for the samples of an operator that draw random numbers (attention
with dropout).

EXPECTED_FAILURES: (operator id, mode or "*") -> why. Most entries are
declared limitations of the device (no sparse layouts); the rest are known
gaps, said so. The suite fails when a listed entry starts passing, so the list stays
true. Ids are OpInfo's `name` or `name.variant_test_name`.
"""

RANDOM_OUTPUTS = {
    "bernoulli", "normal", "normal.number_mean", "normal.in_place", "multinomial",
    "rand_like", "randn_like", "randint_like", "randint", "randn", "rand",
    "uniform", "exponential", "geometric", "cauchy", "log_normal",
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
    "new_empty_strided",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.feature_alpha_dropout.without_train", "nn.functional.rrelu",
    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
    "torch._refs.rand_like", "torch._refs.randn_like",
}

# Operators random only for some samples: operator id -> whether a sample is.
RANDOM_SAMPLES = {
    "nn.functional.scaled_dot_product_attention":
        lambda sample: sample.kwargs.get("dropout_p", 0.0) > 0,
    "nn.functional.multi_head_attention_forward":
        lambda sample: sample.kwargs.get("training", True) and sample.args[9] > 0,
    # A random projection inside; the low-rank factors differ with it.
    "svd_lowrank": lambda sample: True,
}

NO_SPARSE = "declared: neuron tensors are strided; sparse layouts are not supported"
EVAL_BATCH_NORM = ("declared: in eval mode the CPU kernel returns empty saved statistics; "
                   "neuron returns them in the meta kernel's size (CUDA's), contents "
                   "unspecified")
FALLS_BACK = ("known gap: no meta kernel, and its backward kernel's target indices are not "
              "yet validated for the daemon, so it runs on the CPU")

EXPECTED_FAILURES = {
    ("to_sparse", "*"): NO_SPARSE,
    ("sparse.mm.reduce", "*"): NO_SPARSE,
    ("sparse.sampled_addmm", "*"): NO_SPARSE,
    ("linalg.lstsq", "float32"): "known gap: linalg_lstsq runs on the CPU (no meta kernel; "
                                 "its residuals' size depends on the computed rank)",
    ("linalg.lstsq", "grad"): "known gap: linalg_lstsq runs on the CPU",
    ("linalg.lstsq.grad_oriented", "float32"): "known gap: linalg_lstsq runs on the CPU",
    ("linalg.lstsq.grad_oriented", "grad"): "known gap: linalg_lstsq runs on the CPU",
    ("nn.functional.multi_margin_loss", "grad"): FALLS_BACK,
    ("nn.functional.multilabel_margin_loss", "grad"): FALLS_BACK,
    ("nn.functional.ctc_loss", "grad"): FALLS_BACK,
    ("native_batch_norm", "float32"): EVAL_BATCH_NORM,
    ("native_batch_norm", "bfloat16"): EVAL_BATCH_NORM,
    ("_native_batch_norm_legit", "float32"): EVAL_BATCH_NORM,
    ("_native_batch_norm_legit", "bfloat16"): EVAL_BATCH_NORM,
    ("as_strided.partial_views", "*"): (
        "harness: the samples' as_strided reaches storage outside its input view, which a "
        "copy of the view to the device does not carry"),
    ("addr", "bfloat16"): ("known gap, not investigated: 2 of 50 elements of one sample differ "
                           "by 10% (one bfloat16 rounding near cancellation?)"),
    ("linalg.eig", "grad"): "known gap, not investigated: linalg_eig_backward's check that the "
                            "loss ignores the eigenvectors' phase fails on neuron for sample 0 "
                            "and passes on the CPU",
}
