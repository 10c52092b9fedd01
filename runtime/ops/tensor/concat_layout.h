// Concat's inputs checked and laid out, for the kernels of every backend: one dtype, equal shapes
// outside the axis; each input's length along the axis and the joined shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ops/kernel.h"
#include "runtime/ops/node_info.h"

namespace autodist::ops {

// The node's axis; throws InvalidArgument naming the node when the attribute is missing.
int64_t ParseConcatAxis(const NodeInfo& node);

struct ConcatLayout {
  size_t axis = 0;
  std::vector<int64_t> sizes;  // each input's length along the axis
  tensor::Shape shape;         // the output's
};

// Throws InvalidArgument naming `what` for no inputs, scalars, mixed dtypes or shapes that
// differ outside the axis.
ConcatLayout ResolveConcat(const ForwardContext& ctx, int64_t axis, const std::string& what);

}  // namespace autodist::ops
