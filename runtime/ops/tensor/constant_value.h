// The value of a Constant node (its one value attribute), parsed on the host, for the Constant
// kernels of every backend and for the planner, which hands it to the node's consumers
// (NodeInfo::ConstantInput).
#pragma once

#include "runtime/ops/node_info.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

// Throws InvalidArgument naming the node unless exactly one supported value attribute is set.
tensor::Tensor ConstantValue(const NodeInfo& node);

}  // namespace autodist::ops
