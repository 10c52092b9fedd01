// Which axis Softmax and LogSoftmax normalize, for the kernels of every backend: opsets 13..17
// normalize along `axis` (default -1); opsets 1..12 coerce to 2-D at `axis` (default 1), the
// axes from `axis` on making one normalized row. Both are an [outer, n, inner] view, the
// normalized axis of length n and stride `inner`.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/ops/node_info.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

struct SoftmaxAxis {
  bool coerce_2d = false;
  int64_t axis = -1;
};

struct SoftmaxLayout {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

SoftmaxAxis ParseSoftmaxAxis(const NodeInfo& node);

// The view of an input of `shape`; throws InvalidArgument naming `what` for an axis out of range.
SoftmaxLayout ResolveSoftmax(const SoftmaxAxis& axis, const tensor::Shape& shape,
                             const std::string& what);

}  // namespace autodist::ops
