// The reduction of one input shape over a set of axes (ReduceSum, ReduceMean), for the kernels of
// every backend: the axes checked (in range, once each; none given: all, or with
// noop_with_empty_axes none at all), and the shapes before and after.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

struct ReducePlan {
  tensor::Shape input_shape;
  tensor::Shape kept_shape;  // the result with keepdims = 1 (reduced axes have size 1)
  tensor::Shape out_shape;   // the result as the node returns it
  int64_t count = 1;         // input elements per output element
  bool identity = false;
};

// Throws InvalidArgument naming `describe` for an axis out of range or given twice.
ReducePlan MakeReducePlan(const tensor::Shape& shape, std::vector<int64_t> axes, bool keepdims,
                          bool noop_with_empty_axes, const std::string& describe);

}  // namespace autodist::ops
