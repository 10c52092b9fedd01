// Where Slice's output sits inside its input (opsets 10..17), shared by the CPU and CUDA kernels:
// data[starts:ends:steps] on the listed axes (all axes 0..n-1 when `axes` is empty; steps 1 when
// empty, and they may be negative), starts and ends clamped as ONNX (and numpy) define, so
// INT64_MAX means "to the end" and INT64_MIN "before the start".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ops/kernel.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

struct SlicePlan {
  tensor::Shape input_shape;
  tensor::Shape output_shape;
  int64_t offset = 0;            // of the output's first element, in input elements
  std::vector<int64_t> strides;  // the input stride of each output axis, negative for steps < 0
  bool whole = false;            // the output is the whole input, in order: no copy needed
};

// Throws InvalidArgument naming `node` when the lists differ in length, an axis is out of range
// or repeated, or a step is 0.
SlicePlan PlanSlice(const tensor::Shape& input, const std::vector<int64_t>& starts,
                    const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                    std::vector<int64_t> steps, const std::string& node);

// Input i of a Slice node (starts, ends, axes or steps) as a 1-D integer list (read through a
// host copy when it is on a device); throws InvalidArgument naming the node and the list.
std::vector<int64_t> SliceList(const ForwardContext& ctx, size_t i, const char* name);

}  // namespace autodist::ops
