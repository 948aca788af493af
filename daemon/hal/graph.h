// The graph plan the HAL runs (torch.compile): the shared plain-data
// description (proto/neuron/rtd/graph_plan.h), named in the HAL's namespace.
#ifndef NEURON_RTD_DAEMON_HAL_GRAPH_H_
#define NEURON_RTD_DAEMON_HAL_GRAPH_H_

#include "daemon/hal/eager_op.h"
#include "neuron/rtd/graph_plan.h"

namespace neuron::rtd::hal {

using ::neuron::rtd::GraphNode;
using ::neuron::rtd::GraphOutput;
using ::neuron::rtd::GraphPlan;
using ::neuron::rtd::GraphValue;
using ::neuron::rtd::GraphValues;
using ::neuron::rtd::kNkiCallNode;
using ::neuron::rtd::kTensorReturn;
using ::neuron::rtd::NodeResultCount;
using ::neuron::rtd::OptionalGraphValues;

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_GRAPH_H_
