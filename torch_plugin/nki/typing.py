"""nki.typing (and the legacy neuronxcc.nki.typing): annotations of a kernel's tensors
(`x: nt.tensor[128, 512]`, `nt.tensor[shape, dtype]`). Annotations only:
nothing is checked from them."""


class _Annotation:
    def __init__(self, name, parameters=()):
        self._name = name
        self.parameters = parameters

    def __getitem__(self, parameters):
        return _Annotation(self._name, parameters if isinstance(parameters, tuple)
                           else (parameters,))

    def __repr__(self):
        inside = ", ".join(map(repr, self.parameters))
        return f"nki.typing.{self._name}[{inside}]" if self.parameters else \
            f"nki.typing.{self._name}"


tensor = _Annotation("tensor")
scalar = _Annotation("scalar")
mutable_tensor = _Annotation("mutable_tensor")
