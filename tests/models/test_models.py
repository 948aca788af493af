"""Real models of the ecosystem on `neuron`, each against a CPU twin.

Detection models run inference only (their post-processing is
torchvision's own operators, on CPU copies). Every other model is built
with random weights on the CPU (dropout and
stochastic depth off), copied to `neuron`, and both twins run an eval forward and then the same training step (train
mode, cross-entropy, SGD with momentum). Compared: logits, loss, every
gradient, every updated parameter and buffer (BatchNorm statistics), and
the eval output. CI runs the models marked `small`; `deploy/dev.sh models`
(NEURON_MODELS=all) runs every one and prints `N/M models`.
"""

import copy
import os

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx  # noqa: F401

from torchvision_compat import import_torchvision

torchvision = import_torchvision()
timm = pytest.importorskip("timm")

ALL = os.environ.get("NEURON_MODELS") == "all"


def tv(name, **kwargs):
    return lambda: torchvision.models.get_model(name, weights=None, **kwargs)


def tv_segmentation(name, **kwargs):
    return lambda: torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                                **kwargs)


def tm(name, **kwargs):
    return lambda: timm.create_model(name, pretrained=False, **kwargs)


# (name, builder, input size, small, autocast dtype)
MODELS = [
    ("torchvision.resnet18", tv("resnet18", num_classes=10), 64, True, None),
    ("torchvision.mobilenet_v3_small", tv("mobilenet_v3_small", num_classes=10), 64, True, None),
    ("torchvision.squeezenet1_1", tv("squeezenet1_1", num_classes=10), 64, False, None),
    ("torchvision.densenet121", tv("densenet121", num_classes=10), 64, False, None),
    ("torchvision.googlenet",
     tv("googlenet", num_classes=10, aux_logits=False, init_weights=True), 64, False, None),
    ("torchvision.efficientnet_b0", tv("efficientnet_b0", num_classes=10), 64, False, None),
    ("torchvision.regnet_y_400mf", tv("regnet_y_400mf", num_classes=10), 64, False, None),
    ("torchvision.convnext_tiny", tv("convnext_tiny", num_classes=10), 64, False, None),
    ("torchvision.swin_t", tv("swin_t", num_classes=10), 224, False, None),
    ("torchvision.vit_b_16", tv("vit_b_16", num_classes=10, image_size=64), 64, False, None),
    ("torchvision.deeplabv3_mobilenet_v3_large",
     tv_segmentation("deeplabv3_mobilenet_v3_large", num_classes=4), 64, False, None),
    ("timm.resnet10t", tm("resnet10t", num_classes=10), 64, True, None),
    ("timm.vit_tiny_patch16_224", tm("vit_tiny_patch16_224", num_classes=10, img_size=64), 64,
     True, None),
    ("timm.convnext_atto", tm("convnext_atto", num_classes=10), 64, False, None),
    ("timm.mobilenetv3_small_050", tm("mobilenetv3_small_050", num_classes=10), 64, False, None),
    ("timm.efficientnet_b0.bf16", tm("efficientnet_b0", num_classes=10), 64, False,
     torch.bfloat16),
    ("timm.resnet10t.bf16", tm("resnet10t", num_classes=10), 64, True, torch.bfloat16),
]

SELECTED = [pytest.param(*model, id=model[0]) for model in MODELS if ALL or model[3]]


def without_randomness(model):
    """Dropout and stochastic depth off: the twins draw different random
    numbers (dropout itself is tested against its own distribution)."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.p = 0.0
        elif isinstance(module, torchvision.ops.StochasticDepth):
            module.p = 0.0
        elif hasattr(module, "drop_prob"):  # timm's DropPath
            module.drop_prob = 0.0
    return model


def logits_of(output):
    """Classification logits, or a segmentation model's `out` map."""
    return output["out"] if isinstance(output, dict) else output


def loss_of(logits, target):
    if logits.dim() == 4:  # per-pixel classes
        return F.cross_entropy(logits, target[:, None, None].expand(-1, *logits.shape[2:]))
    return F.cross_entropy(logits, target)


def assert_close(actual, expected, what, tolerance, scale=0.0):
    """Close relative to the tensor's largest value, or to `scale` when that
    is larger: entries near zero differ by the order kernels add in, and a
    gradient that nearly vanishes (1e-9 beside others of 1e-1) is noise."""
    actual = actual.detach().cpu().float()
    expected = expected.detach().cpu().float()
    scale = max(expected.abs().max().item(), scale, 1e-6)
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance * scale,
                               msg=lambda message: f"{what}: {message}")


def assert_close_in_norm(actual, expected, what, tolerance):
    """For bf16 autocast: the twins round in different places (each device's
    autocast policy), so single entries may differ by more than their
    neighbours; the whole tensor must agree to `tolerance` in norm."""
    actual = actual.detach().cpu().float()
    expected = expected.detach().cpu().float()
    error = (actual - expected).norm().item()
    size = max(expected.norm().item(), 1e-6)
    assert error <= tolerance * size, f"{what}: relative error {error / size:.3g} > {tolerance}"


def run_step(model, images, target, autocast_dtype):
    """An eval forward of the fresh model, then a training step."""
    device = images.device.type
    autocast = lambda: torch.autocast(device, dtype=autocast_dtype,  # noqa: E731
                                      enabled=autocast_dtype is not None)
    model.eval()
    with torch.no_grad(), autocast():
        evaluated = logits_of(model(images))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    with autocast():
        logits = logits_of(model(images))
        loss = loss_of(logits.float(), target)
    loss.backward()
    gradients = {name: parameter.grad.clone() for name, parameter in model.named_parameters()
                 if parameter.grad is not None}
    optimizer.step()
    return logits, loss, gradients, evaluated


@pytest.mark.parametrize("name, build, size, small, autocast_dtype", SELECTED)
def test_a_training_step_and_an_eval_forward_match_the_cpu(name, build, size, small,
                                                           autocast_dtype):
    torch.manual_seed(0)
    cpu_model = without_randomness(build())
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    images = torch.randn(2, 3, size, size)
    target = torch.randint(0, 4, (2,))

    expected = run_step(cpu_model, images, target, autocast_dtype)
    actual = run_step(neuron_model, images.to("neuron"), target.to("neuron"), autocast_dtype)

    largest_gradient = max(gradient.abs().max().item() for gradient in expected[2].values())
    if autocast_dtype is None:
        compare = lambda a, e, what, floor=0.0: assert_close(a, e, what, 2e-3, floor)  # noqa: E731
    else:
        # neuron's autocast policy (CUDA's lists) is not the CPU's.
        compare = lambda a, e, what, floor=0.0: assert_close_in_norm(a, e, what, 5e-2)  # noqa: E731
    for what, a, e in (("logits", actual[0], expected[0]), ("loss", actual[1], expected[1]),
                       ("eval output", actual[3], expected[3])):
        compare(a, e, what)
    assert actual[2].keys() == expected[2].keys()
    for parameter in expected[2]:
        compare(actual[2][parameter], expected[2][parameter], f"gradient of {parameter}",
                1e-3 * largest_gradient)
    cpu_state = cpu_model.state_dict()
    for key, value in neuron_model.state_dict().items():
        if value.is_floating_point():
            # A step moves a parameter by lr x gradient: the same floor.
            compare(value, cpu_state[key], f"updated {key}", 0.05 * 1e-3 * largest_gradient)
        else:
            assert torch.equal(value.cpu(), cpu_state[key]), key


DETECTION = [
    pytest.param("fasterrcnn_mobilenet_v3_large_320_fpn", id="torchvision.fasterrcnn_mobilenet_v3_large_320_fpn"),
]


@pytest.mark.skipif(not ALL, reason="in deploy/dev.sh models (NEURON_MODELS=all)")
@pytest.mark.parametrize("name", DETECTION)
def test_detection_inference_matches_the_cpu(name):
    # Its nms and roi_align are torchvision's own operators: on neuron they
    # run on CPU copies (torchvision_compat.py gives them CPU kernels here).
    torch.manual_seed(0)
    cpu_model = torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                             num_classes=3).eval()
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    images = [torch.rand(3, 160, 160), torch.rand(3, 128, 192)]
    with torch.no_grad():
        expected = cpu_model(images)
        actual = neuron_model([image.to("neuron") for image in images])
    for got, want in zip(actual, expected):
        assert got.keys() == want.keys()
        assert len(want["boxes"]) > 0
        assert torch.equal(got["labels"].cpu(), want["labels"])
        assert_close(got["boxes"], want["boxes"], "boxes", 2e-3)
        assert_close(got["scores"], want["scores"], "scores", 2e-3)
