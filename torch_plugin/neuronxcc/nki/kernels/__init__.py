"""neuronxcc.nki.kernels: the kernels AWS bundles inside its compiler
package are AWS's code and are not part of this simulator. Their published
sources (aws-neuron/nki-samples, aws-neuron/nki-library) import and run
here unchanged."""

raise ImportError("neuronxcc.nki.kernels (the kernels bundled with AWS's neuronx-cc) is not "
                  "part of this simulator: use the published sources of those kernels "
                  "(github.com/aws-neuron/nki-samples, github.com/aws-neuron/nki-library), "
                  "which run here unchanged (docs/nki.md)")
