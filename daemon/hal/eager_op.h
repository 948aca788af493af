// The eager-op plan the HAL runs: the shared plain-data description
// (proto/neuron/rtd/eager_op.h), named in the HAL's namespace.
#ifndef NEURON_RTD_DAEMON_HAL_EAGER_OP_H_
#define NEURON_RTD_DAEMON_HAL_EAGER_OP_H_

#include "neuron/rtd/eager_op.h"

namespace neuron::rtd::hal {

using ::neuron::rtd::DeviceValue;
using ::neuron::rtd::EagerOpPlan;
using ::neuron::rtd::ElementBytes;
using ::neuron::rtd::GeneratorSeed;
using ::neuron::rtd::ImmediateScalar;
using ::neuron::rtd::ImmediateScalarBytes;
using ::neuron::rtd::ImmediateScalarList;
using ::neuron::rtd::NoneValue;
using ::neuron::rtd::OptionalTensorLayouts;
using ::neuron::rtd::OpValue;
using ::neuron::rtd::ScalarTypeValue;
using ::neuron::rtd::TensorExtentBytes;
using ::neuron::rtd::TensorLayout;

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_EAGER_OP_H_
