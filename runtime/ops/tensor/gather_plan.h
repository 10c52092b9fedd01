// What Gather reads (opsets 1..17), shared by the CPU and CUDA kernels: the axis, the indices
// checked against it and wrapped (negative ones count from the end), and the output's shape,
// data[:axis] + indices + data[axis+1:], over the [outer, dim, inner] view of the data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

struct GatherPlan {
  tensor::Shape data_shape;
  size_t axis = 0;
  std::vector<int64_t> indices;  // wrapped into [0, dim)
  tensor::Shape output_shape;
  int64_t outer = 1;  // product of the data's dims before the axis
  int64_t dim = 0;    // the axis's length
  int64_t inner = 1;  // product of the data's dims after the axis
};

// Throws InvalidArgument naming `node` for scalar data, an axis out of range, non-integer
// indices, or an index outside [-dim, dim). `indices` may be on a device (read through a copy).
GatherPlan PlanGather(const tensor::Shape& data, const tensor::Tensor& indices, int64_t axis,
                      const std::string& node);

}  // namespace autodist::ops
