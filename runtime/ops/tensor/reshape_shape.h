// Reshape's target shape resolved against the input, for the kernels of every backend: -1 (at
// most once) is inferred from the element count, and 0 copies the input's dimension at the same
// position unless `allow_zero` (opset 14) makes it a literal zero-sized axis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

// Throws InvalidArgument naming `what` for a shape that cannot hold the input's elements.
tensor::Shape ResolveReshape(const std::vector<int64_t>& requested, const tensor::Shape& input,
                             bool allow_zero, const std::string& what);

}  // namespace autodist::ops
