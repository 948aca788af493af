"""AWS's legacy NKI namespace (`neuronxcc.nki`, Neuron SDK 2.2x), served by
this package over the project's `nki`: kernels written for
`import neuronxcc.nki as nki`, `neuronxcc.nki.language as nl` and
`neuronxcc.nki.isa as nisa` run unchanged (docs/nki.md, "The legacy
neuronxcc.nki API"). Only the NKI part of AWS's compiler package is here."""
