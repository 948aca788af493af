"""neuronxcc.nki.typing: the same annotations as nki.typing."""

from nki.typing import mutable_tensor, scalar, tensor  # noqa: F401
