"""Importing PyPI's torchvision beside the CPU torch.

PyPI's torchvision wheel is a CUDA build: its C++ library (`torchvision::nms`,
`roi_align`, ...) does not load beside the CPU build of torch, and its
`_meta_registrations` then fails at import because `torchvision::nms` and
`qnms` do not exist. Its models are pure Python and work. `import_torchvision`
defines the two schemas first when the library is missing, so that the
import succeeds, and gives the detection models the two operators they need
as CPU kernels written with torch operators: `nms` (a reference of the
greedy algorithm) and `roi_align` (torchvision's own Python version,
`torchvision.ops.roi_align._roi_align`). On `neuron` tensors torch_neuronx
runs them, as any library's own operators, on CPU copies.
"""

import sys

import torch

_NMS_SCHEMA = "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
_library = None


def _reference_nms(boxes, scores, iou_threshold):
    """Greedy non-maximum suppression: what torchvision's kernel computes."""
    order = scores.argsort(descending=True)
    boxes = boxes[order]
    x1, y1, x2, y2 = boxes.unbind(1)
    areas = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    keep = []
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    for i in range(len(order)):
        if suppressed[i]:
            continue
        keep.append(i)
        width = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp(min=0)
        height = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp(min=0)
        overlap = width * height
        iou = overlap / (areas[i] + areas - overlap)
        suppressed |= iou > iou_threshold
    return order[torch.tensor(keep, dtype=torch.long)]


def import_torchvision():
    global _library
    try:
        import torchvision
        return torchvision
    except RuntimeError as error:
        if "torchvision::nms does not exist" not in str(error):
            raise
    for name in [name for name in sys.modules if name.split(".")[0] == "torchvision"]:
        del sys.modules[name]
    _library = torch.library.Library("torchvision", "DEF")
    _library.define("nms" + _NMS_SCHEMA)
    _library.define("qnms" + _NMS_SCHEMA)
    _library.impl("nms", _reference_nms, "CPU")
    _library.define("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor")
    import torchvision
    import importlib

    roi_align_module = importlib.import_module("torchvision.ops.roi_align")
    _library.impl("roi_align", roi_align_module._roi_align, "CPU")
    # Its operators exist now: the ops call them instead of refusing.
    torchvision.extension._has_ops = lambda: True
    return torchvision
