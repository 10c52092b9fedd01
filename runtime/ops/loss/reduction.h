// The `reduction` attribute shared by the ONNX loss ops (none | sum | mean, default mean).
#pragma once

#include "runtime/ops/node_info.h"

namespace autodist::ops {

enum class Reduction { kNone, kSum, kMean };

// Reads `reduction`; throws InvalidArgument naming the node for any other value.
Reduction ParseReduction(const NodeInfo& node);

}  // namespace autodist::ops
