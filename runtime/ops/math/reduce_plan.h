// The reduction of one input shape over a set of axes (ReduceSum, ReduceMean), for the kernels of
// every backend: the axes checked (in range, once each; none given: all, or with
// noop_with_empty_axes none at all), and the shapes before and after.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ops/kernel.h"
#include "runtime/ops/node_info.h"
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

// ReduceSum's and ReduceMean's attributes, read once by the kernel of each backend: keepdims,
// and the axes, an attribute, or for ReduceSum from opset 13 input 1 (with
// noop_with_empty_axes). Throws InvalidArgument naming the node for an axes attribute where
// they are an input.
class ReduceAttributes {
 public:
  ReduceAttributes(const NodeInfo& node, bool sum);
  // The plan of the node's input 0 as `ctx` has it (and its axes, where they are input 1).
  ReducePlan Plan(const ForwardContext& ctx, const std::string& describe) const;

 private:
  bool keepdims_;
  bool axes_from_input_;
  bool noop_with_empty_axes_;
  std::vector<int64_t> axes_;
};

}  // namespace autodist::ops
